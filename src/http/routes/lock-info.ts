/**
 * What the dashboard shows of a session's timer and of the queues of queued acquires (`?acquire&wait=`),
 * which no Consul endpoint carries (Roster's extensions, JSON in both dialects):
 *
 * * `GET /v1/session/timer/<id>`: when the session was last created or renewed (`RenewedAt`, the log
 *   entry's time), when its TTL runs out (`RenewBy`: renew before it), the latest it is invalidated
 *   unrenewed (`InvalidateBy`, 2 × TTL), `RemainingMs` until `RenewBy` on this agent's clock (negative
 *   once past; null without a TTL), and the keys it waits on in this agent's queues with its place in
 *   each (`WaitingOn`, 1 = next; keys the token may not read are left out), and the keys it holds with
 *   their LockIndex (`Holds`, by key; keys the token may not read left out: the dashboard's session page
 *   lists them when the stream refuses the token its view of every held key). Needs session read on the
 *   session's node, as `/v1/session/info` does.
 * * `GET /v1/lock/queue/<key>`: the acquires waiting on the key at this agent, next first, each with its
 *   session and that session's name and node. Needs key read on the key.
 *
 * Each agent queues only the acquires sent to it: in a cluster, other agents' waiters are not listed.
 */
import { allowed } from '../../auth/index.ts';
import { RegistryError } from '../../domain/errors.ts';
import type { ApiContext } from '../api.ts';
import { denied } from '../auth-gate.ts';
import { json, type Reply } from '../reply.ts';
import type { Request } from '../request.ts';
import type { Route } from '../router.ts';
import { maySeeSession } from '../session-access.ts';

function mayReadKey(req: Request, key: string): boolean {
  return req.identity === undefined || allowed(req.identity, { resource: 'key', name: key, access: 'read' });
}

function sessionTimer(req: Request, api: ApiContext): Reply {
  const id = req.rest;
  if (id === '') throw new RegistryError('sessionIdMissing');
  const s = api.runtime.state.sessions.get(id);
  if (s === undefined) throw new RegistryError('sessionNotFound', { id });
  // A session the caller may not see is unknown to it, as session/info leaves it out.
  if (!maySeeSession(req, s)) throw new RegistryError('sessionNotFound', { id });
  const queues = api.runtime.lockQueues;
  const waitingOn = queues.queuedKeys().filter((key) => mayReadKey(req, key)).sort()
    .flatMap((key) => {
      const at = queues.queued(key).findIndex((w) => w.session === id);
      return at < 0 ? [] : [{ Key: key, Position: at + 1 }];
    });
  const st = api.runtime.state;
  const holds = [...st.locksBySession.get(id) ?? []].filter((key) => mayReadKey(req, key)).sort()
    .map((key) => ({ Key: key, LockIndex: st.kv.get(key)?.lockIndex ?? 0 }));
  const ttl = s.ttlMs > 0;
  const iso = (ms: number) => new Date(ms).toISOString();
  return json({
    ID: s.id, TTL: s.ttl, RenewedAt: iso(s.renewedAtMs),
    RenewBy: ttl ? iso(s.renewedAtMs + s.ttlMs) : null,
    InvalidateBy: ttl ? iso(s.renewedAtMs + 2 * s.ttlMs) : null,
    RemainingMs: ttl ? s.renewedAtMs + s.ttlMs - Date.now() : null,
    WaitingOn: waitingOn,
    Holds: holds,
  });
}

function lockQueue(req: Request, api: ApiContext): Reply {
  const key = req.rest;
  if (key === '') throw new RegistryError('kvKeyNotFound', { key });
  if (!mayReadKey(req, key)) throw denied({ resource: 'key', name: key, access: 'read' });
  const sessions = api.runtime.state.sessions;
  return json({
    Key: key,
    Waiters: api.runtime.lockQueues.queued(key).map((w) => {
      // The id is what the key's entry shows its holder by; a session's name and node only to whoever may see it.
      const s = sessions.get(w.session);
      const shown = s !== undefined && maySeeSession(req, s);
      return { Session: w.session, Name: shown ? s.name : '', Node: shown ? s.node : '' };
    }),
  });
}

export const lockInfoRoutes: Route<ApiContext>[] = [
  { path: '/v1/session/timer/', prefix: true, methods: { GET: sessionTimer } },
  { path: '/v1/lock/queue/', prefix: true, rest: 'path', methods: { GET: lockQueue } },
];
