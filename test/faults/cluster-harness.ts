/**
 * A three-node Roster cluster for the process-level fault tests (issue 9): three nats-server
 * processes with JetStream and routes, and three Roster nodes started as users start them (node + tsx,
 * --nats, --gossip-listen, --join, --config-file). Unlike cluster/nats-launcher.ts, every process here
 * can be killed *and started again* with the same ports and store, so a nemesis can SIGKILL a node or a
 * nats-server and bring it back; HTTP ports are fixed per node so a client keeps its address across a
 * restart. Everything is started and stopped by pid, never by name.
 *
 * Also here: an HTTP call with a deadline that classifies its answer for a history (ok / refused /
 * unknown), the seeded PRNG and the env knobs of the fault runs.
 */
import { spawn, type ChildProcess } from 'node:child_process';
import { mkdirSync, mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { setTimeout as sleep } from 'node:timers/promises';
import { connect } from '@nats-io/transport-node';
import { jetstreamManager } from '@nats-io/jetstream';
import { allThreadsStopped, freePort, natsServerBinary } from '../../cluster/nats-launcher.ts';
import { startAgent, type Agent } from '../support/agent.ts';

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

// ---- HTTP with a deadline -------------------------------------------------------------------

export interface Answer {
  /** 0 when there was no HTTP answer (timeout, connection refused or reset). */
  status: number;
  text: string;
  headers: Headers;
  /** Why there was no answer. */
  error?: string;
  json<T = any>(): T;
}

/** One HTTP call that never throws: a timeout or a connection error is status 0. */
export async function http(base: string, method: string, path: string, o: { body?: string | object; timeoutMs?: number } = {}): Promise<Answer> {
  const headers: Record<string, string> = {};
  let body: string | undefined;
  if (typeof o.body === 'string') body = o.body;
  else if (o.body !== undefined) { body = JSON.stringify(o.body); headers['content-type'] = 'application/json'; }
  try {
    const res = await fetch(base + path, { method, body, headers, signal: AbortSignal.timeout(o.timeoutMs ?? 5_000) });
    const text = await res.text();
    return { status: res.status, text, headers: res.headers, json: () => JSON.parse(text) };
  } catch (err) {
    const e = err as Error & { cause?: { code?: string } };
    return { status: 0, text: '', headers: new Headers(), error: `${e.name}: ${e.cause?.code ?? e.message}`, json: <T>() => undefined as T };
  }
}

/** How a history records an answer (the recording rules of issue 9). */
export type Verdict = 'ok' | 'refused' | 'invalid' | 'unknown';

/**
 * 200 → ok; 409 (seed: 1025, did not acquire/release/apply) → refused, a definite "no"; other 4xx
 * (validation, invalid session, not found) → invalid, nothing changed; no answer, 5xx → unknown.
 */
export function verdictOf(a: Answer): Verdict {
  if (a.status === 200) return 'ok';
  if (a.status === 409) return 'refused';
  if (a.status >= 400 && a.status < 500 && a.status !== 408 && a.status !== 429) return 'invalid';
  return 'unknown';
}

/** The seed dialect's error code of a 4xx/5xx body, if any. */
export function errorCode(a: Answer): number | undefined {
  try { return (a.json() as { code?: number })?.code; } catch { return undefined; }
}

export function indexOf(a: Answer): number | undefined {
  const h = a.headers.get('x-consul-index');
  return h === null ? undefined : Number(h);
}

// ---- nats-server ----------------------------------------------------------------------------

/** One nats-server that can be killed, paused and started again with the same ports and store. */
export class NatsNode {
  private proc: ChildProcess | undefined;
  private exited: Promise<void> = Promise.resolve();
  private out = '';
  private paused = false;

  constructor(readonly name: string, readonly clientPort: number, readonly clusterPort: number, readonly monitorPort: number, readonly conf: string) {}

  get url(): string { return `nats://127.0.0.1:${this.clientPort}`; }
  get pid(): number | undefined { return this.running() ? this.proc!.pid : undefined; }
  running(): boolean { return this.proc !== undefined && this.proc.exitCode === null && this.proc.signalCode === null; }
  isPaused(): boolean { return this.paused && this.running(); }
  output(): string { return this.out; }

  /** Starts the server and waits for /healthz (a server whose JetStream peers are down may take longer). */
  async start(readyMs = 30_000): Promise<void> {
    if (this.running()) return;
    const proc = spawn(natsServerBinary(), ['-c', this.conf, '-js'], { stdio: ['ignore', 'pipe', 'pipe'] });
    this.proc = proc;
    this.paused = false;
    const keep = (d: Buffer): void => {
      this.out += d.toString();
      if (this.out.length > 200_000) this.out = this.out.slice(-100_000);
    };
    proc.stdout!.on('data', keep);
    proc.stderr!.on('data', keep);
    this.exited = new Promise((res) => proc.once('exit', () => res()));
    const deadline = Date.now() + readyMs;
    while (Date.now() < deadline) {
      if (!this.running()) throw new Error(`nats-server ${this.name} exited during start:\n${this.out.slice(-4000)}`);
      try {
        if ((await fetch(`http://127.0.0.1:${this.monitorPort}/healthz`, { signal: AbortSignal.timeout(1_000) })).ok) return;
      } catch { /* not yet */ }
      await sleep(50);
    }
    throw new Error(`nats-server ${this.name} not healthy after ${readyMs} ms:\n${this.out.slice(-4000)}`);
  }

  /** SIGKILL (a crash) and wait for the exit. */
  async kill(): Promise<void> {
    if (!this.running()) return;
    this.proc!.kill('SIGKILL');
    await this.exited;
  }

  /** SIGTERM and wait for the exit. */
  async stop(): Promise<void> {
    if (!this.running()) return;
    if (this.paused) this.resume();
    this.proc!.kill('SIGTERM');
    await this.exited;
  }

  /** SIGSTOP, resolving once every thread is stopped: a server that hangs with its sockets open. */
  async pause(): Promise<void> {
    if (!this.running()) return;
    this.proc!.kill('SIGSTOP');
    this.paused = true;
    for (let k = 0; k < 5_000 && this.running() && !allThreadsStopped(this.proc!.pid!); k++) await sleep(1);
  }

  resume(): void {
    if (!this.running()) return;
    this.proc!.kill('SIGCONT');
    this.paused = false;
  }

  /** The names of the clients connected to this server (Roster nodes connect as `roster-<node>`). */
  async clientNames(): Promise<string[]> {
    if (!this.running() || this.paused) return [];
    try {
      const res = await fetch(`http://127.0.0.1:${this.monitorPort}/connz?limit=1024`, { signal: AbortSignal.timeout(2_000) });
      const body = await res.json() as { connections?: { name?: string }[] };
      return (body.connections ?? []).map((c) => c.name ?? '');
    } catch {
      return [];
    }
  }
}

// ---- Roster node ----------------------------------------------------------------------------

/** Starts of a Roster node tried before giving up. */
const startAttemptsMax = 3;

export class RosterNode {
  agent: Agent | undefined;
  /** How many times this node was started. */
  starts = 0;
  /** How many times kill() or stop() was called: bumped before the signal, so an answer can tell it came from before. */
  stops = 0;
  /** True while start() is running (a supervisor leaves such a node alone). */
  starting = false;
  /** Output of earlier incarnations (the newest at the end), for a failure report. */
  private history = '';

  constructor(readonly name: string, readonly httpPort: number, readonly gossipPort: number, readonly dataDir: string,
    private readonly argsOf: (node: RosterNode) => string[]) {}

  get url(): string { return `http://127.0.0.1:${this.httpPort}`; }
  running(): boolean { return this.agent !== undefined && this.agent.proc.exitCode === null && this.agent.proc.signalCode === null; }
  get pid(): number | undefined { return this.running() ? this.agent!.proc.pid : undefined; }

  /**
   * Starts the node as a process supervisor would: a start that exits before it is ready (its log could
   * not open while the nats-servers restart, or it stopped on a changed stream, exit 70) or is not ready
   * in time (it is then killed) is tried again, up to {@link startAttemptsMax} times.
   */
  async start(): Promise<void> {
    if (this.running() || this.starting) return;
    this.starting = true;
    try {
      for (let attempt = 1; ; attempt++) {
        if (this.agent !== undefined) this.history += this.agent.output();
        this.agent = undefined;
        this.starts++;
        try {
          this.agent = await startAgent({ bare: true, dataDir: this.dataDir, args: this.argsOf(this), readyTimeoutMs: 60_000 });
          return;
        } catch (err) {
          this.history += `\n[harness] start ${attempt} of ${this.name} failed: ${(err as Error).message}\n`;
          if (attempt >= startAttemptsMax) throw err;
          await sleep(1_000);
        }
      }
    } finally {
      this.starting = false;
    }
  }

  /** The exit code (or signal) of the last incarnation, if it ended. */
  lastExit(): string | undefined {
    const p = this.agent?.proc;
    if (p === undefined || (p.exitCode === null && p.signalCode === null)) return undefined;
    return p.exitCode !== null ? String(p.exitCode) : String(p.signalCode);
  }

  /** SIGKILL and wait for the exit. */
  async kill(): Promise<void> {
    this.stops++;
    if (this.running()) await this.agent!.kill9();
  }

  /** SIGTERM and wait for the exit. */
  async stop(): Promise<void> {
    this.stops++;
    if (this.running()) await this.agent!.stop();
  }

  output(): string {
    return this.history + (this.agent?.output() ?? '');
  }
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
}

export const nodeNames = ['n1', 'n2', 'n3'] as const;

export class FaultCluster {
  private constructor(readonly root: string, readonly nats: NatsNode[], readonly nodes: RosterNode[], readonly options: Required<ClusterOptions>) {}

  static async start(o: ClusterOptions = {}): Promise<FaultCluster> {
    const options: Required<ClusterOptions> = { suspicionMs: 4_000, homeServers: false, sessionTtlMin: '1s', logLevel: 'info', ...o };
    const root = mkdtempSync(join(tmpdir(), 'roster-faults-'));
    const ports: { name: string; client: number; cluster: number; monitor: number; http: number; gossip: number }[] = [];
    for (const name of nodeNames) ports.push({ name, client: await freePort(), cluster: await freePort(), monitor: await freePort(), http: await freePort(), gossip: await freePort() });
    const nats = ports.map((p) => {
      const conf = join(root, `nats-${p.name}.conf`);
      const routes = ports.filter((q) => q.name !== p.name).map((q) => `"nats-route://127.0.0.1:${q.cluster}"`);
      writeFileSync(conf, [
        `server_name: ${p.name}`,
        `listen: "127.0.0.1:${p.client}"`,
        `http: "127.0.0.1:${p.monitor}"`,
        `jetstream { store_dir: ${JSON.stringify(join(root, `js-${p.name}`))} }`,
        `cluster { name: roster, listen: "127.0.0.1:${p.cluster}", routes: [${routes.join(', ')}] }`,
      ].join('\n') + '\n');
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
      ]);
    });
    const cluster = new FaultCluster(root, nats, nodes, options);
    try {
      await Promise.all(nats.map((s) => s.start()));
      await cluster.waitJetStream();
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

  /** JetStream answers account info once a meta leader exists. */
  async waitJetStream(ms = 30_000): Promise<void> {
    const deadline = Date.now() + ms;
    for (;;) {
      const ok = await this.withNats(async (jsm) => { await jsm.getAccountInfo(); return true; });
      if (ok) return;
      if (Date.now() > deadline) throw new Error(`JetStream not ready after ${ms} ms`);
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
    await this.waitJetStream(60_000);
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
