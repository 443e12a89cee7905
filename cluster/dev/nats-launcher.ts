/**
 * Starts real nats-server processes (the JetStream log tests and `npm run cluster`): one server, or a three-server
 * cluster (n1..n3) with routes between them, each with JetStream on, its store in a temporary
 * directory and every port chosen free at start. Servers are stopped by pid (SIGKILL for fault
 * tests, SIGTERM otherwise), never by name.
 */
import { spawn, type ChildProcess } from 'node:child_process';
import { randomBytes } from 'node:crypto';
import { existsSync, mkdtempSync, readdirSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { createServer } from 'node:net';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { setTimeout as sleep } from 'node:timers/promises';
import { connect } from '@nats-io/transport-node';
import { jetstreamManager, StorageType, type JetStreamManager } from '@nats-io/jetstream';

/** Where Debian puts nats-server; used when it is not on PATH. */
const debianBinary = '/usr/sbin/nats-server';
/** How long a server (or a cluster's JetStream meta leader) may take to become ready. */
const readyTimeoutMs = 20_000;

export interface NatsServer {
  name: string;
  /** nats://127.0.0.1:port */
  url: string;
  /** http://127.0.0.1:port of its monitoring endpoints (/varz, /healthz, …). */
  monitorUrl: string;
  pid: number;
  /** SIGKILL and wait for the exit: a crash. */
  kill(): Promise<void>;
  /** SIGTERM and wait for the exit. */
  stop(): Promise<void>;
  /** SIGSTOP, resolving once every thread is stopped: a server that hangs without closing its sockets. */
  pause(): Promise<void>;
  /** SIGCONT. */
  resume(): void;
  running(): boolean;
  output(): string;
}

export interface NatsCluster {
  servers: NatsServer[];
  urls: string[];
  /** The server with this `server_name`. */
  byName(name: string): NatsServer;
  /** Stops every server still running and removes the store directories. */
  shutdown(): Promise<void>;
}

/** The nats-server binary: ROSTER_NATS_SERVER (a path) when set, else PATH, then Debian's location. */
export function natsServerBinary(): string {
  const chosen = process.env.ROSTER_NATS_SERVER;
  if (chosen !== undefined && chosen !== '') {
    if (!existsSync(chosen)) throw new Error(`ROSTER_NATS_SERVER: ${chosen} does not exist`);
    return chosen;
  }
  for (const dir of (process.env.PATH ?? '').split(':')) {
    if (dir !== '' && existsSync(join(dir, 'nats-server'))) return join(dir, 'nats-server');
  }
  if (existsSync(debianBinary)) return debianBinary;
  throw new Error('nats-server not found on PATH nor at /usr/sbin/nats-server: apt-get install -y nats-server');
}

/**
 * Ports handed out by {@link freePort}: below Linux's ephemeral range (32768–60999 by default), so a
 * server restarted on its old port cannot find it taken by some client's outgoing connection.
 */
const portRange = { low: 20_000, high: 32_000 };
const portTriesMax = 200;

/** True when 127.0.0.1:port can be bound right now. */
export function canBind(port: number): Promise<boolean> {
  return new Promise((resolve) => {
    const srv = createServer();
    srv.once('error', () => resolve(false));
    srv.listen({ port, host: '127.0.0.1', exclusive: true }, () => srv.close(() => resolve(true)));
  });
}

/**
 * Ports this process has already handed out. A caller draws several ports before it binds any of them
 * (a three-node cluster draws fifteen), so a port is never handed out twice: otherwise two servers of one
 * cluster could be given the same port and the later one would fail with "address already in use".
 */
const handedOut = new Set<number>();

/**
 * A port nothing listens on right now and not handed out before by this process, drawn at random from
 * {@link portRange} (released before the server binds it, so a start can still race with another
 * process; the starters retry on "address already in use").
 */
export async function freePort(): Promise<number> {
  for (let i = 0; i < portTriesMax; i++) {
    const port = portRange.low + Math.floor(Math.random() * (portRange.high - portRange.low));
    if (handedOut.has(port)) continue;
    if (await canBind(port)) {
      handedOut.add(port);
      return port;
    }
  }
  throw new Error(`no free port found in ${portRange.low}-${portRange.high} after ${portTriesMax} tries (${handedOut.size} already handed out by this process)`);
}

interface ServerPorts {
  name: string;
  client: number;
  cluster: number;
  monitor: number;
}

/** What every server of a started cluster is given beyond the defaults. */
export interface NatsOptions {
  /** JetStream's `max_file_store` (bytes, or nats-server's units: `16MB`): the file storage each server allows. */
  maxFileStore?: string;
  /**
   * Clients (all of them: it is the account of connections without credentials) in an account whose
   * JetStream file storage is limited to this (`max_file`, the same units).
   */
  accountMaxFile?: string;
  /**
   * The servers do not tell their clients the other servers' addresses (`no_advertise`): a client given
   * one server's URL reconnects only to it (tests cut one node off from NATS this way).
   */
  noAdvertise?: boolean;
}

/** One JetStream server, ready to take stream requests. */
export async function startNatsServer(o: NatsOptions = {}): Promise<NatsCluster> {
  return startServers(1, o);
}

/** Three routed servers n1..n3; resolves once the JetStream meta group has a leader. */
export async function startNatsCluster(o: NatsOptions = {}): Promise<NatsCluster> {
  return startServers(3, o);
}

/**
 * Tries again with fresh servers and ports when a port chosen free was taken by someone else before the
 * server bound it, or when the cluster would not place a stream on all its servers (see placementTimeoutMs).
 */
const startAttemptsMax = 3;

async function startServers(count: number, o: NatsOptions): Promise<NatsCluster> {
  return withFreshStarts(() => startServersOnce(count, o));
}

/**
 * Runs `startOnce` (which starts servers on ports of its own choosing, and stops them when it fails)
 * until it succeeds, up to {@link startAttemptsMax} times, starting again only on the two failures a new
 * start can cure: a port taken before the server bound it, and a {@link PlacementTimeout}.
 */
export async function withFreshStarts<T>(startOnce: () => Promise<T>): Promise<T> {
  for (let attempt = 1; ; attempt++) {
    try {
      return await startOnce();
    } catch (err) {
      const cured = err instanceof Error && (/address already in use/.test(err.message) || err instanceof PlacementTimeout);
      if (!cured || attempt >= startAttemptsMax) throw err;
    }
  }
}

/** A started cluster that did not place a stream of one replica per server in time. */
export class PlacementTimeout extends Error {}

async function startServersOnce(count: number, o: NatsOptions): Promise<NatsCluster> {
  const root = mkdtempSync(join(tmpdir(), 'roster-nats-'));
  const clusterName = uniqueClusterName();
  const ports: ServerPorts[] = [];
  for (let k = 1; k <= count; k += 1) {
    ports.push({ name: `n${k}`, client: await freePort(), cluster: await freePort(), monitor: await freePort() });
  }
  const servers = ports.map((p) => spawnServer(join(root, `${p.name}.conf`), p, natsConfigText({
    name: p.name, client: p.client, monitor: p.monitor, storeDir: join(root, p.name), ...o,
    ...(count > 1 ? { cluster: { name: clusterName, port: p.cluster, routes: ports.filter((q) => q !== p).map((q) => q.cluster) } } : {}),
  })));
  const cluster: NatsCluster = {
    servers,
    urls: servers.map((s) => s.url),
    byName(name) {
      const s = servers.find((x) => x.name === name);
      if (s === undefined) throw new Error(`no nats-server named ${name}`);
      return s;
    },
    async shutdown() {
      for (const s of servers) s.resume();
      await Promise.all(servers.map((s) => s.kill()));
      rmSync(root, { recursive: true, force: true });
    },
  };
  try {
    await Promise.all(ports.map((p, k) => waitHealthy(p.monitor, servers[k]!)));
    await waitJetStreamReady(cluster.urls);
  } catch (err) {
    // What each server made of the JetStream meta group when it would not place: the place to look.
    if (err instanceof PlacementTimeout) err.message += await metaGroupsOf(servers);
    await cluster.shutdown();
    throw err;
  }
  return cluster;
}

/** Each server's view of the JetStream meta group (its /jsz `meta_cluster`), one line per server. */
export async function metaGroupsOf(servers: readonly { name: string; monitorUrl: string }[]): Promise<string> {
  const lines = await Promise.all(servers.map(async (s) => {
    try {
      const jsz = (await (await fetch(`${s.monitorUrl}/jsz`, { signal: AbortSignal.timeout(2_000) })).json()) as { meta_cluster?: unknown };
      return `\n${s.name}: ${JSON.stringify(jsz.meta_cluster)}`;
    } catch (e) {
      return `\n${s.name}: /jsz failed: ${String(e)}`;
    }
  }));
  return lines.join('');
}

/** What {@link natsConfigText} writes: one server, and its cluster block when it has peers. */
export interface NatsServerConfig {
  name: string;
  client: number;
  monitor: number;
  storeDir: string;
  maxFileStore?: string;
  accountMaxFile?: string;
  noAdvertise?: boolean;
  /** The route listener and the peers' route ports; absent for a lone server. */
  cluster?: { name: string; port: number; routes: number[] };
}

/**
 * A cluster name no other cluster on this machine has. nats-server refuses a route from a server of
 * another cluster name, so a server whose peer's port was taken by some other test's cluster before the
 * peer bound it (ports are chosen free, then bound) cannot join that cluster. With one shared name it
 * would: its routes reach the stranger, the two meta groups merge, and servers of the same name in both
 * (n1, n2, n3) are the same JetStream peer, so when the stray server is killed the other cluster sees its
 * own server of that name offline and refuses R3 streams ("no suitable peers for placement").
 */
export function uniqueClusterName(): string {
  return `roster-${randomBytes(6).toString('hex')}`;
}

/** A nats-server config file's text: loopback listeners, JetStream on, routes to the given ports. */
export function natsConfigText(c: NatsServerConfig): string {
  const lines = [
    `server_name: ${c.name}`,
    `listen: "127.0.0.1:${c.client}"`,
    `http: "127.0.0.1:${c.monitor}"`,
    `jetstream { store_dir: ${JSON.stringify(c.storeDir)}${c.maxFileStore === undefined ? '' : `, max_file_store: ${c.maxFileStore}`} }`,
  ];
  if (c.accountMaxFile !== undefined) {
    lines.push(`accounts { LIMITED: { jetstream: { max_file: ${c.accountMaxFile} }, users: [ { user: limited, password: limited } ] } }`, 'no_auth_user: limited');
  }
  if (c.cluster !== undefined) {
    const routes = c.cluster.routes.map((port) => `"nats-route://127.0.0.1:${port}"`);
    const noAdvertise = c.noAdvertise === true ? ', no_advertise: true' : '';
    lines.push(`cluster { name: ${c.cluster.name}, listen: "127.0.0.1:${c.cluster.port}", routes: [${routes.join(', ')}]${noAdvertise} }`);
  }
  return `${lines.join('\n')}\n`;
}

function spawnServer(conf: string, p: ServerPorts, text: string): NatsServer {
  writeFileSync(conf, text);
  // -js as well as the config block, so JetStream is on whatever the config parser makes of it.
  const proc: ChildProcess = spawn(natsServerBinary(), ['-c', conf, '-js'], { stdio: ['ignore', 'pipe', 'pipe'] });
  let out = '';
  const keep = (d: Buffer): void => {
    out += d.toString();
    if (out.length > 200_000) out = out.slice(-100_000);
  };
  proc.stdout!.on('data', keep);
  proc.stderr!.on('data', keep);
  let alive = true;
  const exited = new Promise<void>((res) => proc.once('exit', () => {
    alive = false;
    res();
  }));
  const signal = async (sig: NodeJS.Signals): Promise<void> => {
    if (!alive) return;
    process.kill(proc.pid!, sig);
    await exited;
  };
  return {
    name: p.name,
    url: `nats://127.0.0.1:${p.client}`,
    monitorUrl: `http://127.0.0.1:${p.monitor}`,
    pid: proc.pid!,
    kill: () => signal('SIGKILL'),
    stop: () => signal('SIGTERM'),
    pause: async () => {
      if (!alive) return;
      process.kill(proc.pid!, 'SIGSTOP');
      // The signal takes effect asynchronously: threads running on another core answer a little longer.
      while (alive && !allThreadsStopped(proc.pid!)) await sleep(1);
    },
    resume: () => { if (alive) process.kill(proc.pid!, 'SIGCONT'); },
    running: () => alive,
    output: () => out,
  };
}

/** True when every thread of the process is in state T (stopped), read from /proc. */
export function allThreadsStopped(pid: number): boolean {
  try {
    return readdirSync(`/proc/${pid}/task`).every((tid) => {
      const stat = readFileSync(`/proc/${pid}/task/${tid}/stat`, 'utf8');
      return stat.slice(stat.lastIndexOf(')') + 2, stat.lastIndexOf(')') + 3) === 'T';
    });
  } catch {
    return false;
  }
}

/** Polls the monitoring port's /healthz until the server (and its JetStream) says ok. */
async function waitHealthy(monitorPort: number, server: NatsServer): Promise<void> {
  const deadline = Date.now() + readyTimeoutMs;
  while (Date.now() < deadline) {
    if (!server.running()) throw new Error(`nats-server ${server.name} exited during start:\n${server.output()}`);
    try {
      const res = await fetch(`http://127.0.0.1:${monitorPort}/healthz`);
      if (res.ok) return;
    } catch {
      // not listening yet
    }
    await sleep(50);
  }
  throw new Error(`nats-server ${server.name} not healthy after ${readyTimeoutMs} ms:\n${server.output()}`);
}

/**
 * How long a cluster may take until it places a stream on all its servers. A meta leader places replicas
 * only on peers it takes to be online. On a loaded machine a freshly started cluster was seen refusing
 * ("no suitable peers for placement") for more than 90 s after every server answered /healthz and
 * account info; such a start is given up and made again with new servers.
 */
export const placementTimeoutMs = 30_000;

/**
 * Whether the cluster places a stream of `replicas` replicas right now: creates a small in-memory
 * stream of that many replicas under a name of its own and deletes it again. A server that answers
 * "no suitable peers for placement" does not yet know every peer.
 */
export async function placesReplicas(jsm: JetStreamManager, replicas: number): Promise<boolean> {
  const name = `PLACEMENT_PROBE_${randomBytes(6).toString('hex')}`;
  try {
    await jsm.streams.add({ name, subjects: [`placement-probe.${name}`], num_replicas: replicas, storage: StorageType.Memory });
  } catch {
    return false;
  }
  await jsm.streams.delete(name).catch(() => undefined);
  return true;
}

/**
 * Ready for Roster: JetStream answers account info (a meta leader exists), and in a cluster a stream of
 * one replica per server can be placed (Roster's log is R3; its first node would otherwise wait for that
 * itself, and fail once its open timeout is over).
 */
export async function waitJetStreamReady(urls: string[]): Promise<void> {
  const nc = await connect({ servers: urls, maxReconnectAttempts: -1, reconnectTimeWait: 100 });
  try {
    const deadline = Date.now() + readyTimeoutMs;
    let jsm: JetStreamManager;
    for (;;) {
      try {
        jsm = await jetstreamManager(nc, { timeout: 1000 });
        await jsm.getAccountInfo();
        break;
      } catch (err) {
        if (Date.now() > deadline) throw new Error(`JetStream not ready after ${readyTimeoutMs} ms: ${String(err)}`);
        await sleep(100);
      }
    }
    if (urls.length === 1) return;
    const placedBy = Date.now() + placementTimeoutMs;
    while (!(await placesReplicas(jsm, urls.length))) {
      if (Date.now() > placedBy) throw new PlacementTimeout(`the cluster placed no stream of ${urls.length} replicas within ${placementTimeoutMs} ms`);
      await sleep(250);
    }
  } finally {
    await nc.close();
  }
}
