/**
 * `state.restore`: the whole state replaced by a snapshot's (PUT /v1/snapshot). Every node applies it at
 * the same index, so all of them hold the restored state from there on, and a replay of the log rebuilds it.
 *
 * Indexes keep growing: the restored state sits at the restore entry's index, and so do every table index
 * and every record's ModifyIndex (keys, sessions, checks, services, nodes) and service name's index; CreateIndex stays as saved unless
 * it is above the restore's (a snapshot of a longer log restored into a shorter one), LockIndex stays as saved. So every blocking query wakes (its index is below the restore's), a check-and-set or a
 * fencing token taken before the restore no longer matches, and a later write's index is above all of them.
 * Tombstones are folded into the floor at the restore's index: a key the restore removed reads at that index.
 * Sessions and TTL checks start their TTL afresh from the restore entry's time; locks their sessions hold stay held.
 */
import type { StateRestore } from '../../domain/commands.ts';
import type { RegistryState } from '../registry-state.ts';
import { checkedSnapshotData, loadSnapshotData, type SnapshotData } from '../snapshot.ts';
import { ok, type Ctx, type Effect, type Handlers } from './types.ts';

const restore = (c: Ctx, cmd: StateRestore) => {
  const s = c.state;
  const before = touchedBy(s);
  const names = [...s.serviceIndexes.keys()];
  loadSnapshotData(s, ownRecords(checkedSnapshotData(cmd.data)));
  renumber(s, c.index, c.atMs);
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

/** Puts the restored state at the restore entry (see the file comment). */
function renumber(s: RegistryState, index: number, atMs: number): void {
  s.index = index;
  s.atMs = Math.max(s.atMs, atMs);
  s.kvIndex = index; s.sessionsIndex = index; s.catalogIndex = index;
  s.tombstones.clear();
  s.tombstoneFloor = index;
  for (const e of s.kv.values()) renumbered(e, index);
  for (const x of s.sessions.values()) {
    renumbered(x, index);
    x.renewIndex = index;
    x.renewedAtMs = s.atMs;
  }
  for (const x of s.checks.values()) {
    renumbered(x, index);
    x.ttlUpdateIndex = index;
    if (x.status === 'critical') x.criticalSinceMs = s.atMs;
  }
  for (const x of s.services.values()) renumbered(x, index);
  for (const name of s.serviceIndexes.keys()) s.serviceIndexes.set(name, index);
  for (const x of s.nodes.values()) renumbered(x, index);
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
