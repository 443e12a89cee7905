/**
 * A local test cluster: three (or more) Roster nodes over the nats-servers of cluster/dev, each with its
 * own data dir and gossip port and the other nodes' gossip ports as seeds. The suites restart nodes on the
 * same data dir and port, so the cluster keeps them; `stop()` ends every node still running, the
 * nats-servers, and removes the data dirs.
 */
import { rmSync } from 'node:fs';
import { freePort, startNatsCluster, type NatsCluster, type NatsOptions } from '../../cluster/dev/nats-launcher.ts';
import { startAgent, tempDataDir, type Agent } from './agent.ts';

export class TestCluster {
  nats!: NatsCluster;
  readonly nodes = new Map<string, Agent>();
  readonly gossipPorts = new Map<string, number>();
  readonly dataDirs = new Map<string, string>();

  /**
   * `args()` is added after each node's own flags (read at each start); `joinSelf` also lists a node's
   * own gossip port among its seeds.
   */
  constructor(readonly names: readonly string[], private readonly args: () => string[] = () => [], private readonly joinSelf = false) {}

  /** Starts the nats-servers and gives every node a free gossip port and a data dir; starts no node. */
  async prepare(nats: NatsOptions = {}): Promise<NatsCluster> {
    this.nats = await startNatsCluster(nats);
    for (const n of this.names) {
      this.gossipPorts.set(n, await freePort());
      this.dataDirs.set(n, tempDataDir());
    }
    return this.nats;
  }

  /** Starts node `name` on its data dir and port (given `nats`, the URLs of its nats-servers: all of them by default), and records it. */
  async start(name: string, nats = this.nats.urls.join(',')): Promise<Agent> {
    const seeds = [...this.gossipPorts.entries()].filter(([n]) => this.joinSelf || n !== name).flatMap(([, p]) => ['--join', `127.0.0.1:${p}`]);
    const dataDir = this.dataDirs.get(name)!;
    const agent = await startAgent({
      bare: true,
      dataDir,
      args: ['--http-port', '0', '--grpc-port', '0', '--data-dir', dataDir, '--node-name', name,
        '--nats', nats, '--gossip-listen', `127.0.0.1:${this.gossipPorts.get(name)}`, ...seeds, ...this.args()],
      readyTimeoutMs: 60_000,
    });
    this.nodes.set(name, agent);
    return agent;
  }

  /** Ends the nodes still running and the nats-servers; removes every data dir. */
  async stop(): Promise<void> {
    for (const n of this.nodes.values()) if (n.proc.exitCode === null && n.proc.signalCode === null) await n.stop().catch(() => undefined);
    await this.nats?.shutdown();
    for (const d of this.dataDirs.values()) rmSync(d, { recursive: true, force: true });
  }
}
