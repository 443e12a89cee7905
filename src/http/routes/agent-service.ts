/**
 * One of this agent's services: its definition (`/v1/agent/service/<id>`, Go's `Agent().Service()`), with a
 * content hash a client blocks on, and its health as a load balancer reads it
 * (`/v1/agent/health/service/id/<id>` and `/name/<name>`): the status code says passing (200), warning
 * (429) or anything worse (503), the body the aggregated status with the service and its checks.
 * As Consul's agent, these answer from the services registered with this agent and carry no index headers.
 * A check is shown by the rule of the catalog and health reads (catalog-read.ts checkVisible); the status
 * counts every check, shown or not (see instanceHealth).
 */
import { createHash } from 'node:crypto';
import { allowed } from '../../auth/index.ts';
import { blockingJitterDivisor } from '../../domain/limits.ts';
import { RegistryError } from '../../domain/errors.ts';
import type { HealthCheck, ServiceInstance } from '../../domain/types.ts';
import { intervalMs } from '../../ports/clock.ts';
import type { ApiContext } from '../api.ts';
import { parseWaitMs } from '../query.ts';
import type { Reply } from '../reply.ts';
import { param, type Request } from '../request.ts';
import type { Route } from '../router.ts';
import { catalogAcl, checkVisible } from './catalog-read.ts';
import { renderAgentService, renderCheck } from './catalog-render.ts';

/** The instance `id` of this agent's node, when the caller may read its service (otherwise it is not told of it). */
function localService(req: Request, api: ApiContext, id: string): ServiceInstance | undefined {
  const st = api.runtime.state;
  const s = st.services.get(st.serviceKey(api.nodeName, id));
  if (s === undefined || (req.identity !== undefined && !allowed(req.identity, { resource: 'service', name: s.service, access: 'read' }))) return undefined;
  return s;
}

/**
 * Consul's agent service record with its ContentHash: a hash of the record without the hash and the
 * datacenter, which changes whenever the definition does (a client compares it, nothing more).
 */
function hashedRecord(s: ServiceInstance, dc: string): { record: Record<string, unknown>; hash: string } {
  const { Datacenter: _dc, ...hashed } = renderAgentService(s, dc);
  const hash = createHash('sha256').update(JSON.stringify(hashed)).digest('hex').slice(0, 16);
  return { record: { ...hashed, ContentHash: hash, Datacenter: dc }, hash };
}

/**
 * GET /v1/agent/service/<id>. With `?hash=` equal to the service's current ContentHash it waits (up to
 * `wait`, 5 min by default, at most 10 min, plus up to a sixteenth of it) until the definition changes,
 * as Consul's hash-based blocking does; a service deregistered meanwhile answers 404.
 */
async function agentService(req: Request, api: ApiContext): Promise<Reply> {
  if (req.rest === '') throw new RegistryError('serviceIdMissing');
  const id = req.rest;
  const waitMs = parseWaitMs(req);
  const read = () => {
    const s = localService(req, api, id);
    if (s === undefined) throw new RegistryError('agentServiceUnknown', { id });
    return hashedRecord(s, api.datacenter);
  };
  let current = read();
  const hash = param(req, 'hash') ?? '';
  const deadline = intervalMs() + waitMs + Math.random() * (waitMs / blockingJitterDivisor);
  const runtime = api.runtime;
  while (hash !== '' && current.hash === hash && !req.signal.aborted && !runtime.isStopping) {
    const left = deadline - intervalMs();
    if (left <= 0) break;
    const seen = runtime.state.catalogIndex;
    await runtime.waitForIndex({ kind: 'catalog' }, () => runtime.state.catalogIndex, seen, left, req.signal);
    current = read();
  }
  return { t: 'json', value: current.record, headers: [['X-Consul-ContentHash', current.hash]] };
}

/** This agent's checks of the instance and of its node (not the node's gossip check, which is the catalog's), as the agent knows them. */
function localChecksOf(api: ApiContext, id: string): HealthCheck[] {
  return api.runtime.state.checksOfNode(api.nodeName)
    .filter((c) => c.source === 'agent' && (c.serviceId === id || c.serviceId === ''))
    .map((c) => api.runtime.checkOwner.latest(c));
}

/**
 * Consul's aggregated status of a service's checks: `maintenance` when a maintenance check is among them,
 * else the worst of their statuses (critical, warning, passing), passing when there are none.
 */
export function aggregatedStatus(checks: readonly HealthCheck[]): string {
  const seen = new Set<string>();
  for (const c of checks) {
    if (c.checkId === '_node_maintenance' || c.checkId.startsWith('_service_maintenance:')) return 'maintenance';
    seen.add(c.status);
  }
  return ['critical', 'warning'].find((s) => seen.has(s)) ?? 'passing';
}

const statusCodes: Record<string, number> = { passing: 200, warning: 429 };

/**
 * One instance's health: its status code, its aggregated status and the body Consul gives it. The body
 * lists only the checks the caller may read (node read on the node, and service read for a service check,
 * as /v1/health/node and /checks have it), but the status is the instance's real health, hidden checks
 * counted: a load balancer holding a service-read token must not route to an instance whose node is
 * failing or in maintenance. That tells such a token how the node's checks stand at their worst (the
 * status), never which checks they are nor what they say, as Consul's agent counts them too.
 */
function instanceHealth(req: Request, api: ApiContext, s: ServiceInstance): { code: number; status: string; body: Record<string, unknown> } {
  const checks = localChecksOf(api, s.id);
  const status = aggregatedStatus(checks);
  const acl = catalogAcl(req);
  const shown = checks.filter((c) => checkVisible(acl, c)).map((c) => renderCheck(c, true));
  return { code: statusCodes[status] ?? 503, status, body: { AggregatedStatus: status, Service: renderAgentService(s, api.datacenter), Checks: shown } };
}

/** `?format=text`, or an `Accept` that starts with text/plain (Consul's rule; `format` decides when given). */
function wantsText(req: Request): boolean {
  const format = param(req, 'format');
  if (format !== undefined && format !== '') return format === 'text';
  return (req.headers.get('accept') ?? '').startsWith('text/plain');
}

function answer(req: Request, code: number, status: string, body: unknown): Reply {
  return wantsText(req) ? { t: 'text', body: status, contentType: 'text/plain', status: code } : { t: 'json', value: body, status: code };
}

/** GET /v1/agent/health/service/id/<id>. An unknown ID is 404: in the consul dialect with Consul's body, critical. */
function healthById(req: Request, api: ApiContext): Reply {
  if (req.rest === '') throw new RegistryError('agentHealthIdMissing');
  const s = localService(req, api, req.rest);
  if (s === undefined) {
    if (api.dialect === 'seed') throw new RegistryError('agentHealthIdUnknown', { id: req.rest });
    const reason = `ServiceId ${req.rest} not found`;
    return answer(req, 404, reason, { AggregatedStatus: 'critical', Service: null, Checks: null });
  }
  const h = instanceHealth(req, api, s);
  return answer(req, h.code, h.status, h.body);
}

/**
 * GET /v1/agent/health/service/name/<name>: every instance of the name on this agent, and the worst of
 * their statuses (passing 200 < warning 429 < anything else 503). None is 404 (consul dialect: `[]`).
 */
function healthByName(req: Request, api: ApiContext): Reply {
  if (req.rest === '') throw new RegistryError('agentHealthNameMissing');
  const name = req.rest;
  const instances = api.runtime.state.servicesOfNode(api.nodeName).filter((s) => s.service === name).map((s) => instanceHealth(req, api, s));
  if (instances.length === 0) {
    if (api.dialect === 'seed') throw new RegistryError('agentHealthNameUnknown', { name });
    return answer(req, 404, `ServiceName ${name} Not Found`, []);
  }
  const worst = instances.reduce((a, b) => (b.code > a.code ? b : a));
  return answer(req, worst.code, worst.status, instances.map((h) => h.body));
}

export const agentServiceRoutes: Route<ApiContext>[] = [
  { path: '/v1/agent/service/', prefix: true, methods: { GET: agentService }, query: ['hash', 'wait'] },
  { path: '/v1/agent/health/service/id/', prefix: true, methods: { GET: healthById }, query: ['format'], produces: { GET: ['application/json', 'text/plain'] } },
  { path: '/v1/agent/health/service/name/', prefix: true, methods: { GET: healthByName }, query: ['format'], produces: { GET: ['application/json', 'text/plain'] } },
];
