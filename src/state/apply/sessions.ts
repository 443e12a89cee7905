/**
 * The sessions table: create, renew, destroy and TTL expiry, decided by machines/session.ts. Here too
 * is invalidation, however it comes (destroy, TTL, a bound check turning critical or removed, the node
 * removed): the machine steps to invalidated and the session's locks are handled by its Behavior.
 */
import { hasEffect, stepSession, type SessionContext, type SessionEffect, type SessionEvent, type Step } from '../../../machines/index.ts';
import { lockDelayMsMax } from '../../domain/limits.ts';
import type { Session } from '../../domain/types.ts';
import { deleteKey, stepLock, writeEntry } from './kv.ts';
import { fail, ok, type Ctx, type Handler, type Handlers, type TagsOf } from './types.ts';

function sessionContext(s: Session): SessionContext {
  return { behavior: s.behavior, ttlMs: s.ttlMs, renewIndex: s.renewIndex, renewedAtMs: s.renewedAtMs };
}

/** Every check a session is bound to: NodeChecks ∪ ServiceChecks.ID ∪ legacy Checks. */
function boundChecks(s: { nodeChecks: string[]; serviceChecks: { ID: string }[] | null; checks?: string[] }): string[] {
  return [...new Set([...s.nodeChecks, ...(s.serviceChecks ?? []).map((x) => x.ID), ...(s.checks ?? [])])];
}

function armIfAsked(c: Ctx, s: Session, next: Step<SessionContext, SessionEffect>): void {
  if (hasEffect(next, 'restartTtlTimer')) {
    c.effects.push({ t: 'ttl.arm', id: s.id, renewIndex: s.renewIndex, ttlMs: s.ttlMs });
  }
}

const sessionCreate: Handler<'session.create'> = (c, cmd) => {
  const { state } = c;
  if (!state.nodes.has(cmd.node)) return fail('unknown-node', cmd.node);
  // Ids are chosen before the log; a repeated id (a retried proposal) must not reset a live session.
  if (state.sessions.has(cmd.id)) return fail('session-exists', cmd.id);
  for (const checkId of boundChecks(cmd)) {
    const check = state.checks.get(state.checkKey(cmd.node, checkId));
    if (check === undefined) return fail('unknown-check', checkId);
    if (check.status === 'critical') return fail('check-critical', checkId);
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
  armIfAsked(c, session, next);
  return { ok: true, session };
};

const sessionRenew: Handler<'session.renew'> = (c, cmd) => {
  const session = c.state.sessions.get(cmd.id);
  if (session === undefined) return fail('session-not-found');
  const next = stepSession(sessionContext(session), { type: 'renew', index: c.index, atMs: c.atMs });
  // Renew restarts the TTL; it is not a change of the record (ModifyIndex stays, like Consul).
  session.renewIndex = next.context.renewIndex;
  session.renewedAtMs = next.context.renewedAtMs;
  armIfAsked(c, session, next);
  return { ok: true, session };
};

export const sessionHandlers: Handlers<TagsOf<'session'>> = {
  'session.create': sessionCreate,
  'session.destroy': (c, cmd) => { invalidate(c, cmd.id, { type: 'destroy' }); return ok; },
  'session.renew': sessionRenew,
  'session.expire': (c, cmd) =>
    invalidate(c, cmd.id, { type: 'ttl.expired', renewIndex: cmd.renewIndex, atMs: c.atMs }) ? ok : fail('stale'),
};

/**
 * Steps the session machine; when it moves to invalidated, handles the session's locks by Behavior
 * and removes the session. False when there is no such session or the event does not invalidate it.
 */
export function invalidate(c: Ctx, id: string, event: SessionEvent): boolean {
  const { state } = c;
  const session = state.sessions.get(id);
  if (session === undefined) return false;
  const next = stepSession(sessionContext(session), event);
  if (next.value !== 'invalidated') return false;
  if (hasEffect(next, 'handleLocksByBehavior')) releaseHeldLocks(c, session);
  state.sessions.delete(id);
  state.sessionsIndex = c.index;
  c.effects.push({ t: 'sessions' }, { t: 'session', id }, { t: 'ttl.cancel', id });
  return true;
}

/** Invalidates the sessions of `node` bound to `checkId` (their locks handled by Behavior). */
export function invalidateBoundTo(c: Ctx, node: string, checkId: string, event: SessionEvent): void {
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
    if (hasEffect(next, 'deletedByInvalidation')) {
      deleteKey(c, key);
    } else {
      writeEntry(c, { ...entry, session: undefined });
    }
  }
  c.state.locksBySession.delete(session.id);
}
