/**
 * The composition root: the one file that knows every layer. It reads the settings, opens the
 * embedded log in the data dir, starts the runtime (recovery, TTL owners) and the HTTP front end,
 * logs `roster listening http=<url>` when ready, and shuts down cleanly on SIGTERM/SIGINT.
 */
import { randomUUID } from 'node:crypto';
import { mkdirSync, readFileSync, realpathSync, writeFileSync } from 'node:fs';
import { join, resolve } from 'node:path';
import { fileURLToPath } from 'node:url';
import { setFlagsFromString } from 'node:v8';
import { pino } from 'pino';
import { ConfigError, loadConfig, usage, type Config, type ConfigDefaults } from './config.ts';
import { RegistryError } from './domain/errors.ts';
import { parseCheck, parseService } from './http/definitions.ts';
import { apiRouter, loadUws, RateLimiter, startHttpServer, StreamServer, type ApiContext, type HttpServer } from './http/index.ts';
import { startGrpcHealthServer } from './grpc/index.ts';
import { probeFor } from './probes/factory.ts';
import { AgentMetrics } from './metrics/index.ts';
import { AuthGate } from './http/auth-gate.ts';
import { SystemClock } from './ports/clock.ts';
import type { ReplicatedLog } from './ports/log.ts';
import { MembershipSlot, StaticMembership, type Membership } from './ports/membership.ts';
import type { Logger } from 'pino';
import { Runtime } from './runtime/index.ts';
import { isLogDamaged, WalLog } from './wal/index.ts';
import { DataDirLocked, lockDataDir } from './util/data-dir-lock.ts';
import { ListenError } from './util/listen-error.ts';

const version = '0.1.0';

// `?filter=` takes `matches` patterns from clients: let V8 fall back to its linear-time engine when a
// pattern backtracks excessively, so a hostile pattern cannot stall the event loop (RE2 is linear too).
setFlagsFromString('--enable-experimental-regexp-engine-on-excessive-backtracks');

/** The node id lives beside the log so a restarted node keeps its identity. */
function nodeIdOf(dataDir: string): string {
  const file = join(dataDir, 'node-id');
  try {
    return readFileSync(file, 'utf8').trim();
  } catch {
    const id = randomUUID();
    writeFileSync(file, `${id}\n`);
    return id;
  }
}

/**
 * Registers the config file's services and checks as local definitions (script checks allowed with
 * enable_local_script_checks). A definition that does not validate stops the start with its reason. On a
 * full disk they are registered once the log can store writes again, as this node's own registration is.
 */
async function registerLocalDefinitions(runtime: Runtime, config: Config): Promise<void> {
  const local = { scriptsAllowed: config.enableScriptChecks || config.enableLocalScriptChecks, origin: 'local' as const };
  const node = config.nodeName;
  const services = config.services.map((raw) => definition('service', () => parseService(raw, local)));
  const checks = config.checks.map((raw) => definition('check', () => parseCheck(raw, local)));
  if (services.length === 0 && checks.length === 0) return;
  await runtime.onceWritable('the config file\'s services and checks', async () => {
    for (const parsed of services) {
      const result = await runtime.propose({ t: 'service.register', node, service: parsed.service, checks: parsed.checks, replaceExistingChecks: true });
      if (!result.ok) throw new ConfigError(`--config-file: service "${parsed.service.id}" was not registered: ${result.reason}`);
    }
    for (const check of checks) {
      const result = await runtime.propose({ t: 'check.register', node, check });
      if (!result.ok) throw new ConfigError(`--config-file: check "${check.checkId}" was not registered: ${result.reason}${result.detail ? ` ${result.detail}` : ''}`);
    }
  });
}

function definition<T>(what: string, parse: () => T): T {
  try {
    return parse();
  } catch (err) {
    if (!(err instanceof RegistryError)) throw err;
    const details = err.details ? ` ${JSON.stringify(err.details)}` : '';
    throw new ConfigError(`--config-file: invalid ${what} definition: ${err.message}${details}`);
  }
}

/** The log: the embedded WAL on one node; with --nats, the JetStream stream shared by the cluster. */
async function openLog(config: Config, dataDir: string, clock: SystemClock, logger: Logger): Promise<ReplicatedLog> {
  if (config.nats.length === 0) return new WalLog({ dir: dataDir, clock, logger });
  const { JetStreamLog } = await import('../cluster/index.ts');
  return new JetStreamLog({
    servers: config.nats, replicas: config.replicas, clock, nodeName: config.nodeName, logger,
    // The node's state has left the log's: stop, so that a restart replays the stream (exit code 70, as a
    // log that cannot be applied; a supervisor restarts it).
    onDiverged: (err) => {
      logger.fatal({ err }, 'stopping: this node\'s state no longer follows the log');
      process.exit(70);
    },
  });
}

/** Cluster mode: gossip membership announcing this node's addresses (loaded only when needed). */
async function joinCluster(config: Config, self: { name: string; id: string; http: string; grpc: string }, logger: Logger): Promise<Membership | undefined> {
  if (config.nats.length === 0) return undefined;
  const { GossipMembership } = await import('../cluster/gossip-membership.ts');
  const gossip = new GossipMembership({
    self, listen: toMultiaddr(config.gossipListen), seeds: config.join, suspicionMs: config.suspicionMs,
    logger,
  });
  await gossip.start();
  logger.info({ gossip: gossip.addresses() }, 'gossip membership started');
  return gossip;
}

/** `host:port` → `/ip4/host/tcp/port`; a multiaddr is kept as given. */
function toMultiaddr(address: string): string {
  if (address.startsWith('/')) return address;
  const m = /^(.*):(\d+)$/.exec(address);
  if (!m) throw new ConfigError(`--gossip-listen: "${address}" is neither host:port nor a multiaddr`);
  return `/ip4/${m[1]}/tcp/${m[2]}`;
}

/** A listener that could not bind stops the start naming the flag that chose its port (exit 2, as a config error). */
async function listening<T>(flag: string, started: Promise<T>): Promise<T> {
  try {
    return await started;
  } catch (err) {
    if (err instanceof ListenError) throw new ConfigError(`${flag} ${err.port}: ${err.message}`);
    throw err;
  }
}

async function run(config: Config): Promise<void> {
  const logger = pino({ level: config.logLevel, base: { node: config.nodeName } });
  loadUws(); // fail now, with a clear message, if the native binding does not load
  const dataDir = resolve(config.dataDir);
  mkdirSync(dataDir, { recursive: true });
  // Before anything in the data dir is read or written: two agents on one log would interleave its frames.
  lockDataDir(dataDir);
  const clock = new SystemClock();
  const nodeId = nodeIdOf(dataDir);
  const log = await openLog(config, dataDir, clock, logger);
  const metrics = new AgentMetrics();
  log.observe?.(metrics.logObserver(config.nats.length === 0 ? 'wal' : 'jetstream'));
  const membership = new MembershipSlot(new StaticMembership({ name: config.nodeName, id: nodeId, http: config.httpHost, grpc: config.httpHost }));
  let http: HttpServer | undefined;
  const runtime = new Runtime({
    log, clock, logger, nodeName: config.nodeName, nodeId, address: config.httpHost, membership,
    membershipGraceMs: 2 * config.suspicionMs,
    snapshotEveryEntries: config.snapshotEveryEntries,
    probeFor,
    checks: { reapIntervalMs: config.checkReapIntervalMs, deregisterAfterMsMin: config.checkDeregisterMsMin },
    observer: metrics,
    onFatal: (err) => {
      logger.fatal({ err }, 'stopping: the log cannot be applied');
      http?.close();
      process.exit(70);
    },
  });
  await runtime.start();
  await registerLocalDefinitions(runtime, config);
  const ctx: ApiContext = {
    runtime, dialect: config.dialect, datacenter: config.datacenter, nodeName: config.nodeName,
    sessionTtlMsMin: config.sessionTtlMsMin, version, startedAtMs: Date.now(), enableScriptChecks: config.enableScriptChecks,
    serverAddress: `${config.httpHost}:${config.httpPort}`, metrics, uiDir: config.uiDir,
  };
  const gate = config.auth ? new AuthGate(config.auth) : undefined;
  // One limiter for the HTTP API and the stream's upgrades: a caller's requests and upgrades share its window.
  const rateLimit = config.rateLimit ? new RateLimiter(config.rateLimit) : undefined;
  const stream = new StreamServer(ctx, {
    bookmarkIntervalMs: config.streamBookmarkIntervalMs,
    connectionsPerClientMax: config.limits.streamMaxConnsPerClient,
    bufferedBytesSoft: config.limits.streamBufferedBytesSoft,
    bufferedBytesHard: config.limits.streamBufferedBytesHard,
    pendingItemsMax: config.limits.streamHeldItemsMax,
    connectionsMax: config.limits.streamMaxConns,
    snapshotBytesMax: config.limits.streamSnapshotBytesMax,
    ...(gate ? { auth: gate } : {}),
    ...(rateLimit ? { rateLimit } : {}),
  });
  http = await listening('--http-port', startHttpServer({
    host: config.httpHost, port: config.httpPort, router: apiRouter(), dialect: config.dialect, logger, ctx, observer: metrics,
    websockets: [{ path: '/v1/stream', behavior: stream.behavior(), closeAll: () => stream.closeAll() }],
    timeOfIndex: (index) => runtime.changes.timeOf(index),
    ...(gate ? { authorize: (req) => gate.check(req) } : {}),
    ...(rateLimit ? { rateLimit } : {}),
    overloaded: () => runtime.inFlight >= config.writesInFlightMax,
    requestsInFlightPerClientMax: config.limits.httpMaxConnsPerClient,
    bodyTimeoutMs: config.limits.requestBodyTimeoutMs,
    bodyBytesMax: config.limits.kvMaxValueSize,
    ...(config.tls ? { tls: config.tls } : {}),
    leader: () => {
      const l = runtime.leadership();
      return { knownLeader: runtime.writable && (l.peers.length === 0 || l.leader !== undefined), lastContactMs: l.lastContactMs };
    },
  }));
  const server = http;
  const grpc = await listening('--grpc-port', startGrpcHealthServer({ host: config.httpHost, port: config.grpcPort, tracker: runtime.serving, logger }));
  ctx.serverAddress = `${config.httpHost}:${server.port}`; // the real port when --http-port 0 picked one
  const gossip = await joinCluster(config, { name: config.nodeName, id: nodeId, http: `${config.httpHost}:${server.port}`, grpc: grpc.address }, logger);
  if (gossip !== undefined) membership.set(gossip);
  metrics.track({
    state: () => runtime.state, writesInFlight: () => runtime.inFlight, members: () => membership.members(),
    streamConnections: () => stream.connections, streamSubscriptions: () => stream.subscriptions, grpcWatchers: () => grpc.watchers(),
  });
  logger.info({ dataDir, dialect: config.dialect, index: runtime.state.index, cluster: config.nats.length > 0 }, `roster listening http=${server.url} grpc=${grpc.address}`);

  let stopping = false;
  const shutdown = (signal: string) => {
    if (stopping) return;
    stopping = true;
    logger.info({ signal }, 'shutting down');
    server.close();
    // gRPC first: every status goes NOT_SERVING, watchers are told and their calls end.
    grpc.stop().then(() => runtime.stop()).then(() => membership.stop()).then(
      () => { logger.info('stopped'); logger.flush(); process.exit(0); },
      (err: unknown) => { logger.error({ err }, 'shutdown failed'); logger.flush(); process.exit(1); },
    );
  };
  process.on('SIGTERM', () => shutdown('SIGTERM'));
  process.on('SIGINT', () => shutdown('SIGINT'));
}

/**
 * The agent's entry: `npm start` and `roster agent` both come here. `defaults` replace built-in
 * defaults (flags, environment and the config file still win), for `roster agent --dev`.
 */
export function main(argv: string[], env: NodeJS.ProcessEnv = process.env, defaults: ConfigDefaults = {}): void {
  let config;
  try {
    config = loadConfig(argv, env, defaults);
  } catch (err) {
    if (err instanceof ConfigError) {
      process.stderr.write(`roster: ${err.message}\n${usage}\n`);
      process.exit(2);
    }
    throw err;
  }
  if (config === 'help') {
    process.stdout.write(`${usage}\n`);
    return;
  }
  run(config).catch((err: unknown) => {
    process.stderr.write(`roster: ${err instanceof Error ? err.message : String(err)}\n`);
    // 2: the start was refused for a reason the operator must fix (config, data dir or port in use, a damaged log).
    process.exit(err instanceof ConfigError || err instanceof DataDirLocked || isLogDamaged(err) ? 2 : 1);
  });
}

/** True when this file is what node was asked to run (`node --import tsx src/main.ts`), not an import of `roster agent`. */
function isEntryModule(): boolean {
  try {
    return realpathSync(process.argv[1] ?? '') === realpathSync(fileURLToPath(import.meta.url));
  } catch {
    return false;
  }
}

if (isEntryModule()) main(process.argv.slice(2));
