/**
 * The KV table: sets, check-and-set, locks (acquire and release, decided by machines/lock.ts) and
 * deletes, plus the writes and deletes that keep the derived indexes (key order, locks by session,
 * tombstones) in step, which session invalidation uses too.
 */
import { effectOf, hasEffect, stepLock as stepLockMachine, type LockContext, type LockEffect, type LockEvent, type Step } from '../../../machines/index.ts';
import { tombstoneBytesMax, tombstonesMax } from '../../domain/limits.ts';
import type { KvEntry } from '../../domain/types.ts';
import type { RegistryState } from '../registry-state.ts';
import { kvEntryBytes } from '../size.ts';
import { fail, ok, type Ctx, type Handler, type Handlers, type TagsOf } from './types.ts';

/** Expired lock delays are dropped once the map holds at least this many entries. */
const lockDelaysSweepAtMin = 1024;

export function sameValue(a: KvEntry, value: string | null, flags: string): boolean {
  return a.value === value && a.flags === flags;
}

/** Stores an entry at this index and keeps the derived indexes in step. */
export function writeEntry(c: Ctx, entry: KvEntry): void {
  const { state } = c;
  const previous = state.kv.get(entry.key);
  if (previous?.session !== undefined && previous.session !== entry.session) {
    state.locksBySession.get(previous.session)?.delete(entry.key);
  }
  if (entry.session !== undefined) {
    let held = state.locksBySession.get(entry.session);
    if (held === undefined) state.locksBySession.set(entry.session, (held = new Set()));
    held.add(entry.key);
  }
  entry.modifyIndex = c.index;
  if (previous === undefined) state.kvOrder.set(entry.key, undefined);
  // Entries are replaced, never changed in place: `previous` still holds what it was counted for.
  state.kvBytes += kvEntryBytes(entry) - (previous === undefined ? 0 : kvEntryBytes(previous));
  state.kv.set(entry.key, entry);
  state.tombstones.delete(entry.key);
  state.kvIndex = c.index;
  c.effects.push({ t: 'kv', key: entry.key });
}

/** A new entry for `key` at this index, keeping CreateIndex, the lock and LockIndex of `previous`. */
export function newEntry(c: Ctx, key: string, value: string | null, flags: string, previous: KvEntry | undefined): KvEntry {
  return {
    key, value, flags,
    session: previous?.session,
    lockIndex: previous?.lockIndex ?? 0,
    createIndex: previous?.createIndex ?? c.index,
    modifyIndex: c.index,
  };
}

/** Removes a key, leaving a tombstone at this index; false when there was no such key. */
export function deleteKey(c: Ctx, key: string): boolean {
  const { state } = c;
  const previous = state.kv.get(key);
  if (previous === undefined) return false;
  if (previous.session !== undefined) state.locksBySession.get(previous.session)?.delete(key);
  state.kvBytes -= kvEntryBytes(previous);
  state.kv.delete(key);
  state.kvOrder.delete(key);
  state.tombstones.delete(key);
  state.tombstones.set(key, c.index);
  foldTombstones(c);
  state.kvIndex = c.index;
  c.effects.push({ t: 'kv', key });
  return true;
}

function foldTombstones(c: Ctx): void {
  const { state } = c;
  while (state.tombstones.size > tombstonesMax || state.tombstones.bytes > tombstoneBytesMax) {
    const [oldestKey, oldestIndex] = state.tombstones.entries().next().value as [string, number];
    state.tombstones.delete(oldestKey);
    state.tombstoneFloor = Math.max(state.tombstoneFloor, oldestIndex);
  }
}

function lockContext(c: Ctx, entry: KvEntry | undefined, key: string): LockContext {
  let delayUntilMs = c.state.lockDelays.get(key) ?? 0;
  if (delayUntilMs !== 0 && delayUntilMs <= c.atMs) {
    c.state.lockDelays.delete(key);
    delayUntilMs = 0;
  }
  return { holder: entry?.session ?? null, lockIndex: entry?.lockIndex ?? 0, delayUntilMs };
}

/** Steps the lock machine of `key` from the entry's holder and the key's lock delay. */
export function stepLock(c: Ctx, entry: KvEntry | undefined, event: LockEvent, key = entry!.key): Step<LockContext, LockEffect> {
  return stepLockMachine(lockContext(c, entry, key), event);
}

const kvSet: Handler<'kv.set'> = (c, cmd) => {
  const previous = c.state.kv.get(cmd.key);
  // An identical write changes nothing and keeps ModifyIndex, as Consul does.
  if (previous !== undefined && sameValue(previous, cmd.value, cmd.flags)) return ok;
  writeEntry(c, newEntry(c, cmd.key, cmd.value, cmd.flags, previous));
  return ok;
};

const kvCas: Handler<'kv.cas'> = (c, cmd) => {
  const previous = c.state.kv.get(cmd.key);
  const matches = cmd.cas === '0' ? previous === undefined : previous !== undefined && String(previous.modifyIndex) === cmd.cas;
  if (!matches) return fail('cas-mismatch');
  return kvSet(c, { t: 'kv.set', key: cmd.key, value: cmd.value, flags: cmd.flags });
};

const kvAcquire: Handler<'kv.acquire'> = (c, cmd) => {
  if (!c.state.sessions.has(cmd.session)) return fail('invalid-session', cmd.session);
  const previous = c.state.kv.get(cmd.key);
  const next = stepLock(c, previous, { type: 'acquire', session: cmd.session, atMs: c.atMs }, cmd.key);
  const failed = effectOf(next, 'acquireFailed');
  if (failed !== undefined) return fail(failed.params.reason);
  if (hasEffect(next, 'reacquired') && previous !== undefined && sameValue(previous, cmd.value, cmd.flags)) {
    return ok;
  }
  const entry = newEntry(c, cmd.key, cmd.value, cmd.flags, previous);
  entry.session = next.context.holder ?? undefined;
  entry.lockIndex = next.context.lockIndex;
  writeEntry(c, entry);
  return ok;
};

const kvRelease: Handler<'kv.release'> = (c, cmd) => {
  const previous = c.state.kv.get(cmd.key);
  if (previous === undefined) return fail('not-locked');
  const next = stepLock(c, previous, { type: 'release', session: cmd.session, sessionValid: c.state.sessions.has(cmd.session) });
  const failed = effectOf(next, 'releaseFailed');
  if (failed !== undefined) return fail(failed.params.reason);
  // Consul replaces Value and Flags with the release request's body and flags.
  const entry = newEntry(c, cmd.key, cmd.value, cmd.flags, previous);
  entry.session = undefined;
  writeEntry(c, entry);
  return ok;
};

const kvDeleteCas: Handler<'kv.deleteCas'> = (c, cmd) => {
  const previous = c.state.kv.get(cmd.key);
  if (previous === undefined) return ok;
  if (String(previous.modifyIndex) !== cmd.cas) return fail('cas-mismatch');
  deleteKey(c, cmd.key);
  return ok;
};

const kvDeleteTree: Handler<'kv.deleteTree'> = (c, cmd) => {
  const doomed = c.state.kvList(cmd.prefix).map((e) => e.key);
  for (const key of doomed) deleteKey(c, key);
  return ok;
};

export const kvHandlers: Handlers<TagsOf<'kv'>> = {
  'kv.set': kvSet,
  'kv.cas': kvCas,
  'kv.acquire': kvAcquire,
  'kv.release': kvRelease,
  'kv.delete': (c, cmd) => { deleteKey(c, cmd.key); return ok; },
  'kv.deleteCas': kvDeleteCas,
  'kv.deleteTree': kvDeleteTree,
};

/** Drops lock delays that have run out once there are many; deterministic in the entry time. */
export function sweepLockDelays(state: RegistryState): void {
  if (state.lockDelays.size < state.lockDelaysSweepAt) return;
  for (const [key, until] of state.lockDelays) if (until <= state.atMs) state.lockDelays.delete(key);
  // Many live delays: sweep again only once the map has doubled, so sweeping stays amortised O(1).
  state.lockDelaysSweepAt = Math.max(lockDelaysSweepAtMin, state.lockDelays.size * 2);
}
