/**
 * What a caller may do with a session once authentication is on. Session rules name nodes, as Consul's
 * `session "<node prefix>"` does, never session ids: create needs write on the new session's node,
 * info and lists show only sessions on nodes the caller may read, renew and destroy need write on the
 * session's node (and answer a session on a node the caller may not read as an unknown one). Renew, destroy, and acquire or release with a session also need its owner (the
 * identity that created it) or an operator (acl.ts mayUseSession). Without authentication all pass.
 *
 * The checks read the session from local state before proposing. That is sound because a session's id
 * (chosen by the agent) is never reused and its node and owner never change: a session found here is the
 * one the command will act on, or gone by then (the command then fails as for an unknown session). A
 * session missing after the barrier cannot appear later under that id: its id is known to clients only
 * once its create has applied, so before the barrier.
 */
import { allowed, allowedSomewhere, mayUseSession, type Access, type Identity } from '../auth/index.ts';
import { RegistryError } from '../domain/errors.ts';
import type { Session } from '../domain/types.ts';
import type { ApiContext } from './api.ts';
import { denied, requireAccess } from './auth-gate.ts';
import type { Request } from './request.ts';

/** Throws 403 unless the caller holds `access` on sessions of `node`. */
export function requireSessionNode(req: Request, node: string, access: Access): void {
  requireAccess(req, 'session', node, access);
}

/** Whether the caller may see the session (read on its node): lists and info leave the others out. */
export function maySeeSession(req: Request, s: Session): boolean {
  return req.identity === undefined || allowed(req.identity, { resource: 'session', name: s.node, access: 'read' });
}

/**
 * Checks that the caller may use session `id` as its owner does: write on its node when `nodeAccess` is
 * given (renew, destroy), and ownership or the operator rule. An id this node does not know yet (a
 * session created through another node of a cluster) is looked up again after a barrier; one that still
 * does not exist passes, and the command answers as for an unknown session.
 *
 * With `nodeAccess`, a session on a node the caller may not read is one it cannot see (as info and the
 * lists leave it out): false, and the caller answers as for an unknown session, without proposing
 * anything, so the answer names no node and does not tell the session exists. True otherwise.
 */
export async function requireSessionUse(req: Request, api: ApiContext, id: string, nodeAccess?: Access): Promise<boolean> {
  const identity = req.identity;
  if (identity === undefined) return true;
  let session = api.runtime.state.sessions.get(id);
  if (session === undefined) {
    // A barrier is a log entry: a caller who could never pass the node check gets no write out of it.
    if (nodeAccess !== undefined && !allowedSomewhere(identity, 'session', nodeAccess)) {
      throw denied({ resource: 'session', name: '', access: nodeAccess });
    }
    await api.runtime.barrier();
    session = api.runtime.state.sessions.get(id);
    if (session === undefined) return true;
  }
  if (nodeAccess !== undefined) {
    if (!maySeeSession(req, session)) return false;
    requireSessionNode(req, session.node, nodeAccess);
  }
  if (!mayUseSession(identity, session)) throw notOwner(identity, session);
  return true;
}

function notOwner(identity: Identity, s: Session): RegistryError {
  return new RegistryError('sessionNotOwned', { session: s.id, subject: identity.subject });
}
