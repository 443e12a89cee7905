/**
 * Starting one Roster node of a local test cluster: its own data dir and gossip port, the cluster's
 * nats-servers, and the other nodes' gossip ports as seeds. The suites keep the maps (they restart nodes
 * on the same data dir and port); this starts a node from them and records it.
 */
import { startAgent, type Agent } from './agent.ts';

export interface ClusterNodes {
  natsUrls: () => string[];
  gossipPorts: Map<string, number>;
  dataDirs: Map<string, string>;
  nodes: Map<string, Agent>;
}

/** Starts node `name`; `args` are added after the cluster's own; `joinSelf` also lists its own port as a seed. */
export async function startClusterNode(c: ClusterNodes, name: string, args: string[] = [], joinSelf = false): Promise<Agent> {
  const seeds = [...c.gossipPorts.entries()].filter(([n]) => joinSelf || n !== name).flatMap(([, p]) => ['--join', `127.0.0.1:${p}`]);
  const dataDir = c.dataDirs.get(name)!;
  const agent = await startAgent({
    bare: true,
    dataDir,
    args: ['--http-port', '0', '--grpc-port', '0', '--data-dir', dataDir, '--node-name', name,
      '--nats', c.natsUrls().join(','), '--gossip-listen', `127.0.0.1:${c.gossipPorts.get(name)}`, ...seeds, ...args],
    readyTimeoutMs: 60_000,
  });
  c.nodes.set(name, agent);
  return agent;
}
