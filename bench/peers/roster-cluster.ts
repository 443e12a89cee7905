/**
 * A three-node Roster cluster for the comparison: three nats-servers with JetStream and routes
 * (cluster/dev/nats-launcher.ts), and three Roster nodes started as users start them (`--nats` with every
 * server, `--gossip-listen`, `--join` with every node's gossip address), each with its own data dir.
 * Ready once every node lists three live members and no gossip check is critical: a session made while
 * startup gossip still flaps could be invalidated mid-row by its node check.
 */
import { setTimeout as sleep } from 'node:timers/promises';
import { freePort, startNatsCluster, type NatsCluster } from '../../cluster/dev/nats-launcher.ts';
import { startRoster, type Server, type StartOptions } from '../server.ts';

const nodeNames = ['n1', 'n2', 'n3'];
/** Gossip settles in a few heartbeats; the tests give it 40 s on a loaded machine. */
const settleTimeoutMs = 40_000;

export interface RosterCluster {
  nodes: Server[];
  nats: NatsCluster;
  /** A node that exited, with its output's tail, or undefined. */
  failure(): string | undefined;
  stop(): Promise<void>;
}

/**
 * `opts` go to every node's start (bench/server.ts), e.g. longer bounds for nodes holding a large state; a
 * function gives each node its own (by node name), e.g. a reader of its output.
 */
export async function startRosterCluster(dataParent: string, opts: StartOptions | ((node: string) => StartOptions) = {}): Promise<RosterCluster> {
  const nats = await startNatsCluster();
  const nodes: Server[] = [];
  const cluster: RosterCluster = {
    nodes, nats,
    failure: () => {
      const gone = nodes.find((n) => n.exited() !== undefined);
      return gone === undefined ? undefined : `Roster node stopped (${gone.exited()}):\n${gone.tail().slice(-3000)}`;
    },
    stop: async () => {
      const failures = (await Promise.all(nodes.map((n) => n.stop()))).filter((f) => f !== undefined);
      await nats.shutdown();
      // SIGTERM must stop a node cleanly; when one did not, say so once everything is down.
      if (failures.length > 0) throw new Error(failures.join('\n'));
    },
  };
  try {
    const gossip = await Promise.all(nodeNames.map(() => freePort()));
    const joins = gossip.flatMap((p) => ['--join', `127.0.0.1:${p}`]);
    const started = await Promise.allSettled(nodeNames.map((name, k) => startRoster(
      ['--node-name', name, '--nats', nats.urls.join(','), '--gossip-listen', `127.0.0.1:${gossip[k]}`, ...joins], dataParent,
      typeof opts === 'function' ? opts(name) : opts)));
    for (const s of started) if (s.status === 'fulfilled') nodes.push(s.value);
    const failed = started.find((s) => s.status === 'rejected');
    if (failed !== undefined) throw (failed as PromiseRejectedResult).reason;
    await settled(nodes);
  } catch (err) {
    await cluster.stop().catch(() => {});
    throw err;
  }
  return cluster;
}

async function settled(nodes: Server[]): Promise<void> {
  const deadline = Date.now() + settleTimeoutMs;
  const allAlive = async (n: Server) => {
    const members = await (await fetch(`${n.url}/v1/agent/members`, { signal: AbortSignal.timeout(2000) })).json() as { Status: number }[];
    return members.filter((m) => m.Status === 1).length === nodes.length;
  };
  const gossipPassing = async () => {
    const critical = await (await fetch(`${nodes[0]!.url}/v1/health/state/critical?consistent`, { signal: AbortSignal.timeout(2000) })).json() as { CheckID: string }[];
    return !critical.some((c) => c.CheckID === 'gossipHealth');
  };
  for (;;) {
    try {
      if ((await Promise.all(nodes.map(allAlive))).every(Boolean) && await gossipPassing()) return;
    } catch {
      // a node not answering yet
    }
    if (Date.now() > deadline) throw new Error(`Roster cluster: members not all alive with gossip checks passing after ${settleTimeoutMs} ms`);
    await sleep(200);
  }
}
