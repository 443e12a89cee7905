/**
 * A three-node Roster cluster for the process-level fault tests: three nats-server
 * processes with JetStream and routes, and three Roster nodes started as users start them (node + tsx,
 * --nats, --gossip-listen, --join, --config-file). Unlike cluster/dev/nats-launcher.ts, every process here
 * can be killed *and started again* with the same ports and store, so a nemesis can SIGKILL a node or a
 * nats-server and bring it back; HTTP ports are fixed per node so a client keeps its address across a
 * restart. Everything is started and stopped by pid, never by name.
 *
 * Also here: the seeded PRNG and the env knobs of the fault runs; the HTTP helpers (cluster-http.ts) and
 * the process classes (cluster-processes.ts) are exported from here too, so a fault test imports one module.
 */
import { mkdirSync, mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { setTimeout as sleep } from 'node:timers/promises';
import { connect } from '@nats-io/transport-node';
import { jetstreamManager } from '@nats-io/jetstream';
import { freePort, metaGroupsOf, natsConfigText, PlacementTimeout, placementTimeoutMs, placesReplicas, uniqueClusterName, withFreshStarts } from '../../cluster/dev/nats-launcher.ts';
import { http } from './cluster-http.ts';
import { NatsNode, RosterNode } from './cluster-processes.ts';

export { errorCode, http, indexOf, verdictOf, type Answer, type Verdict } from './cluster-http.ts';
export { NatsNode, RosterNode } from './cluster-processes.ts';

export { sleep };

// ---- seed and knobs -------------------------------------------------------------------------

/** The seeded generator (mulberry32): the same seed gives the same draws everywhere. */
export { mulberry32 as rng } from '../../src/util/prng.ts';

function intEnv(name: string, fallback: number): number {
  const text = process.env[name];
  if (text === undefined || text === '') return fallback;
  const n = Number(text);
  if (!Number.isFinite(n) || n <= 0) throw new Error(`${name} must be a positive number, got ${JSON.stringify(text)}`);
  return n;
}

/** The env knobs of the fault runs: ROSTER_FAULT_PAIRS, ROSTER_FAULT_MINUTES, ROSTER_FAULT_SEED. */
export function faultKnobs(): { pairs: number; minutes: number; seed: number } {
  const pairs = intEnv('ROSTER_FAULT_PAIRS', 2_000);
  // The CI default leaves room in an 8-minute budget; a soak sets both knobs.
  const minutes = intEnv('ROSTER_FAULT_MINUTES', 4);
  const seed = process.env.ROSTER_FAULT_SEED ? intEnv('ROSTER_FAULT_SEED', 1) >>> 0 : (Date.now() % 2 ** 31) >>> 0;
  return { pairs, minutes, seed };
}

// ---- the cluster ----------------------------------------------------------------------------

export interface ClusterOptions {
  /** Gossip suspicion timeout. @default 4000 */
  suspicionMs?: number;
  /**
   * Each Roster node is given only its own nats-server's URL (n1 → nats n1, ...), so which server a node
   * is connected to is known (it still learns the others from the cluster and fails over to them).
   * @default false: every node gets every URL
   */
  homeServers?: boolean;
  /** --session-ttl-min. @default '1s' */
  sessionTtlMin?: string;
  /** @default 'info' */
  logLevel?: string;
  /** --snapshot-every: small enough, the stream is compacted under the faults. @default the agent's (20,000) */
  snapshotEvery?: number;
}

export const nodeNames = ['n1', 'n2', 'n3'] as const;

export class FaultCluster {
  private constructor(readonly root: string, readonly nats: NatsNode[], readonly nodes: RosterNode[], readonly options: Required<ClusterOptions>) {}

  /**
   * Starts the cluster; when a port chosen free is taken before a server binds it, or the fresh nats-servers
   * do not place a stream on all three within the launcher's placement timeout (seen on a loaded machine),
   * everything is stopped and started again on new ports and a new directory.
   */
  static async start(o: ClusterOptions = {}): Promise<FaultCluster> {
    const options: Required<ClusterOptions> = { suspicionMs: 4_000, homeServers: false, sessionTtlMin: '1s', logLevel: 'info', snapshotEvery: 20_000, ...o };
    return withFreshStarts(() => FaultCluster.startOnce(options));
  }

  private static async startOnce(options: Required<ClusterOptions>): Promise<FaultCluster> {
    const root = mkdtempSync(join(tmpdir(), 'roster-faults-'));
    const ports: { name: string; client: number; cluster: number; monitor: number; http: number; gossip: number }[] = [];
    for (const name of nodeNames) ports.push({ name, client: await freePort(), cluster: await freePort(), monitor: await freePort(), http: await freePort(), gossip: await freePort() });
    const clusterName = uniqueClusterName();
    const nats = ports.map((p) => {
      const conf = join(root, `nats-${p.name}.conf`);
      writeFileSync(conf, natsConfigText({
        name: p.name, client: p.client, monitor: p.monitor, storeDir: join(root, `js-${p.name}`),
        cluster: { name: clusterName, port: p.cluster, routes: ports.filter((q) => q !== p).map((q) => q.cluster) },
      }));
      return new NatsNode(p.name, p.client, p.cluster, p.monitor, conf);
    });
    const configFile = join(root, 'agent.json');
    writeFileSync(configFile, JSON.stringify({ suspicion: `${options.suspicionMs}ms` }));
    const allUrls = nats.map((s) => s.url).join(',');
    const seeds = ports.flatMap((p) => ['--join', `127.0.0.1:${p.gossip}`]);
    const nodes = ports.map((p, k) => {
      const dataDir = join(root, `data-${p.name}`);
      mkdirSync(dataDir);
      return new RosterNode(p.name, p.http, p.gossip, dataDir, (n) => [
        '--http-port', String(n.httpPort), '--grpc-port', '0', '--data-dir', n.dataDir, '--node-name', n.name,
        '--nats', options.homeServers ? nats[k]!.url : allUrls, '--gossip-listen', `127.0.0.1:${n.gossipPort}`,
        ...seeds,
        '--session-ttl-min', options.sessionTtlMin, '--log-level', options.logLevel, '--config-file', configFile,
        '--snapshot-every', String(options.snapshotEvery),
      ]);
    });
    const cluster = new FaultCluster(root, nats, nodes, options);
    try {
      await Promise.all(nats.map((s) => s.start()));
      await cluster.waitJetStream(placementTimeoutMs, true);
      // One at a time: the first creates the stream; three tsx boots at once on two cores take longer than in turn.
      for (const n of nodes) await n.start();
      await cluster.allAlive();
    } catch (err) {
      await cluster.shutdown();
      throw err;
    }
    return cluster;
  }

  node(name: string): RosterNode {
    const n = this.nodes.find((x) => x.name === name);
    if (n === undefined) throw new Error(`no node ${name}`);
    return n;
  }

  natsNode(name: string): NatsNode {
    const s = this.nats.find((x) => x.name === name);
    if (s === undefined) throw new Error(`no nats-server ${name}`);
    return s;
  }

  /**
   * JetStream answers account info (a meta leader exists) and places a stream on all three servers. The
   * error says what each running server made of the meta group; at a fresh start it is a
   * {@link PlacementTimeout}, which {@link FaultCluster.start} cures by starting again.
   */
  async waitJetStream(ms = 90_000, fresh = false): Promise<void> {
    const deadline = Date.now() + ms;
    for (;;) {
      const ok = await this.withNats(async (jsm) => { await jsm.getAccountInfo(); return placesReplicas(jsm, this.nats.length); });
      if (ok) return;
      if (Date.now() > deadline) {
        const message = `JetStream not ready after ${ms} ms${await metaGroupsOf(this.nats.filter((s) => s.running() && !s.isPaused()))}`;
        throw fresh ? new PlacementTimeout(message) : new Error(message);
      }
      await sleep(200);
    }
  }

  /** The server_name of the stream's leader, or undefined when there is none (or no answer). */
  async streamLeader(): Promise<string | undefined> {
    return this.withNats(async (jsm) => (await jsm.streams.info('ROSTER_LOG')).cluster?.leader);
  }

  /** The nats-server a Roster node is connected to right now (asked of each server's /connz). */
  async natsServerOf(node: string): Promise<string | undefined> {
    for (const s of this.nats) {
      if ((await s.clientNames()).includes(`roster-${node}`)) return s.name;
    }
    return undefined;
  }

  private async withNats<T>(f: (jsm: Awaited<ReturnType<typeof jetstreamManager>>) => Promise<T>): Promise<T | undefined> {
    const servers = this.nats.filter((s) => s.running() && !s.isPaused()).map((s) => s.url);
    if (servers.length === 0) return undefined;
    let nc;
    try {
      nc = await connect({ servers, timeout: 2_000, maxReconnectAttempts: 0 });
      const jsm = await jetstreamManager(nc, { timeout: 2_000 });
      return await f(jsm);
    } catch {
      return undefined;
    } finally {
      await nc?.close().catch(() => undefined);
    }
  }

  /** Every running node sees every running node alive and no running node's gossip check is critical. */
  async allAlive(ms = 60_000): Promise<void> {
    const deadline = Date.now() + ms;
    const up = this.nodes.filter((n) => n.running());
    for (;;) {
      let ok = true;
      for (const n of up) {
        const members = await http(n.url, 'GET', '/v1/agent/members', { timeoutMs: 2_000 });
        const alive = members.status === 200 ? members.json<{ Name: string; Status: number }[]>().filter((m) => m.Status === 1).map((m) => m.Name) : [];
        if (!up.every((u) => alive.includes(u.name))) { ok = false; break; }
      }
      if (ok) {
        const critical = await http(up[0]!.url, 'GET', '/v1/health/state/critical?consistent', { timeoutMs: 5_000 });
        ok = critical.status === 200
          && !critical.json<{ CheckID: string; Node: string }[]>().some((c) => c.CheckID === 'gossipHealth' && up.some((u) => u.name === c.Node));
      }
      if (ok) return;
      if (Date.now() > deadline) throw new Error(`cluster not converged after ${ms} ms (members or gossip checks)`);
      await sleep(250);
    }
  }

  /** A write through every running node answers 200 (the log takes writes from each). */
  async writable(ms = 60_000): Promise<void> {
    const deadline = Date.now() + ms;
    for (const n of this.nodes.filter((x) => x.running())) {
      for (;;) {
        const a = await http(n.url, 'PUT', `/v1/kv/faults/writable/${n.name}`, { body: String(Date.now()), timeoutMs: 5_000 });
        if (a.status === 200) break;
        if (Date.now() > deadline) {
          throw new Error(`node ${n.name} not writable after ${ms} ms: ${a.status} ${a.error ?? a.text}\n`
            + `${n.name} ${n.running() ? 'running' : `not running (last exit ${n.lastExit()})`}; its output (tail):\n${n.output().slice(-6000)}`);
        }
        await sleep(250);
      }
    }
  }

  /** Resumes and starts everything that is paused or down, then waits until the cluster is one again. */
  async heal(): Promise<void> {
    for (const s of this.nats) s.resume();
    // Together: a server alone may not report healthy while its JetStream peers are down.
    await Promise.all(this.nats.filter((s) => !s.running()).map((s) => s.start(60_000)));
    await this.waitJetStream();
    for (const n of this.nodes) if (!n.running()) await n.start();
    await this.writable();
    await this.allAlive();
  }

  /**
   * Restarts, as a process supervisor would, every Roster node that stopped by itself (a node that finds
   * the stream changed under it exits with code 70 so that a restart replays the stream), unless `held`
   * says a fault is keeping it down. Checks every 500 ms until the returned function is called (it
   * resolves with the names restarted, in order) or `maxMs` passes.
   */
  supervise(held: (n: RosterNode) => boolean = () => false, maxMs = 30 * 60_000): () => Promise<string[]> {
    let supervising = true;
    const restarted: string[] = [];
    const loop = (async () => {
      for (const until = Date.now() + maxMs; supervising && Date.now() < until;) {
        for (const n of this.nodes) {
          if (!supervising || n.running() || n.starting || held(n)) continue;
          restarted.push(n.name);
          console.log(`[supervisor] ${n.name} stopped by itself (exit ${n.lastExit()}); starting it again`);
          const startedAt = Date.now();
          const started = await n.start().then(() => 'ready', (err: unknown) => `not started: ${(err as Error).message.split('\n')[0]}`);
          console.log(`[supervisor] ${n.name} ${started} after ${((Date.now() - startedAt) / 1000).toFixed(1)} s`);
        }
        await sleep(500);
      }
    })();
    return async () => {
      supervising = false;
      await loop;
      return restarted;
    };
  }

  /** Stops every process this harness started (by pid) and removes the temporary directory. */
  async shutdown(keepDir = false): Promise<void> {
    await Promise.all(this.nodes.map((n) => n.kill().catch(() => undefined)));
    for (const s of this.nats) s.resume();
    await Promise.all(this.nats.map((s) => s.kill().catch(() => undefined)));
    if (!keepDir) rmSync(this.root, { recursive: true, force: true });
  }
}
