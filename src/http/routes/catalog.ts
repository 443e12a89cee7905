/**
 * The catalog and health reads (consul-compat.md §1.5–1.6): services, service nodes, nodes and a node's
 * services (as a map, and as a list); a node's, a service's and a state's checks, a service's health
 * entries. Each is a blocking query, on the catalog index or, for one service's reads, on that service's
 * (catalog-read.ts serviceWatched), and takes `filter`; a caller sees only what it may read. The consul dialect adds the `consul` service's instances (consul-service.ts).
 */
import { RegistryError } from '../../domain/errors.ts';
import type { ServiceInstance } from '../../domain/types.ts';
import { agentServiceSchema, catalogServiceSchema, checkSchema, healthEntrySchema, nodeSchema } from '../../filter/index.ts';
import type { ApiContext } from '../api.ts';
import { cachedAnswer, queryOptionParameters } from '../query.ts';
import { param, type Request } from '../request.ts';
import type { Handler, Route } from '../router.ts';
import { catalogAcl, catalogRead, checkVisible, nodeMetaFilter, required, serviceWatched } from './catalog-read.ts';
import { consulServiceName, instancesWithConsul, servicesWithConsul } from './consul-service.ts';
import { checksOfInstances, healthEntry, renderAgentService, renderCatalogService, renderCheck, renderHealthService, renderNode } from './catalog-render.ts';

// ---------------------------------------------------------------- catalog

/** A read Consul's agent caches (the services list, a service's nodes and health): `?cached` marks its answer. */
const agentCached = (read: Handler<ApiContext>): Handler<ApiContext> => async (req, api) => cachedAnswer(await read(req, api), req);

/** `/v1/catalog/services`: each name with the union of its instances' tags; `filter` keeps instances by their ServiceNode fields, as Consul's. */
const catalogServices = agentCached(catalogRead(catalogServiceSchema, async (req, api, filter) => {
  const tags = new Map<string, Set<string>>();
  const { service } = catalogAcl(req);
  const st = api.runtime.state;
  const onNode = nodeMetaFilter(req, st);
  const listed = [...instancesWithConsul(api, consulServiceName), ...st.services.values()].filter((s) => service(s.service) && onNode(s.node));
  // Rendered only to be filtered; each with its node as the state has it now (filtering.ts).
  const withNodes = filter.given ? listed.map((s) => [s, st.nodes.get(s.node)] as const) : [];
  const kept = filter.given ? (await filter.keep(withNodes, ([s, n]) => renderCatalogService(s, n, api.datacenter))).map(([s]) => s) : listed;
  for (const s of kept) {
    const set = tags.get(s.service) ?? new Set<string>();
    for (const t of s.tags) set.add(t);
    tags.set(s.service, set);
  }
  return Object.fromEntries([...tags.keys()].sort().map((name) => [name, [...tags.get(name)!].sort()]));
}));

/** Every `?tag` is among the instance's tags, compared without case, as Consul compares them. */
function hasTags(s: ServiceInstance, req: Request): boolean {
  const wanted = req.query.getAll('tag');
  if (wanted.length === 0) return true;
  const tags = s.tags.map((t) => t.toLowerCase());
  return wanted.every((t) => tags.includes(t.toLowerCase()));
}

const catalogService = agentCached(catalogRead(catalogServiceSchema, (req, api, filter) => {
  const name = required(req, 'serviceMissing');
  const st = api.runtime.state;
  const { node } = catalogAcl(req);
  const onNode = nodeMetaFilter(req, st);
  return filter.records(instancesWithConsul(api, name).filter((s) => hasTags(s, req) && node(s.node) && onNode(s.node))
    .map((s) => [s, st.nodes.get(s.node)] as const), ([s, n]) => renderCatalogService(s, n, api.datacenter));
}, serviceWatched));

const catalogNodes = catalogRead(nodeSchema, (req, api, filter) => {
  const { node } = catalogAcl(req);
  const onNode = nodeMetaFilter(req, api.runtime.state);
  return filter.records([...api.runtime.state.nodes.values()].filter((n) => node(n.node) && onNode(n.node)).sort((a, b) => (a.node < b.node ? -1 : a.node > b.node ? 1 : 0)),
    (n) => renderNode(n, api.datacenter));
});

/** `/v1/catalog/node/<node>`: the node and its services by ID; `filter` keeps services by their fields, as Consul's. */
const catalogNode = catalogRead(agentServiceSchema, async (req, api, filter) => {
  const name = required(req, 'nodeMissing');
  const st = api.runtime.state;
  const node = st.nodes.get(name);
  if (node === undefined) return null;
  const { service } = catalogAcl(req);
  const services = servicesWithConsul(api, name).filter((s) => service(s.service));
  const nodeRecord = renderNode(node, api.datacenter);
  const kept = await filter.records(services, (s): Record<string, unknown> => ({ ...renderAgentService(s, api.datacenter), CreateIndex: s.createIndex, ModifyIndex: s.modifyIndex }));
  return { Node: nodeRecord, Services: Object.fromEntries(kept.map((r) => [r.ID as string, r])) };
});

/**
 * `/v1/catalog/node-services/<node>`: the node and its services as a list of Consul's NodeService records
 * (`filter` on their fields); an unknown node is `{"Node": null, "Services": null}`, as in Consul.
 */
const catalogNodeServices = catalogRead(agentServiceSchema, async (req, api, filter) => {
  const name = required(req, 'nodeMissing');
  const st = api.runtime.state;
  const node = st.nodes.get(name);
  if (node === undefined) return { Node: null, Services: null };
  const { service } = catalogAcl(req);
  const services = servicesWithConsul(api, name).filter((s) => service(s.service));
  const nodeRecord = renderNode(node, api.datacenter);
  return { Node: nodeRecord, Services: await filter.records(services, (s) => renderHealthService(s)) };
});

// ---------------------------------------------------------------- health

const healthNode = catalogRead(checkSchema, (req, api, filter) => {
  const name = required(req, 'nodeMissing');
  const acl = catalogAcl(req);
  return filter.records(api.runtime.state.checksOfNode(name).filter((c) => checkVisible(acl, c)), (c) => renderCheck(c));
});

const healthChecks = catalogRead(checkSchema, (req, api, filter) => {
  const name = required(req, 'serviceMissing');
  const acl = catalogAcl(req);
  const onNode = nodeMetaFilter(req, api.runtime.state);
  return filter.records(api.runtime.state.allChecks().filter((c) => c.serviceName === name && c.serviceId !== '' && checkVisible(acl, c) && onNode(c.node)),
    (c) => renderCheck(c));
}, serviceWatched);

function parsePassing(req: Request): boolean {
  if (!req.query.has('passing')) return false;
  const v = param(req, 'passing') ?? '';
  if (v === '' || ['1', 't', 'T', 'TRUE', 'true', 'True'].includes(v)) return true;
  if (['0', 'f', 'F', 'FALSE', 'false', 'False'].includes(v)) return false;
  throw new RegistryError('passingInvalid', { value: v });
}

const healthService = agentCached(catalogRead(healthEntrySchema, (req, api, filter) => {
  const name = required(req, 'serviceMissing');
  const passingOnly = parsePassing(req);
  const st = api.runtime.state;
  const entries: Record<string, unknown>[] = [];
  const { node } = catalogAcl(req);
  const onNode = nodeMetaFilter(req, st);
  const instances = instancesWithConsul(api, name).filter((s) => hasTags(s, req) && node(s.node) && onNode(s.node));
  const checks = checksOfInstances(st, instances);
  for (const s of instances) {
    const entry = healthEntry(st, s, api.datacenter, passingOnly, checks);
    if (entry !== undefined) entries.push(entry);
  }
  return filter.keep(entries, (entry) => entry);
}, serviceWatched));

const states = new Set(['any', 'passing', 'warning', 'critical', 'fail']);
const consulStates = new Set(['any', 'passing', 'warning', 'critical']);

const healthState = catalogRead(checkSchema, (req, api, filter) => {
  const state = required(req, 'checkStateMissing');
  // Consul does not validate the state: an unknown one, "fail" included, matches nothing there.
  if (api.dialect === 'consul' && !consulStates.has(state)) return [];
  if (!states.has(state)) {
    throw new RegistryError('checkStateUnknown', { state });
  }
  // "fail" returns the failing checks: the registry's word for critical.
  const wanted = state === 'fail' ? 'critical' : state;
  const acl = catalogAcl(req);
  const onNode = nodeMetaFilter(req, api.runtime.state);
  return filter.records(api.runtime.state.allChecks().filter((c) => (wanted === 'any' || c.status === wanted) && checkVisible(acl, c) && onNode(c.node)),
    (c) => renderCheck(c));
});

/** A catalog read's parameters: the query options and `filter`. */
const readParameters = [...queryOptionParameters, 'filter'];
/**
 * Also `node-meta` (nodeMetaFilter) and `near`, which Consul takes on these reads. `near` sorts by the network
 * coordinates of the node it names; Roster keeps none, and Consul leaves the order as it is for a node without
 * coordinates, so it changes nothing here either.
 */
const nodeReadParameters = [...readParameters, 'near', 'node-meta'];

export const catalogRoutes: Route<ApiContext>[] = [
  { path: '/v1/catalog/services', prefix: false, methods: { GET: catalogServices }, query: [...readParameters, 'node-meta'] },
  { path: '/v1/catalog/service/', prefix: true, methods: { GET: catalogService }, query: [...nodeReadParameters, 'tag'] },
  { path: '/v1/catalog/nodes', prefix: false, methods: { GET: catalogNodes }, query: nodeReadParameters },
  { path: '/v1/catalog/node/', prefix: true, methods: { GET: catalogNode }, query: readParameters },
  { path: '/v1/catalog/node-services/', prefix: true, methods: { GET: catalogNodeServices }, query: readParameters },
  { path: '/v1/health/node/', prefix: true, methods: { GET: healthNode }, query: readParameters },
  { path: '/v1/health/checks/', prefix: true, methods: { GET: healthChecks }, query: nodeReadParameters },
  { path: '/v1/health/service/', prefix: true, methods: { GET: healthService }, query: [...nodeReadParameters, 'tag', 'passing'] },
  { path: '/v1/health/state/', prefix: true, methods: { GET: healthState }, query: nodeReadParameters },
];
