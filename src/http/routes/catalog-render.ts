/**
 * How the catalog and health answers render registry records: check records, nodes, agent services,
 * health entries and catalog service nodes, in Consul's field order (consul-compat.md §1.3–1.6).
 */
import type { CatalogNode, HealthCheck, ServiceInstance } from '../../domain/types.ts';
import type { RegistryState } from '../../state/index.ts';

export function renderCheck(c: HealthCheck, agentView = false): Record<string, unknown> {
  return {
    Node: c.node, CheckID: c.checkId, Name: c.name, Status: c.status, Notes: c.notes, Output: c.output,
    ServiceID: c.serviceId, ServiceName: c.serviceName, ServiceTags: c.serviceTags, Type: c.type,
    Interval: c.definition.interval, Timeout: c.definition.timeout, ExposedPort: 0, Definition: {},
    CreateIndex: agentView ? 0 : c.createIndex, ModifyIndex: agentView ? 0 : c.modifyIndex,
  };
}

/** A node's tagged addresses as registered; a node registered without them shows its address as lan and wan. */
export function taggedAddressesOf(n: CatalogNode | undefined, address: string): Record<string, string> {
  return n?.taggedAddresses ?? { lan: address, lan_ipv4: address, wan: address, wan_ipv4: address };
}

export function renderNode(n: CatalogNode, dc: string): Record<string, unknown> {
  return {
    ID: n.id, Node: n.node, Address: n.address, Datacenter: dc,
    TaggedAddresses: taggedAddressesOf(n, n.address),
    Meta: n.meta, CreateIndex: n.createIndex, ModifyIndex: n.modifyIndex,
  };
}

export function renderAgentService(s: ServiceInstance, dc: string): Record<string, unknown> {
  return {
    ...(s.kind !== '' ? { Kind: s.kind } : {}),
    ID: s.id, Service: s.service, Tags: s.tags, Meta: s.meta, Port: s.port, Address: s.address,
    ...(Object.keys(s.taggedAddresses).length > 0 ? { TaggedAddresses: s.taggedAddresses } : {}),
    Weights: s.weights, EnableTagOverride: s.enableTagOverride, Datacenter: dc,
  };
}

export function renderHealthService(s: ServiceInstance): Record<string, unknown> {
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
export function byCheckId(a: HealthCheck, b: HealthCheck): number {
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

export function renderCatalogService(s: ServiceInstance, n: CatalogNode | undefined, dc: string): Record<string, unknown> {
  const address = n?.address ?? '';
  return {
    ID: n?.id ?? '', Node: s.node, Address: address, Datacenter: dc,
    TaggedAddresses: taggedAddressesOf(n, address),
    NodeMeta: n?.meta ?? {}, ServiceKind: s.kind, ServiceID: s.id, ServiceName: s.service, ServiceTags: s.tags,
    ServiceAddress: s.address,
    ...(Object.keys(s.taggedAddresses).length > 0 ? { ServiceTaggedAddresses: s.taggedAddresses } : {}),
    ServiceWeights: s.weights, ServiceMeta: s.meta, ServicePort: s.port,
    ServiceSocketPath: '', ServiceEnableTagOverride: s.enableTagOverride,
    ServiceProxy: { MeshGateway: {}, Expose: {} }, ServiceConnect: {}, ServiceLocality: null,
    CreateIndex: s.createIndex, ModifyIndex: s.modifyIndex,
  };
}
