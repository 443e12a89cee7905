/**
 * Pure apply: one committed entry changes the state and yields a result and effects. Time and ids come
 * from the entry, never from a clock or a random source, so every node that applies the same log holds
 * the same state. Decisions about sessions and locks are taken by the machines (machines/); this file
 * carries out what they decide. Expected failures are results; an unknown command tag throws (a node
 * must stop rather than apply a log it does not understand).
 */
import { stepLock as stepLockMachine, stepSession, type LockContext, type LockEvent, type SessionContext, type SessionEvent } from '../../machines/index.ts';
import type {
  Command, KvAcquire, KvCas, KvDeleteCas, KvRelease, KvSet, SessionCreate,
} from '../domain/commands.ts';
import { lockDelayMsMax, tombstonesMax } from '../domain/limits.ts';
import type { KvEntry, Session } from '../domain/types.ts';
import type { LogEntry } from '../ports/log.ts';
import { catalogDeregister, catalogRegister, checkTtlExpire, checkUpdate, deregisterCheck, registerCheck, serviceDeregister, serviceReap, serviceRegister } from './apply-health.ts';
import type { Ctx } from './ctx.ts';
import type { RegistryState } from './registry-state.ts';

export type { Ctx } from './ctx.ts';

export type Failure =
  | 'lock-delay' | 'held-by-other' | 'not-holder' | 'not-locked'
  | 'invalid-session' | 'cas-mismatch' | 'session-not-found' | 'session-exists' | 'stale'
  | 'unknown-node' | 'unknown-check' | 'check-critical' | 'unknown-service';

export type Result =
  /** `index`: the entry that applied it, set by the runtime for the proposer (a write's fencing token). */
  | { ok: true; session?: Session; index?: number }
  | { ok: false; reason: Failure; detail?: string };

/** What the runtime does after an entry applied: wake watchers, (re)arm or drop TTL timers. */
export type Effect =
  | { t: 'kv'; key: string }
  | { t: 'sessions' }
  | { t: 'catalog' }
  /** A check was registered, changed, updated or removed: its runner reconciles with state. */
  | { t: 'check'; node: string; checkId: string; serviceId: string }
  /** A session was created or invalidated. */
  | { t: 'session'; id: string }
  /** A service instance was registered, changed or removed. */
  | { t: 'service'; node: string; serviceId: string }
  /** A catalog node was registered, changed or removed. */
  | { t: 'node'; node: string }
  | { t: 'ttl.arm'; id: string; renewIndex: number; ttlMs: number }
  | { t: 'ttl.cancel'; id: string };

export interface Applied {
  result: Result;
  effects: Effect[];
}

/** Expired lock delays are dropped once the map holds at least this many entries. */
const lockDelaysSweepAtMin = 1024;

const ok: Result = { ok: true };

export function apply(state: RegistryState, entry: LogEntry): Applied {
  if (entry.index !== state.index + 1) {
    throw new Error(`apply: entry ${entry.index} does not follow applied index ${state.index}`);
  }
  state.index = entry.index;
  state.atMs = Math.max(state.atMs, entry.atMs);
  const ctx: Ctx = {
    state, index: entry.index, atMs: state.atMs, effects: [],
    invalidateBoundTo: (node, checkId, event) => invalidateBoundTo(ctx, node, checkId, event),
  };
  const result = dispatch(ctx, entry.cmd);
  sweepLockDelays(state);
  return { result, effects: ctx.effects };
}


function dispatch(c: Ctx, cmd: Command): Result {
  switch (cmd.t) {
    case 'session.create': return sessionCreate(c, cmd);
    case 'session.destroy': invalidate(c, cmd.id, { type: 'destroy' }); return ok;
    case 'session.renew': return sessionRenew(c, cmd.id);
    case 'session.expire':
      return invalidate(c, cmd.id, { type: 'ttl.expired', renewIndex: cmd.renewIndex, atMs: c.atMs })
        ? ok : { ok: false, reason: 'stale' };
    case 'kv.set': return kvSet(c, cmd);
    case 'kv.cas': return kvCas(c, cmd);
    case 'kv.acquire': return kvAcquire(c, cmd);
    case 'kv.release': return kvRelease(c, cmd);
    case 'kv.delete': deleteKey(c, cmd.key); return ok;
    case 'kv.deleteCas': return kvDeleteCas(c, cmd);
    case 'kv.deleteTree': return kvDeleteTree(c, cmd.prefix);
    case 'catalog.register': return catalogRegister(c, cmd);
    case 'catalog.deregister': return catalogDeregister(c, cmd, (id) => invalidate(c, id, { type: 'node.destroyed' }));
    case 'check.register': return registerCheck(c, cmd.node, cmd.check, 'agent');
    case 'check.deregister': return deregisterCheck(c, cmd.node, cmd.checkId);
    case 'check.update': return checkUpdate(c, cmd);
    case 'check.ttlExpire': return checkTtlExpire(c, cmd);
    case 'service.register': return serviceRegister(c, cmd);
    case 'service.deregister': return serviceDeregister(c, cmd.node, cmd.serviceId);
    case 'service.reap': return serviceReap(c, cmd);
    case 'barrier': return ok;
    default: {
      const tag = (cmd as { t?: unknown }).t;
      throw new Error(`apply: unknown command tag ${JSON.stringify(tag)} at index ${c.index}; this node cannot apply this log`);
    }
  }
}

// ---------------------------------------------------------------- sessions

function sessionContext(s: Session): SessionContext {
  return { behavior: s.behavior, ttlMs: s.ttlMs, renewIndex: s.renewIndex, renewedAtMs: s.renewedAtMs };
}

function sessionCreate(c: Ctx, cmd: SessionCreate): Result {
  const { state } = c;
  if (!state.nodes.has(cmd.node)) return { ok: false, reason: 'unknown-node', detail: cmd.node };
  // Ids are chosen before the log; a repeated id (a retried proposal) must not reset a live session.
  if (state.sessions.has(cmd.id)) return { ok: false, reason: 'session-exists', detail: cmd.id };
  const bound = boundChecks(cmd);
  for (const checkId of bound) {
    const check = state.checks.get(state.checkKey(cmd.node, checkId));
    if (check === undefined) return { ok: false, reason: 'unknown-check', detail: checkId };
    if (check.status === 'critical') return { ok: false, reason: 'check-critical', detail: checkId };
  }
  const session: Session = {
    id: cmd.id, name: cmd.name, node: cmd.node, lockDelayNs: cmd.lockDelayNs, behavior: cmd.behavior,
    ttl: cmd.ttl, ttlMs: cmd.ttlMs, nodeChecks: cmd.nodeChecks, serviceChecks: cmd.serviceChecks,
    ...(cmd.checks !== undefined ? { checks: cmd.checks } : {}),
    ...(cmd.owner !== undefined ? { owner: cmd.owner } : {}),
    createIndex: c.index, modifyIndex: c.index, renewIndex: c.index, renewedAtMs: c.atMs,
  };
  const next = stepSession(sessionContext(session), { type: 'create', index: c.index, atMs: c.atMs });
  state.sessions.set(session.id, session);
  state.sessionsIndex = c.index;
  c.effects.push({ t: 'sessions' }, { t: 'session', id: session.id });
  armIfAsked(c, session, next.effects);
  return { ok: true, session };
}

/** Every check a session is bound to: NodeChecks ∪ ServiceChecks.ID ∪ legacy Checks. */
function boundChecks(s: { nodeChecks: string[]; serviceChecks: { ID: string }[] | null; checks?: string[] }): string[] {
  return [...new Set([...s.nodeChecks, ...(s.serviceChecks ?? []).map((x) => x.ID), ...(s.checks ?? [])])];
}

function sessionRenew(c: Ctx, id: string): Result {
  const session = c.state.sessions.get(id);
  if (session === undefined) return { ok: false, reason: 'session-not-found' };
  const next = stepSession(sessionContext(session), { type: 'renew', index: c.index, atMs: c.atMs });
  // Renew restarts the TTL; it is not a change of the record (ModifyIndex stays, like Consul).
  session.renewIndex = next.context.renewIndex;
  session.renewedAtMs = next.context.renewedAtMs;
  armIfAsked(c, session, next.effects);
  return { ok: true, session };
}

function armIfAsked(c: Ctx, s: Session, effects: { type: string }[]): void {
  if (effects.some((e) => e.type === 'restartTtlTimer')) {
    c.effects.push({ t: 'ttl.arm', id: s.id, renewIndex: s.renewIndex, ttlMs: s.ttlMs });
  }
}

/** Steps the session machine; when it moves to invalidated, handles the session's locks by Behavior. */
function invalidate(c: Ctx, id: string, event: SessionEvent): boolean {
  const { state } = c;
  const session = state.sessions.get(id);
  if (session === undefined) return false;
  const next = stepSession(sessionContext(session), event);
  if (next.value !== 'invalidated') return false;
  if (next.effects.some((e) => e.type === 'handleLocksByBehavior')) releaseHeldLocks(c, session);
  state.sessions.delete(id);
  state.sessionsIndex = c.index;
  c.effects.push({ t: 'sessions' }, { t: 'session', id }, { t: 'ttl.cancel', id });
  return true;
}

function invalidateBoundTo(c: Ctx, node: string, checkId: string, event: SessionEvent): void {
  for (const s of c.state.sessionsOfNode(node)) {
    if (boundChecks(s).includes(checkId)) invalidate(c, s.id, event);
  }
}

function releaseHeldLocks(c: Ctx, session: Session): void {
  const held = c.state.locksBySession.get(session.id);
  if (held === undefined) return;
  const lockDelayMs = Math.min(session.lockDelayNs / 1e6, lockDelayMsMax);
  for (const key of [...held].sort()) {
    const entry = c.state.kv.get(key)!;
    const next = stepLock(c, entry, { type: 'holder.invalidated', behavior: session.behavior, lockDelayMs, atMs: c.atMs });
    if (next.context.delayUntilMs > c.atMs) c.state.lockDelays.set(key, next.context.delayUntilMs);
    if (next.effects.some((e) => e.type === 'deletedByInvalidation')) {
      deleteKey(c, key);
    } else {
      writeEntry(c, { ...entry, session: undefined });
    }
  }
  c.state.locksBySession.delete(session.id);
}

// ---------------------------------------------------------------- KV

function sameValue(a: KvEntry, value: string | null, flags: string): boolean {
  return a.value === value && a.flags === flags;
}

/** Stores an entry at this index and keeps the derived indexes in step. */
function writeEntry(c: Ctx, entry: KvEntry): void {
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
  state.kv.set(entry.key, entry);
  state.tombstones.delete(entry.key);
  state.kvIndex = c.index;
  c.effects.push({ t: 'kv', key: entry.key });
}

function newEntry(c: Ctx, key: string, value: string | null, flags: string, previous: KvEntry | undefined): KvEntry {
  return {
    key, value, flags,
    session: previous?.session,
    lockIndex: previous?.lockIndex ?? 0,
    createIndex: previous?.createIndex ?? c.index,
    modifyIndex: c.index,
  };
}

function kvSet(c: Ctx, cmd: KvSet): Result {
  const previous = c.state.kv.get(cmd.key);
  // An identical write changes nothing and keeps ModifyIndex, as Consul does.
  if (previous !== undefined && sameValue(previous, cmd.value, cmd.flags)) return ok;
  writeEntry(c, newEntry(c, cmd.key, cmd.value, cmd.flags, previous));
  return ok;
}

function kvCas(c: Ctx, cmd: KvCas): Result {
  const previous = c.state.kv.get(cmd.key);
  const matches = cmd.cas === '0' ? previous === undefined : previous !== undefined && String(previous.modifyIndex) === cmd.cas;
  if (!matches) return { ok: false, reason: 'cas-mismatch' };
  return kvSet(c, { t: 'kv.set', key: cmd.key, value: cmd.value, flags: cmd.flags });
}

function lockContext(c: Ctx, entry: KvEntry | undefined, key: string): LockContext {
  let delayUntilMs = c.state.lockDelays.get(key) ?? 0;
  if (delayUntilMs !== 0 && delayUntilMs <= c.atMs) {
    c.state.lockDelays.delete(key);
    delayUntilMs = 0;
  }
  return { holder: entry?.session ?? null, lockIndex: entry?.lockIndex ?? 0, delayUntilMs };
}

function stepLock(c: Ctx, entry: KvEntry | undefined, event: LockEvent, key = entry!.key) {
  return stepLockMachine(lockContext(c, entry, key), event);
}

function failureOf(effects: { type: string; params?: unknown }[]): Failure | undefined {
  const failed = effects.find((e) => e.type === 'acquireFailed' || e.type === 'releaseFailed');
  return failed === undefined ? undefined : (failed.params as { reason: Failure }).reason;
}

function kvAcquire(c: Ctx, cmd: KvAcquire): Result {
  if (!c.state.sessions.has(cmd.session)) return { ok: false, reason: 'invalid-session', detail: cmd.session };
  const previous = c.state.kv.get(cmd.key);
  const next = stepLock(c, previous, { type: 'acquire', session: cmd.session, atMs: c.atMs }, cmd.key);
  const failure = failureOf(next.effects);
  if (failure !== undefined) return { ok: false, reason: failure };
  if (next.effects.some((e) => e.type === 'reacquired') && previous !== undefined && sameValue(previous, cmd.value, cmd.flags)) {
    return ok;
  }
  const entry = newEntry(c, cmd.key, cmd.value, cmd.flags, previous);
  entry.session = next.context.holder ?? undefined;
  entry.lockIndex = next.context.lockIndex;
  writeEntry(c, entry);
  return ok;
}

function kvRelease(c: Ctx, cmd: KvRelease): Result {
  const previous = c.state.kv.get(cmd.key);
  if (previous === undefined) return { ok: false, reason: 'not-locked' };
  const next = stepLock(c, previous, { type: 'release', session: cmd.session, sessionValid: c.state.sessions.has(cmd.session) });
  const failure = failureOf(next.effects);
  if (failure !== undefined) return { ok: false, reason: failure };
  // Consul replaces Value and Flags with the release request's body and flags.
  const entry = newEntry(c, cmd.key, cmd.value, cmd.flags, previous);
  entry.session = undefined;
  writeEntry(c, entry);
  return ok;
}

function deleteKey(c: Ctx, key: string): boolean {
  const { state } = c;
  const previous = state.kv.get(key);
  if (previous === undefined) return false;
  if (previous.session !== undefined) state.locksBySession.get(previous.session)?.delete(key);
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
  while (state.tombstones.size > tombstonesMax) {
    const [oldestKey, oldestIndex] = state.tombstones.entries().next().value as [string, number];
    state.tombstones.delete(oldestKey);
    state.tombstoneFloor = Math.max(state.tombstoneFloor, oldestIndex);
  }
}

function kvDeleteCas(c: Ctx, cmd: KvDeleteCas): Result {
  const previous = c.state.kv.get(cmd.key);
  if (previous === undefined) return ok;
  if (String(previous.modifyIndex) !== cmd.cas) return { ok: false, reason: 'cas-mismatch' };
  deleteKey(c, cmd.key);
  return ok;
}

function kvDeleteTree(c: Ctx, prefix: string): Result {
  const doomed = c.state.kvList(prefix).map((e) => e.key);
  for (const key of doomed) deleteKey(c, key);
  return ok;
}

/** Drops lock delays that have run out once there are many; deterministic in the entry time. */
function sweepLockDelays(state: RegistryState): void {
  if (state.lockDelays.size < state.lockDelaysSweepAt) return;
  for (const [key, until] of state.lockDelays) if (until <= state.atMs) state.lockDelays.delete(key);
  // Many live delays: sweep again only once the map has doubled, so sweeping stays amortised O(1).
  state.lockDelaysSweepAt = Math.max(lockDelaysSweepAtMin, state.lockDelays.size * 2);
}
