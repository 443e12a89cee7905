/**
 * Who may change the catalog through `/v1/catalog/register` and `/v1/catalog/deregister`. Node write on
 * the body's `Node` (the route's rule, checked by the handler) covers the node and its own checks; what
 * else a catalog write changes takes what the agent endpoints ask of the same change (check-acl.ts):
 * * a check in a registration: check write on its id, and, when it replaces a check of a service, write on
 *   that service (a catalog check is always the node's);
 * * a check deregistered by id: check write on its id and write on what it belongs to, the service or the node;
 * * a node deregistered, or renamed away by a registration that takes its ID: write on every service it
 *   holds, as `/v1/agent/service/deregister` asks (their checks go with them; the node's own are the node's).
 *
 * A service the token may not read is not named: the refusal says only that the check belongs to a
 * service, or that the node holds one, the token may not write.
 */
import { allowed } from '../../auth/index.ts';
import { RegistryError } from '../../domain/errors.ts';
import type { ApiContext } from '../api.ts';
import { requireAccess } from '../auth-gate.ts';
import type { Request } from '../request.ts';
import { requireOwnerWriteOn } from './check-acl.ts';

/** A check of `node` registered (or replaced) through the catalog. */
export function requireCatalogCheckWrite(req: Request, api: ApiContext, node: string, checkId: string): void {
  if (req.identity === undefined) return;
  requireAccess(req, 'check', checkId, 'write');
  const replaced = api.runtime.state.checkOf(node, checkId);
  if (replaced !== undefined && replaced.serviceId !== '') {
    requireOwnerWriteOn(req, api, node, replaced.serviceId, () => new RegistryError('checkOwnerDenied', { checkId }));
  }
}

/** A check of `node` deregistered by id through the catalog (one that is not there changes nothing). */
export function requireCatalogCheckRemoval(req: Request, api: ApiContext, node: string, checkId: string): void {
  if (req.identity === undefined) return;
  requireAccess(req, 'check', checkId, 'write');
  const check = api.runtime.state.checkOf(node, checkId);
  if (check !== undefined) requireOwnerWriteOn(req, api, node, check.serviceId, () => new RegistryError('checkOwnerDenied', { checkId }));
}

/** `node` removed with all it holds: write on each of its services, none named that the token may not read. */
export function requireNodeRemoval(req: Request, api: ApiContext, node: string): void {
  const identity = req.identity;
  if (identity === undefined) return;
  const names = [...new Set(api.runtime.state.servicesOfNode(node).map((s) => s.service))];
  if (names.some((name) => !allowed(identity, { resource: 'service', name, access: 'read' }))) {
    throw new RegistryError('nodeServiceDenied', { node });
  }
  for (const name of names) requireAccess(req, 'service', name, 'write');
}
