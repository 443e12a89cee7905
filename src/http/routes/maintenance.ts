/**
 * Maintenance mode, as Consul's agent has it: `PUT /v1/agent/maintenance` puts this agent's node in
 * maintenance and `PUT /v1/agent/service/maintenance/<id>` one of its services, by registering a critical
 * check (`_node_maintenance`, `_service_maintenance:<id>`) without a probe (kind "", as Consul's has no
 * Type), which nothing runs and nothing expires. Being an ordinary critical check it takes the node or instance out of `?passing`
 * answers and gRPC serving, shows on the stream and invalidates the sessions that list it; it is in the
 * log, so it survives a restart and reaches every node of a cluster. `enable=false` removes it.
 */
import type { CheckRegistration } from '../../domain/commands.ts';
import { RegistryError } from '../../domain/errors.ts';
import { nodeMaintenanceCheckId, serviceMaintenanceCheckId } from '../../domain/maintenance.ts';
import { passiveDefinition } from '../../state/index.ts';
import type { ApiContext } from '../api.ts';
import { requireAccess } from '../auth-gate.ts';
import { requireOwnerWrite } from './check-acl.ts';
import { checkDatacenter } from '../query.ts';
import type { Reply } from '../reply.ts';
import { param, type Request } from '../request.ts';
import { noBody } from '../negotiation.ts';
import type { Route } from '../router.ts';

const nodeDefaultReason = 'Maintenance mode is enabled for this node, but no reason was provided. This is a default message.';
const serviceDefaultReason = 'Maintenance mode is enabled for this service, but no reason was provided. This is a default message.';

const goTrue = new Set(['1', 't', 'T', 'TRUE', 'true', 'True']);
const goFalse = new Set(['0', 'f', 'F', 'FALSE', 'false', 'False']);

/** `?enable`, required, read as Go's strconv.ParseBool reads it. */
function enableOf(req: Request): boolean {
  if (!req.query.has('enable')) throw new RegistryError('maintenanceEnableMissing');
  const value = param(req, 'enable') ?? '';
  if (goTrue.has(value)) return true;
  if (goFalse.has(value)) return false;
  throw new RegistryError('maintenanceEnableInvalid', { value });
}

function maintenanceCheck(checkId: string, name: string, notes: string, serviceId: string): CheckRegistration {
  return { checkId, name, notes, status: 'critical', output: '', serviceId, type: '', definition: passiveDefinition };
}

/**
 * Enables or disables maintenance of `checkId`. Enabling again keeps the check and its first reason,
 * as Consul does; disabling what is not enabled is a no-op.
 */
async function setMaintenance(api: ApiContext, enable: boolean, check: CheckRegistration): Promise<Reply> {
  const present = api.runtime.state.checkOf(api.nodeName, check.checkId) !== undefined;
  if (enable && !present) await api.runtime.propose({ t: 'check.register', node: api.nodeName, check });
  // A failed deregistration can only mean the check went away meanwhile: the wanted outcome.
  if (!enable && present) await api.runtime.propose({ t: 'check.deregister', node: api.nodeName, checkId: check.checkId });
  return { t: 'empty' };
}

/** Node maintenance: needs write on this agent's node (Consul: `node:write`). */
async function nodeMaintenance(req: Request, api: ApiContext): Promise<Reply> {
  checkDatacenter(req, api);
  const enable = enableOf(req);
  requireAccess(req, 'node', api.nodeName, 'write');
  const reason = param(req, 'reason') || nodeDefaultReason;
  return setMaintenance(api, enable, maintenanceCheck(nodeMaintenanceCheckId, 'Node Maintenance Mode', reason, ''));
}

/** Service maintenance: the service must be registered on this agent; needs write on its name (check-acl.ts). */
async function serviceMaintenance(req: Request, api: ApiContext): Promise<Reply> {
  checkDatacenter(req, api);
  const id = req.rest;
  if (id === '') throw new RegistryError('serviceIdMissing');
  const enable = enableOf(req);
  const st = api.runtime.state;
  const service = st.services.get(st.serviceKey(api.nodeName, id));
  if (service === undefined) throw new RegistryError('serviceNotFound', { id });
  requireOwnerWrite(req, api, id, () => new RegistryError('serviceNotFound', { id }));
  const reason = param(req, 'reason') || serviceDefaultReason;
  return setMaintenance(api, enable, maintenanceCheck(serviceMaintenanceCheckId(id), 'Service Maintenance Mode', reason, id));
}

export const maintenanceRoutes: Route<ApiContext>[] = [
  { path: '/v1/agent/maintenance', prefix: false, methods: { PUT: nodeMaintenance }, query: ['dc', 'enable', 'reason'], produces: { PUT: noBody } },
  { path: '/v1/agent/service/maintenance/', prefix: true, methods: { PUT: serviceMaintenance }, query: ['dc', 'enable', 'reason'], produces: { PUT: noBody } },
];
