/**
 * `state.restore`: the whole state replaced by a snapshot's (PUT /v1/snapshot). Every node applies it at
 * the same index, so all of them hold the restored state from there on, and a replay of the log rebuilds it.
 *
 * Indexes keep growing: the restored state sits at the restore entry's index, and so do every table index
 * and every record's ModifyIndex (keys, sessions, checks, services, nodes) and service name's index; CreateIndex stays as saved unless
 * it is above the restore's (a snapshot of a longer log restored into a shorter one), LockIndex stays as saved. So every blocking query wakes (its index is below the restore's), a check-and-set or a
 * fencing token taken before the restore no longer matches, and a later write's index is above all of them.
 * Tombstones are folded into the floor at the restore's index: a key the restore removed reads at that index.
 *
 * Times are re-based the same way, to the restore entry's time, never taken from the file: the file's `atMs` is
 * the time of the log that wrote it, on the clock of the node that stamped it (an hour ahead, a year behind, or
 * edited). Taken as the state's time, an `atMs` ahead of this log would hold the state's time there, since
 * apply keeps it from going back, and every lock delay measured on it would last until this log's entries
 * caught up. So the state keeps this log's time; sessions and TTL checks start their TTL afresh from it; a
 * critical check is critical since it; locks their sessions hold stay held; and a lock delay keeps what was
 * left of it at the file's time, at most the longest lock delay (lockDelayMsMax), counted from it.
 */
import type { StateRestore } from '../../domain/commands.ts';
import type { RegistryState } from '../registry-state.ts';
import { lockDelayMsMax } from '../../domain/limits.ts';
import { checkedSnapshotData, loadSnapshotData, type SnapshotData } from '../snapshot.ts';
import { ok, type Ctx, type Effect, type Handlers } from './types.ts';

const restore = (c: Ctx, cmd: StateRestore) => {
  const s = c.state;
  const before = touchedBy(s);
  const names = [...s.serviceIndexes.keys()];
  const data = checkedSnapshotData(cmd.data);
  loadSnapshotData(s, ownRecords(data));
  renumber(s, c.index);
  rebase(s, data.atMs, c.atMs);
  const after = touchedBy(s);
  c.effects.push({ t: 'sessions' }, { t: 'catalog' });
  for (const key of new Set([...before.keys, ...after.keys])) c.effects.push({ t: 'kv', key });
  for (const id of before.sessions) c.effects.push({ t: 'ttl.cancel', id }, { t: 'session', id });
  for (const x of s.sessions.values()) {
    c.effects.push({ t: 'session', id: x.id });
    if (x.ttlMs > 0) c.effects.push({ t: 'ttl.arm', id: x.id, renewIndex: x.renewIndex, ttlMs: x.ttlMs });
  }
  for (const effect of [before.other, after.other].flat()) c.effects.push(effect);
  for (const name of new Set([...names, ...s.serviceIndexes.keys()])) c.effects.push({ t: 'serviceIndex', name });
  return ok;
};

/**
 * The snapshot with records of its own: renumbering changes them, and the command's data may be shared
 * (the in-memory log hands one entry to several nodes). Keys are copied by loadSnapshotData.
 */
function ownRecords(d: SnapshotData): SnapshotData {
  return {
    ...d, sessions: d.sessions.map((x) => ({ ...x })), checks: d.checks.map((x) => ({ ...x })),
    services: d.services.map((x) => ({ ...x })), nodes: d.nodes.map((x) => ({ ...x })),
  };
}

/** Puts the restored state at the restore entry's index (see the file comment). */
function renumber(s: RegistryState, index: number): void {
  s.index = index;
  s.kvIndex = index; s.sessionsIndex = index; s.catalogIndex = index;
  s.tombstones.clear();
  s.tombstoneFloor = index;
  for (const e of s.kv.values()) renumbered(e, index);
  for (const x of s.sessions.values()) {
    renumbered(x, index);
    x.renewIndex = index;
  }
  for (const x of s.checks.values()) {
    renumbered(x, index);
    x.ttlUpdateIndex = index;
  }
  for (const x of s.services.values()) renumbered(x, index);
  for (const name of s.serviceIndexes.keys()) s.serviceIndexes.set(name, index);
  for (const x of s.nodes.values()) renumbered(x, index);
}

/**
 * Puts the restored state at the restore entry's time `atMs` (this log's time, from the entry alone), from
 * the file's time `fileAtMs` (see the file comment).
 */
function rebase(s: RegistryState, fileAtMs: number, atMs: number): void {
  s.atMs = atMs;
  for (const x of s.sessions.values()) x.renewedAtMs = atMs;
  for (const x of s.checks.values()) x.criticalSinceMs = x.status === 'critical' ? atMs : 0;
  for (const [key, untilMs] of [...s.lockDelays]) {
    const leftMs = Math.min(untilMs - fileAtMs, lockDelayMsMax);
    if (leftMs > 0) s.lockDelays.set(key, atMs + leftMs);
    else s.lockDelays.delete(key);
  }
}

function renumbered(x: { createIndex: number; modifyIndex: number }, index: number): void {
  x.modifyIndex = index;
  if (x.createIndex > index) x.createIndex = index;
}

/** What a state holds that watchers and owners follow: its keys, its sessions, its checks, services and nodes. */
function touchedBy(s: RegistryState): { keys: string[]; sessions: string[]; other: Effect[] } {
  const other: Effect[] = [];
  for (const x of s.checks.values()) other.push({ t: 'check', node: x.node, checkId: x.checkId, serviceId: x.serviceId });
  for (const x of s.services.values()) other.push({ t: 'service', node: x.node, serviceId: x.id });
  for (const x of s.nodes.values()) other.push({ t: 'node', node: x.node });
  return { keys: [...s.kv.keys()], sessions: [...s.sessions.keys()], other };
}

export const restoreHandlers: Handlers<'state.restore'> = { 'state.restore': restore };
