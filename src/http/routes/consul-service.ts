/**
 * The `consul` service of the consul dialect. Consul registers a service `consul` on every server node, and
 * clients find the servers through it (`/v1/catalog/service/consul`, `/v1/health/service/consul?passing`).
 * Every Roster node is a server, so the consul dialect shows one instance of it on each node running Roster
 * — a catalog node with the gossip check, which each agent registers on its own node — wherever Consul
 * shows it: the service list, the service's nodes and health entries (with its node's checks, so a failed
 * node's instance is not passing), and the node's services. It is made when answering, not stored: the
 * seed dialect, the agent's own service list, the stream and gRPC health do not show it, as a service of
 * Consul's and not of the registry.
 *
 * Port: Consul gives its server RPC port (8300). Roster has none; the port a client reaches a server's
 * Consul API on is the node's HTTP port, so the instance carries that (0 when the node's member is not
 * known to this node). Address is empty, as in Consul: the node's address is the server's.
 */
import { gossipCheckId } from '../../domain/limits.ts';
import type { ServiceInstance } from '../../domain/types.ts';
import { compareInstances, compareServiceIds } from '../../state/index.ts';
import type { ApiContext } from '../api.ts';
import { consulApiVersion } from '../render.ts';

export const consulServiceName = 'consul';

/** The node's HTTP port, as its gossip member announces it (this agent: its own address). */
function httpPort(api: ApiContext, node: string): number {
  const address = node === api.nodeName ? api.serverAddress : api.runtime.membership.members().find((m) => m.name === node)?.http;
  const port = Number(/:(\d+)$/.exec(address ?? '')?.[1] ?? 0);
  return Number.isSafeInteger(port) ? port : 0;
}

/** The `consul` instance on `node` when it runs Roster (consul dialect only); undefined otherwise. */
export function consulInstanceOn(api: ApiContext, node: string): ServiceInstance | undefined {
  if (api.dialect !== 'consul') return undefined;
  const st = api.runtime.state;
  const n = st.nodes.get(node);
  if (n === undefined || st.checkOf(node, gossipCheckId) === undefined) return undefined;
  return {
    node, id: consulServiceName, service: consulServiceName, kind: '', tags: [], address: '', port: httpPort(api, node),
    meta: { non_voter: 'false', raft_version: '3', read_replica: 'false', serf_protocol_current: '2', serf_protocol_max: '5', serf_protocol_min: '1', version: consulApiVersion },
    taggedAddresses: {}, weights: { Passing: 1, Warning: 1 }, enableTagOverride: false, createIndex: n.createIndex, modifyIndex: n.modifyIndex,
  };
}

/** The instances of `name`: the registered ones, and for `consul` the made ones among them (by node, then ID, as the state orders them). */
export function instancesWithConsul(api: ApiContext, name: string): ServiceInstance[] {
  const st = api.runtime.state;
  const registered = st.instancesOf(name);
  if (name !== consulServiceName || api.dialect !== 'consul') return registered;
  const made = [...st.nodes.keys()].map((node) => consulInstanceOn(api, node)).filter((s) => s !== undefined);
  const taken = new Set(registered.map((s) => st.serviceKey(s.node, s.id)));
  return [...made.filter((s) => !taken.has(st.serviceKey(s.node, s.id))), ...registered]
    .sort(compareInstances);
}

/** The services of `node`, with its `consul` instance first when it has one (by ID, as the others). */
export function servicesWithConsul(api: ApiContext, node: string): ServiceInstance[] {
  const st = api.runtime.state;
  const registered = st.servicesOfNode(node);
  const made = consulInstanceOn(api, node);
  if (made === undefined || registered.some((s) => s.id === made.id)) return registered;
  return [made, ...registered].sort(compareServiceIds);
}
