/**
 * The health half of the API: agent checks and services (the local agent), catalog services and nodes,
 * and the health queries (consul-compat.md §1.3–1.6). Reads are blocking queries on the catalog index
 * and take `filter`; writes validate with src/http/definitions.ts and go through the log.
 */
import type { Command } from '../../domain/commands.ts';
import { RegistryError } from '../../domain/errors.ts';
import type { CatalogNode, CheckStatus, HealthCheck, ServiceInstance } from '../../domain/types.ts';
import { agentServiceSchema, catalogServiceSchema, checkSchema, healthEntrySchema, nodeSchema, type Schema } from '../../filter/index.ts';
import { filterOf } from '../filtering.ts';
import type { RegistryState, Result } from '../../state/index.ts';
import type { ApiContext } from '../api.ts';
import { requireAccess } from '../auth-gate.ts';
import { requireCheckRegistration, requireOwnerWrite, requireReplacedOwnerWrite } from './check-acl.ts';
import { jsonBody, jsonObject, field } from '../body.ts';
import { checkOutputBytesMax } from '../../domain/limits.ts';
import { parseCheck, parseService } from '../definitions.ts';
import { awaitQuery, checkDatacenter, parseQueryOptions, queryOptionParameters } from '../query.ts';
import { json, type Reply } from '../reply.ts';
import { param, readableUnder, type Request } from "../request.ts";
import type { Route } from '../router.ts';

// ---------------------------------------------------------------- rendering

export function renderCheck(c: HealthCheck, agentView = false): Record<string, unknown> {
  return {
    Node: c.node, CheckID: c.checkId, Name: c.name, Status: c.status, Notes: c.notes, Output: c.output,
    ServiceID: c.serviceId, ServiceName: c.serviceName, ServiceTags: c.serviceTags, Type: c.type,
    Interval: c.definition.interval, Timeout: c.definition.timeout, ExposedPort: 0, Definition: {},
    CreateIndex: agentView ? 0 : c.createIndex, ModifyIndex: agentView ? 0 : c.modifyIndex,
  };
}

/** A node's tagged addresses as registered; a node registered without them shows its address as lan and wan. */
function taggedAddressesOf(n: CatalogNode | undefined, address: string): Record<string, string> {
  return n?.taggedAddresses ?? { lan: address, lan_ipv4: address, wan: address, wan_ipv4: address };
}

function renderNode(n: CatalogNode, dc: string): Record<string, unknown> {
  return {
    ID: n.id, Node: n.node, Address: n.address, Datacenter: dc,
    TaggedAddresses: taggedAddressesOf(n, n.address),
    Meta: n.meta, CreateIndex: n.createIndex, ModifyIndex: n.modifyIndex,
  };
}

function renderAgentService(s: ServiceInstance, dc: string): Record<string, unknown> {
  return {
    ...(s.kind !== '' ? { Kind: s.kind } : {}),
    ID: s.id, Service: s.service, Tags: s.tags, Meta: s.meta, Port: s.port, Address: s.address,
    ...(Object.keys(s.taggedAddresses).length > 0 ? { TaggedAddresses: s.taggedAddresses } : {}),
    Weights: s.weights, EnableTagOverride: s.enableTagOverride, Datacenter: dc,
  };
}

function renderHealthService(s: ServiceInstance): Record<string, unknown> {
  return {
    ...(s.kind !== '' ? { Kind: s.kind } : {}),
    ID: s.id, Service: s.service, Tags: s.tags, Address: s.address,
    ...(Object.keys(s.taggedAddresses).length > 0 ? { TaggedAddresses: s.taggedAddresses } : {}),
    Meta: Object.keys(s.meta).length > 0 ? s.meta : null,
    ...(s.port !== 0 ? { Port: s.port } : {}),
    Weights: s.weights, EnableTagOverride: s.enableTagOverride,
    Proxy: { MeshGateway: {}, Expose: {} }, Connect: {}, PeerName: '',
    CreateIndex: s.createIndex, ModifyIndex: s.modifyIndex,
  };
}

/** Checks of some instances by node, then service ID (`''`: the node's own), each read once from the state's index. */
export type InstanceChecks = Map<string, Map<string, HealthCheck[]>>;

export function checksOfInstances(st: RegistryState, instances: Iterable<{ node: string; id: string }>): InstanceChecks {
  const out: InstanceChecks = new Map();
  for (const s of instances) {
    let ofNode = out.get(s.node);
    if (ofNode === undefined) out.set(s.node, (ofNode = new Map([['', st.checksOfService(s.node, '')]])));
    if (!ofNode.has(s.id)) ofNode.set(s.id, st.checksOfService(s.node, s.id));
  }
  return out;
}

/** Checks of one node as the state orders them: by CheckID without regard to case. */
function byCheckId(a: HealthCheck, b: HealthCheck): number {
  const x = a.checkId.toLowerCase(), y = b.checkId.toLowerCase();
  return x < y ? -1 : x > y ? 1 : a.checkId < b.checkId ? -1 : a.checkId > b.checkId ? 1 : 0;
}

/**
 * One entry of /v1/health/service: the instance, its node, and its checks with the node's own checks
 * (the gossip check among them), so a failed node's services are never reported passing. Undefined when
 * the node is unknown or, with `passingOnly`, when any of those checks is not passing. `checks` must
 * hold the instance's (callers rendering many instances read them for all at once).
 */
export function healthEntry(st: RegistryState, s: ServiceInstance, dc: string, passingOnly: boolean,
  checks: InstanceChecks = checksOfInstances(st, [s])): Record<string, unknown> | undefined {
  const node = st.nodes.get(s.node);
  if (node === undefined) return undefined;
  const byService = checks.get(s.node);
  const own = [...byService?.get('') ?? [], ...(s.id === '' ? [] : byService?.get(s.id) ?? [])].sort(byCheckId);
  if (passingOnly && own.some((c) => c.status !== 'passing')) return undefined;
  return { Node: renderNode(node, dc), Service: renderHealthService(s), Checks: own.map((c) => renderCheck(c)) };
}

function renderCatalogService(s: ServiceInstance, n: CatalogNode | undefined, dc: string): Record<string, unknown> {
  const address = n?.address ?? '';
  return {
    ID: n?.id ?? '', Node: s.node, Address: address, Datacenter: dc,
    TaggedAddresses: taggedAddressesOf(n, address),
    NodeMeta: n?.meta ?? {}, ServiceKind: s.kind, ServiceID: s.id, ServiceName: s.service, ServiceTags: s.tags,
    ServiceAddress: s.address, ServiceWeights: s.weights, ServiceMeta: s.meta, ServicePort: s.port,
    ServiceSocketPath: '', ServiceEnableTagOverride: s.enableTagOverride,
    ServiceProxy: { MeshGateway: {}, Expose: {} }, ServiceConnect: {}, ServiceLocality: null,
    CreateIndex: s.createIndex, ModifyIndex: s.modifyIndex,
  };
}

// ---------------------------------------------------------------- shared helpers

/** The path's trailing parameter, or the error naming what is missing. */
function required(req: Request, missing: 'checkIdMissing' | 'serviceIdMissing' | 'serviceMissing' | 'nodeMissing' | 'checkStateMissing'): string {
  if (req.rest === '') throw new RegistryError(missing);
  return req.rest;
}

const everything = (_name: string) => true;

/**
 * What of the catalog the caller may read, as Consul filters its lists: nodes by node read, service
 * instances by service read on their name (everything without authentication, or with a token that may
 * read every name). The route's own rule is checked first, by the gate.
 */
function catalogAcl(req: Request): { node: (name: string) => boolean; service: (name: string) => boolean } {
  return { node: readableUnder(req, 'node', '') ?? everything, service: readableUnder(req, 'service', '') ?? everything };
}

/** A check is shown when its node may be read, and for a service check its service too (Consul's rule). */
function checkVisible(acl: ReturnType<typeof catalogAcl>, c: HealthCheck): boolean {
  return acl.node(c.node) && (c.serviceId === '' || acl.service(c.serviceName));
}

/** A catalog read: query options, filter compiled first, wait on the catalog index, then render. */
function catalogRead(schema: Schema | undefined, read: (req: Request, api: ApiContext, keep: (v: unknown) => boolean) => unknown) {
  return async (req: Request, api: ApiContext): Promise<Reply> => {
    const q = parseQueryOptions(req, api);
    const keep = schema ? filterOf(req, schema) : () => true;
    // Read once now: it validates the path before any wait, and is the answer when nothing waits.
    const now = read(req, api, keep);
    if (q.minIndex === 0 && !q.consistent) return json(now, { index: api.runtime.state.catalogIndex, consistency: q.consistency });
    await awaitQuery(req, api, q, { kind: 'catalog' }, () => api.runtime.state.catalogIndex);
    return json(read(req, api, keep), { index: api.runtime.state.catalogIndex, consistency: q.consistency });
  };
}

/** This agent's checks as it knows them: with an output held back by check_update_interval, as Consul's agent shows it. */
function localChecks(api: ApiContext): HealthCheck[] {
  return api.runtime.state.checksOfNode(api.nodeName).filter((c) => c.source === 'agent').map((c) => api.runtime.checkOwner.latest(c));
}

function failureError(r: Extract<Result, { ok: false }>): RegistryError {
  if (r.reason === 'unknown-service') return new RegistryError('checkServiceNotFound', { id: r.detail ?? '' });
  if (r.reason === 'unknown-check') return new RegistryError('checkNotFound', { id: r.detail ?? '' });
  return new RegistryError('registrationFailed', { reason: r.reason });
}

async function proposeOk(api: ApiContext, cmd: Command): Promise<void> {
  const result = await api.runtime.propose(cmd);
  if (!result.ok) throw failureError(result);
}

// ---------------------------------------------------------------- agent checks

function agentChecks(req: Request, api: ApiContext): Reply {
  checkDatacenter(req, api);
  const keep = filterOf(req, checkSchema);
  const readable = readableUnder(req, 'check', '') ?? everything;
  const rendered = localChecks(api).filter((c) => readable(c.checkId)).map((c) => [c.checkId, renderCheck(c, true)] as const);
  return json(Object.fromEntries(rendered.filter(([, check]) => keep(check))));
}

async function checkRegister(req: Request, api: ApiContext): Promise<Reply> {
  checkDatacenter(req, api);
  const reg = parseCheck(jsonBody(req) ?? {}, { scriptsAllowed: api.enableScriptChecks, origin: 'remote' });
  requireCheckRegistration(req, api, reg.checkId, reg.serviceId);
  await proposeOk(api, { t: 'check.register', node: api.nodeName, check: reg });
  return { t: 'empty' };
}

function localCheck(req: Request, api: ApiContext): HealthCheck {
  const id = required(req, 'checkIdMissing');
  const check = api.runtime.state.checkOf(api.nodeName, id);
  if (check === undefined || check.source !== 'agent') throw new RegistryError('checkNotFound', { id });
  // Its status decides its service's health, or the node's (check-acl.ts).
  requireOwnerWrite(req, api, check.serviceId, () => new RegistryError('checkNotFound', { id }));
  return check;
}

async function checkDeregister(req: Request, api: ApiContext): Promise<Reply> {
  checkDatacenter(req, api);
  const check = localCheck(req, api);
  await proposeOk(api, { t: 'check.deregister', node: api.nodeName, checkId: check.checkId });
  return { t: 'empty' };
}

/** TTL updates keep the first 4 KB of the output, marking what was cut (consul-compat.md §4 Output cap). */
function capTtlOutput(output: string, maxBytes: number): string {
  const bytes = Buffer.from(output);
  if (bytes.length <= maxBytes) return output;
  return `${bytes.subarray(0, maxBytes).toString()} ... (captured ${maxBytes} of ${bytes.length} bytes)`;
}

async function ttlUpdate(req: Request, api: ApiContext, status: CheckStatus, output: string): Promise<Reply> {
  checkDatacenter(req, api);
  const check = localCheck(req, api);
  if (check.type !== 'ttl') {
    throw new RegistryError('checkNotTtl', { checkId: check.checkId, type: check.type });
  }
  await proposeOk(api, {
    t: 'check.update', node: api.nodeName, checkId: check.checkId, generation: check.generation, via: 'ttl', status,
    output: capTtlOutput(output, check.definition.outputMaxSize || checkOutputBytesMax),
  });
  return { t: 'empty' };
}

const ttlSetter = (status: CheckStatus) => (req: Request, api: ApiContext) => ttlUpdate(req, api, status, param(req, 'note') ?? '');

async function checkUpdate(req: Request, api: ApiContext): Promise<Reply> {
  const body = jsonObject(req, 'agent.checkUpdate');
  const status = field(body, 'Status').value;
  const output = field(body, 'Output').value;
  if (typeof status !== 'string' || !['passing', 'warning', 'critical'].includes(status)) {
    throw new RegistryError('checkStatusInvalid', { status });
  }
  if (output !== undefined && output !== null && typeof output !== 'string') {
    throw new RegistryError('checkOutputNotString');
  }
  return ttlUpdate(req, api, status as CheckStatus, (output as string | undefined) ?? '');
}

// ---------------------------------------------------------------- agent services

function agentServices(req: Request, api: ApiContext): Reply {
  checkDatacenter(req, api);
  const keep = filterOf(req, agentServiceSchema);
  const { service } = catalogAcl(req);
  const rendered = api.runtime.state.servicesOfNode(api.nodeName).filter((s) => service(s.service)).map((s) => [s.id, renderAgentService(s, api.datacenter)] as const);
  return json(Object.fromEntries(rendered.filter(([, service]) => keep(service))));
}

async function serviceRegister(req: Request, api: ApiContext): Promise<Reply> {
  checkDatacenter(req, api);
  const replace = param(req, 'replace-existing-checks');
  const parsed = parseService(jsonBody(req) ?? {}, { scriptsAllowed: api.enableScriptChecks, origin: 'remote' });
  requireAccess(req, 'service', parsed.service.service, 'write');
  // Registering over an instance of another name replaces that service: the caller must be able to write it too.
  const st = api.runtime.state;
  const replaced = st.services.get(st.serviceKey(api.nodeName, parsed.service.id))?.service;
  if (replaced !== undefined && replaced !== parsed.service.service) requireAccess(req, 'service', replaced, 'write');
  for (const check of parsed.checks) requireReplacedOwnerWrite(req, api, check.checkId, parsed.service.id);
  await proposeOk(api, {
    t: 'service.register', node: api.nodeName, service: parsed.service, checks: parsed.checks,
    replaceExistingChecks: replace !== undefined && (replace === '' || replace === 'true'),
  });
  return { t: 'empty' };
}

async function serviceDeregister(req: Request, api: ApiContext): Promise<Reply> {
  checkDatacenter(req, api);
  const id = required(req, 'serviceIdMissing');
  const instance = api.runtime.state.services.get(api.runtime.state.serviceKey(api.nodeName, id));
  if (instance === undefined) throw new RegistryError('serviceNotFound', { id });
  requireOwnerWrite(req, api, id, () => new RegistryError('serviceNotFound', { id }));
  await proposeOk(api, { t: 'service.deregister', node: api.nodeName, serviceId: id });
  return { t: 'empty' };
}

// ---------------------------------------------------------------- catalog

const catalogServices = catalogRead(undefined, (req, api) => {
  const tags = new Map<string, Set<string>>();
  const { service } = catalogAcl(req);
  // Consul lists the servers themselves as the service "consul"; its clients expect it there.
  if (api.dialect === 'consul' && service('consul')) tags.set('consul', new Set());
  for (const s of api.runtime.state.services.values()) {
    if (!service(s.service)) continue;
    const set = tags.get(s.service) ?? new Set<string>();
    for (const t of s.tags) set.add(t);
    tags.set(s.service, set);
  }
  return Object.fromEntries([...tags.keys()].sort().map((name) => [name, [...tags.get(name)!].sort()]));
});

function hasTags(s: ServiceInstance, req: Request): boolean {
  return req.query.getAll('tag').every((t) => s.tags.includes(t));
}

const catalogService = catalogRead(catalogServiceSchema, (req, api, keep) => {
  const name = required(req, 'serviceMissing');
  const st = api.runtime.state;
  const { node } = catalogAcl(req);
  return st.instancesOf(name).filter((s) => hasTags(s, req) && node(s.node))
    .map((s) => renderCatalogService(s, st.nodes.get(s.node), api.datacenter)).filter(keep);
});

const catalogNodes = catalogRead(nodeSchema, (req, api, keep) => {
  const { node } = catalogAcl(req);
  return [...api.runtime.state.nodes.values()].filter((n) => node(n.node)).sort((a, b) => (a.node < b.node ? -1 : a.node > b.node ? 1 : 0))
    .map((n) => renderNode(n, api.datacenter)).filter(keep);
});

const catalogNode = catalogRead(undefined, (req, api) => {
  const name = required(req, 'nodeMissing');
  const st = api.runtime.state;
  const node = st.nodes.get(name);
  if (node === undefined) return null;
  const { service } = catalogAcl(req);
  const services = Object.fromEntries(st.servicesOfNode(name).filter((s) => service(s.service)).map((s) => [s.id, { ...renderAgentService(s, api.datacenter), CreateIndex: s.createIndex, ModifyIndex: s.modifyIndex }]));
  return { Node: renderNode(node, api.datacenter), Services: services };
});

// ---------------------------------------------------------------- health

const healthNode = catalogRead(checkSchema, (req, api, keep) => {
  const name = required(req, 'nodeMissing');
  const acl = catalogAcl(req);
  return api.runtime.state.checksOfNode(name).filter((c) => checkVisible(acl, c)).map((c) => renderCheck(c)).filter(keep);
});

const healthChecks = catalogRead(checkSchema, (req, api, keep) => {
  const name = required(req, 'serviceMissing');
  const acl = catalogAcl(req);
  return api.runtime.state.allChecks().filter((c) => c.serviceName === name && c.serviceId !== '' && checkVisible(acl, c)).map((c) => renderCheck(c)).filter(keep);
});

function parsePassing(req: Request): boolean {
  if (!req.query.has('passing')) return false;
  const v = param(req, 'passing') ?? '';
  if (v === '' || ['1', 't', 'T', 'TRUE', 'true', 'True'].includes(v)) return true;
  if (['0', 'f', 'F', 'FALSE', 'false', 'False'].includes(v)) return false;
  throw new RegistryError('passingInvalid', { value: v });
}

const healthService = catalogRead(healthEntrySchema, (req, api, keep) => {
  const name = required(req, 'serviceMissing');
  const passingOnly = parsePassing(req);
  const st = api.runtime.state;
  const entries: Record<string, unknown>[] = [];
  const { node } = catalogAcl(req);
  const instances = st.instancesOf(name).filter((s) => hasTags(s, req) && node(s.node));
  const checks = checksOfInstances(st, instances);
  for (const s of instances) {
    const entry = healthEntry(st, s, api.datacenter, passingOnly, checks);
    if (entry !== undefined && keep(entry)) entries.push(entry);
  }
  return entries;
});

const states = new Set(['any', 'passing', 'warning', 'critical', 'fail']);
const consulStates = new Set(['any', 'passing', 'warning', 'critical']);

const healthState = catalogRead(checkSchema, (req, api, keep) => {
  const state = required(req, 'checkStateMissing');
  // Consul does not validate the state: an unknown one, "fail" included, matches nothing there.
  if (api.dialect === 'consul' && !consulStates.has(state)) return [];
  if (!states.has(state)) {
    throw new RegistryError('checkStateUnknown', { state });
  }
  // "fail" returns the failing checks: the registry's word for critical.
  const wanted = state === 'fail' ? 'critical' : state;
  const acl = catalogAcl(req);
  return api.runtime.state.allChecks().filter((c) => (wanted === 'any' || c.status === wanted) && checkVisible(acl, c)).map((c) => renderCheck(c)).filter(keep);
});

/** A catalog read's parameters: the query options and `filter`. */
const readParameters = [...queryOptionParameters, 'filter'];
/** Also `near` and `node-meta`, which Consul takes on these reads: accepted, not applied (one datacenter, no coordinates). */
const nodeReadParameters = [...readParameters, 'near', 'node-meta'];

export const healthRoutes: Route<ApiContext>[] = [
  { path: '/v1/agent/checks', prefix: false, methods: { GET: agentChecks }, query: ['dc', 'filter'] },
  { path: '/v1/agent/check/register', prefix: false, methods: { PUT: checkRegister }, query: ['dc'] },
  { path: '/v1/agent/check/deregister/', prefix: true, methods: { PUT: checkDeregister }, query: ['dc'] },
  { path: '/v1/agent/check/pass/', prefix: true, methods: { PUT: ttlSetter('passing') }, query: ['dc', 'note'] },
  { path: '/v1/agent/check/warn/', prefix: true, methods: { PUT: ttlSetter('warning') }, query: ['dc', 'note'] },
  { path: '/v1/agent/check/fail/', prefix: true, methods: { PUT: ttlSetter('critical') }, query: ['dc', 'note'] },
  { path: '/v1/agent/check/update/', prefix: true, methods: { PUT: checkUpdate }, query: ['dc'] },
  { path: '/v1/agent/services', prefix: false, methods: { GET: agentServices }, query: ['dc', 'filter'] },
  { path: '/v1/agent/service/register', prefix: false, methods: { PUT: serviceRegister }, query: ['dc', 'replace-existing-checks'] },
  { path: '/v1/agent/service/deregister/', prefix: true, methods: { PUT: serviceDeregister }, query: ['dc'] },
  { path: '/v1/catalog/services', prefix: false, methods: { GET: catalogServices }, query: readParameters },
  { path: '/v1/catalog/service/', prefix: true, methods: { GET: catalogService }, query: [...nodeReadParameters, 'tag'] },
  { path: '/v1/catalog/nodes', prefix: false, methods: { GET: catalogNodes }, query: nodeReadParameters },
  { path: '/v1/catalog/node/', prefix: true, methods: { GET: catalogNode }, query: readParameters },
  { path: '/v1/health/node/', prefix: true, methods: { GET: healthNode }, query: readParameters },
  { path: '/v1/health/checks/', prefix: true, methods: { GET: healthChecks }, query: nodeReadParameters },
  { path: '/v1/health/service/', prefix: true, methods: { GET: healthService }, query: [...nodeReadParameters, 'tag', 'passing'] },
  { path: '/v1/health/state/', prefix: true, methods: { GET: healthState }, query: nodeReadParameters },
];


