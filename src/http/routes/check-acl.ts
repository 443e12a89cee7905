/**
 * Who may change a check of this agent. A check's status decides the health of what it belongs to — a
 * service (a critical check takes the instance out of `?passing` answers and invalidates the sessions
 * bound to it) or, for a check of no service, the node itself — so writing it takes, besides write on
 * the check's own id (the route's rule), write on what it belongs to: the service's name, or the node
 * (as Consul asks `service:write` or `node:write`). That holds for every way a check changes: registered
 * on its own or inside a service, replacing a check of the same id, TTL updates and deregistration.
 *
 * The node's own gossip check (`gossipHealth`, Consul's `serfHealth`) is the agent's: no client
 * registers a check of that id. An alias check also takes read on what it watches (requireAliasRead).
 *
 * A name the caller may not read is not told: a refusal over a service the token cannot see answers as
 * an unknown id would, or (a check of it replaced) without the service's name.
 */
import { gossipCheckId } from '../../domain/limits.ts';
import { RegistryError } from '../../domain/errors.ts';
import type { CheckDefinition, HealthCheck } from '../../domain/types.ts';
import type { ApiContext } from '../api.ts';
import { requireAccess } from '../auth-gate.ts';
import type { Request } from '../request.ts';
import { allowed, allowedPrefix } from '../../auth/index.ts';

/** Check ids a client may not register: the node's gossip check, in Roster's name and in Consul's. */
const agentOwnCheckIds = new Set([gossipCheckId, 'serfHealth']);

export function refuseAgentOwnCheckId(checkId: string): void {
  if (agentOwnCheckIds.has(checkId)) throw new RegistryError('checkIdReserved', { checkId });
}

/**
 * Write on what a check of this node belongs to: the service of `serviceId` (an instance on this node),
 * or the node when `serviceId` is empty. A service the caller may not read is answered as unknown.
 */
export function requireOwnerWrite(req: Request, api: ApiContext, serviceId: string, unknown: () => RegistryError): void {
  requireOwnerWriteOn(req, api, api.nodeName, serviceId, unknown);
}

/** requireOwnerWrite for a check of any node (the catalog's writes name theirs). */
export function requireOwnerWriteOn(req: Request, api: ApiContext, node: string, serviceId: string, unknown: () => RegistryError): void {
  if (req.identity === undefined) return;
  if (serviceId === '') {
    requireAccess(req, 'node', node, 'write');
    return;
  }
  const st = api.runtime.state;
  const service = st.services.get(st.serviceKey(node, serviceId))?.service;
  if (service === undefined) return;
  if (!allowed(req.identity, { resource: 'service', name: service, access: 'read' })) throw unknown();
  requireAccess(req, 'service', service, 'write');
}

/**
 * Registering `checkId` for the service `serviceId` ('' for the node) on its own: write on the check, on
 * what it joins, and on what the check it replaces belonged to.
 */
export function requireCheckRegistration(req: Request, api: ApiContext, checkId: string, serviceId: string): void {
  requireAccess(req, 'check', checkId, 'write');
  requireOwnerWrite(req, api, serviceId, () => new RegistryError('serviceNotFound', { id: serviceId }));
  requireReplacedOwnerWrite(req, api, checkId, serviceId);
}

/**
 * A check registered inside the service `serviceId` is the service's (the service's write covers it), but
 * one that replaces a check of another service or of the node needs write on that owner too.
 */
export function requireReplacedOwnerWrite(req: Request, api: ApiContext, checkId: string, serviceId: string): void {
  refuseAgentOwnCheckId(checkId);
  const replaced: HealthCheck | undefined = api.runtime.state.checkOf(api.nodeName, checkId);
  if (replaced !== undefined && replaced.serviceId !== serviceId) {
    requireOwnerWrite(req, api, replaced.serviceId, () => new RegistryError('checkOwnerDenied', { checkId }));
  }
}

/**
 * An alias check shows the health of what it watches, and its checks' output, to whoever may read the alias
 * (consul-compat.md §4 Alias; Consul runs its query with the registering token, whose ACLs filter it):
 * registering one takes read on what it watches, as a health read of it would: the node (`AliasNode`, else
 * this agent's) and the service of the `AliasService` instance. An instance that is not registered has no
 * name to judge: it is refused as a denied one is, so the answer does not tell whether it exists, unless the
 * token may read every service.
 */
export function requireAliasRead(req: Request, api: ApiContext, definition: CheckDefinition): void {
  const identity = req.identity;
  if (identity === undefined || (definition.aliasService === undefined && definition.aliasNode === undefined)) return;
  const node = definition.aliasNode || api.nodeName;
  requireAccess(req, 'node', node, 'read');
  const serviceId = definition.aliasService ?? '';
  if (serviceId === '') return;
  const st = api.runtime.state;
  const service = st.services.get(st.serviceKey(node, serviceId))?.service;
  const readable = service === undefined
    ? allowedPrefix(identity, { resource: 'service', name: '', access: 'read' })
    : allowed(identity, { resource: 'service', name: service, access: 'read' });
  if (!readable) throw new RegistryError('aliasServiceDenied', { serviceId, node });
}
