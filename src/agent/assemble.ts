/**
 * The agent's parts wired together from a Config: the runtime over a given log, the HTTP API with the
 * WebSocket stream, the gRPC health service, metrics, and cluster membership once the listeners have
 * their ports. `src/main.ts` runs it over the WAL or JetStream and adds the process concerns (data-dir
 * lock, signals, exit codes); tests run it in their own process over the memory log.
 */
import { resolve } from 'node:path';
import type { Logger } from 'pino';
import { ConfigError, type Config, type Limits } from '../config.ts';
import { startGrpcHealthServer, type ConnectionLimits, type GrpcAuth, type GrpcHealthServer, type WatchLimits } from '../grpc/index.ts';
import { RegistryError } from '../domain/errors.ts';
import { AuthGate } from '../http/auth-gate.ts';
import { apiRouter, hostCheck, RateLimiter, startHttpServer, StreamServer, type AgentOperations, type ApiContext, type HttpServer, type HttpServerOptions } from '../http/index.ts';
import { AgentMetrics } from '../metrics/index.ts';
import type { Clock } from '../ports/clock.ts';
import type { ReplicatedLog } from '../ports/log.ts';
import { MembershipSlot, StaticMembership, type Membership } from '../ports/membership.ts';
import { probeFactory } from '../probes/factory.ts';
import { OwnRequests } from '../probes/own-requests.ts';
import { Runtime } from '../runtime/index.ts';
import { ListenError } from '../util/listen-error.ts';
import { forceLeave } from './force-leave.ts';
import type { LogTap } from './log-tap.ts';
import { hostInfo } from './host-info.ts';
import { Profiler } from './profiler.ts';
import type { RecordStore } from './definitions-sync.ts';
import { registerLocalDefinitions } from './local-definitions.ts';
import { rosterVersion } from '../version.ts';
import { consulApiVersion } from '../http/render.ts';
import { configReloader, type ReloadOutcome } from './reload.ts';

/** How long `PUT /v1/agent/leave` leaves its answer to reach the client before the agent stops. */
const leaveAnswerMs = 100;
/** How long a leaving node waits for the log to record that it left before it stops without the record. */
const leaveRecordMs = 5_000;

/** How this node announces itself to the cluster. */
export interface SelfAddresses { name: string; id: string; http: string; grpc: string }

export interface AgentParts {
  /** Not yet opened: the runtime opens it. */
  log: ReplicatedLog;
  clock: Clock;
  nodeId: string;
  logger: Logger;
  /** The logger's destination, which hands its lines to /v1/agent/monitor (log-tap.ts). @default no monitor */
  logTap?: LogTap;
  /** The log cannot be applied: logged and the HTTP server closed already; the caller stops the node. */
  onFatal(err: unknown): void;
  /** Cluster membership, joined once the listeners have their ports. @default this node alone */
  join?: (self: SelfAddresses) => Promise<Membership | undefined>;
  /** Where the record of the config file's definitions is kept between starts (definitions-record.ts). @default nowhere: a start knows only the file */
  definitionsStore?: RecordStore;
  /** Reads the settings again for a reload (throws a ConfigError when they do not validate). @default the start's settings */
  reread?: () => Config;
  /** `PUT /v1/agent/leave` was answered: the caller stops the agent (agent.stop) and exits. @default stop() */
  onLeave?: () => void;
}

export interface Agent {
  runtime: Runtime;
  http: HttpServer;
  grpc: GrpcHealthServer;
  stream: StreamServer;
  membership: Membership;
  metrics: AgentMetrics;
  /** Reads the config file again and applies what can change live (src/agent/reload.ts). */
  reload(): Promise<ReloadOutcome>;
  /**
   * Closes the HTTP server, then gRPC (every status goes NOT_SERVING, watchers are told and their calls end), the runtime, the membership.
   * `leaving` (`PUT /v1/agent/leave`): a cluster node first records in the log that it left, so no node counts it towards the majority again.
   */
  stop(o?: { leaving?: boolean }): Promise<void>;
}

/** Starts the runtime (recovery, local definitions), the HTTP and gRPC listeners and the membership. */
export async function assembleAgent(config: Config, parts: AgentParts): Promise<Agent> {
  const metrics = new AgentMetrics();
  parts.log.observe?.(metrics.logObserver(config.nats.length === 0 ? 'wal' : 'jetstream'));
  const membership = new MembershipSlot(new StaticMembership({ name: config.nodeName, id: parts.nodeId, http: config.httpHost, grpc: config.httpHost }));
  // A node cut off from the log says so to the others, which take over the timers it owned (Membership.owners).
  parts.log.onReachable?.((reachable) => membership.setLogReachable(reachable));
  let http: HttpServer | undefined;
  const ownRequests = new OwnRequests();
  const runtime = startRuntime(config, parts, membership, metrics, () => http?.close(), ownRequests);
  await runtime.start();
  // The file's new definitions are judged by the state quota at start as on a reload.
  runtime.quota.setMax(config.limits.stateBytesMax);
  const definitions = await registerLocalDefinitions(runtime, config, parts.definitionsStore);
  const ctx: ApiContext = {
    runtime, dialect: config.dialect, datacenter: config.datacenter, nodeName: config.nodeName,
    sessionTtlMsMin: config.sessionTtlMsMin, version: rosterVersion, startedAtMs: Date.now(), enableScriptChecks: config.enableScriptChecks,
    serverAddress: `${config.httpHost}:${config.httpPort}`, metrics, uiDir: config.uiDir,
    ...(parts.logTap ? { logs: parts.logTap } : {}),
    // The config object is the one a reload updates in place.
    profiler: new Profiler(() => config.enableDebug),
    host: () => hostInfo(resolve(config.dataDir)),
  };
  // The HTTP server answers before the agent has joined its cluster: reload, leave and force-leave wait for that.
  let assembled: (ops: AgentOperations) => void = () => {};
  ctx.operations = onceAssembled(new Promise((resolve) => { assembled = resolve; }));
  const gate = config.auth ? new AuthGate(config.auth) : undefined;
  // One limiter for the HTTP API and the stream's upgrades: a caller's requests and upgrades share its window.
  const rateLimit = config.rateLimit ? new RateLimiter(config.rateLimit) : undefined;
  const stream = streamServer(config, ctx, gate, rateLimit);
  const httpOpts = httpOptions(config, parts.logger, { ctx, metrics, stream, gate, rateLimit });
  httpOpts.ownRequestsFrom = (address) => ownRequests.from(address);
  http = await listening('--http-port', startHttpServer(httpOpts));
  const server = http;
  ownRequests.listening(config.httpHost, server.port);
  const grpc = await listening('--grpc-port', startGrpcHealthServer({
    host: config.httpHost, port: config.grpcPort, tracker: runtime.serving, logger: parts.logger, watchLimits: watchLimitsOf(config.limits),
    connectionLimits: connectionLimitsOf(config.limits), refused: (reason) => metrics.grpcConnectionRefused(reason),
    ...(gate ? { auth: grpcAuth(gate) } : {}),
  }));
  ctx.serverAddress = `${config.httpHost}:${server.port}`; // the real port when --http-port 0 picked one
  const self = { name: config.nodeName, id: parts.nodeId, http: ctx.serverAddress, grpc: grpc.address };
  // Alone, the node is still itself, now with the ports its servers listen on.
  membership.set(await parts.join?.(self) ?? new StaticMembership(self));
  const applyLimits = limitsApplier(httpOpts, stream, grpc);
  applyLimits(config.limits);
  const tap = parts.logTap;
  const reload = configReloader({
    config, logger: parts.logger, runtime, ctx, definitions, ...(parts.definitionsStore ? { store: parts.definitionsStore } : {}), applyLimits, ...(tap ? { setLogLevel: (level: string) => tap.setLevel(level) } : {}),
    useCertificate: (tls) => server.useCertificate(tls),
  }, parts.reread ?? (() => ({ ...config })));
  metrics.track({
    state: () => runtime.state, writesInFlight: () => runtime.inFlight, members: () => membership.members(),
    streamConnections: () => stream.connections, streamSubscriptions: () => stream.subscriptions, grpcWatchers: () => grpc.watchers(),
    grpcConnections: () => grpc.connections(),
    checkProbes: () => runtime.checkOwner.probeSlots.counts,
    lockQueueDepth: () => runtime.lockQueues.waiting, logLastIndex: () => logLastIndex(runtime), rateLimitCallers: () => rateLimit?.size ?? 0,
  });
  const stop = async (o: { leaving?: boolean } = {}) => {
    server.close();
    await grpc.stop();
    if (o.leaving === true) await recordLeaving(runtime, parts.logger);
    await runtime.stop();
    await membership.stop();
  };
  assembled(agentOperations(reload, parts.onLeave ?? (() => void stop({ leaving: true })), membership, runtime));
  return { runtime, http: server, grpc, stream, membership, metrics, reload, stop };
}

function agentOperations(reload: () => Promise<ReloadOutcome>, onLeave: () => void, membership: Membership, runtime: Runtime): AgentOperations {
  return {
    reload,
    // After the answer has been written: stopping closes the HTTP server.
    leave: () => void setTimeout(onLeave, leaveAnswerMs),
    forceLeave: (node, prune) => forceLeave(membership, runtime.nodeHealth, node, prune),
  };
}

/**
 * The operations as the HTTP server offers them from its first answer: each waits until the agent is
 * assembled (its membership joined, its reload ready), which takes about two seconds in a cluster. A leave
 * asked meanwhile is answered at once and stops the agent once it is assembled.
 */
function onceAssembled(ops: Promise<AgentOperations>): AgentOperations {
  return {
    reload: async () => (await ops).reload(),
    leave: () => void ops.then((o) => o.leave()),
    forceLeave: async (node, prune) => (await ops).forceLeave(node, prune),
  };
}

/** A leaving node's record that it left (NodeHealthOwner.leaving), waited for at most leaveRecordMs; the leave goes on without it. */
async function recordLeaving(runtime: Runtime, logger: Logger): Promise<void> {
  let timer: NodeJS.Timeout | undefined;
  const late = new Promise<'late'>((resolve) => { timer = setTimeout(() => resolve('late'), leaveRecordMs); });
  try {
    if (await Promise.race([runtime.nodeHealth.leaving(), late]) === 'late') {
      logger.warn({ waitedMs: leaveRecordMs }, 'the log did not record in time that this node left; the others record it when gossip tells them');
    }
  } catch (err) {
    logger.warn({ err }, 'recording that this node left failed; the others record it when gossip tells them');
  } finally {
    clearTimeout(timer);
  }
}

function startRuntime(config: Config, parts: AgentParts, membership: Membership, metrics: AgentMetrics, closeHttp: () => void, ownRequests: OwnRequests): Runtime {
  const { log, clock, logger, nodeId } = parts;
  return new Runtime({
    log, clock, logger, nodeName: config.nodeName, nodeId, address: config.httpHost, nodeMeta: nodeMetaOf(config), membership,
    membershipGraceMs: 2 * config.suspicionMs, clustered: config.nats.length > 0, alone: config.nats.length === 0,
    snapshotEveryEntries: config.snapshotEveryEntries,
    // The config object is the one a reload updates in place.
    probeFor: probeFactory(() => config.enableScriptChecks || config.enableLocalScriptChecks, ownRequests),
    checks: {
      reapIntervalMs: config.checkReapIntervalMs, deregisterAfterMsMin: config.checkDeregisterMsMin, probesMax: config.limits.checkProbesMax,
      updateIntervalMs: config.checkUpdateIntervalMs,
    },
    writeTimeoutMs: config.writeTimeoutMs,
    observer: metrics,
    onFatal: (err) => {
      logger.fatal({ err }, 'stopping: the log cannot be applied');
      closeHttp();
      parts.onFatal(err);
    },
  });
}

/** The gRPC port's authentication: the HTTP gate's bearer tokens, read from a call's metadata. */
/**
 * The node's metadata in the catalog: node_meta, and in the consul dialect the two keys a Consul agent
 * adds to its own (its network segment, none, and the Consul version this dialect answers as).
 */
function nodeMetaOf(config: Config): Record<string, string> {
  if (config.dialect !== 'consul') return config.nodeMeta;
  return { ...config.nodeMeta, 'consul-network-segment': '', 'consul-version': consulApiVersion };
}

function grpcAuth(gate: AuthGate): GrpcAuth {
  const noQuery = new URLSearchParams();
  return {
    identify: (headers) => gate.bearer(headers, noQuery).catch((err: unknown) => {
      if (err instanceof RegistryError) return err.message;
      throw err;
    }),
  };
}

function streamServer(config: Config, ctx: ApiContext, gate: AuthGate | undefined, rateLimit: RateLimiter | undefined): StreamServer {
  return new StreamServer(ctx, {
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
}

interface Front { ctx: ApiContext; metrics: AgentMetrics; stream: StreamServer; gate: AuthGate | undefined; rateLimit: RateLimiter | undefined }

/** The limits a reload changes live: read by the HTTP server at each request, by the stream at each use, by gRPC at each Watch. */
const watchLimitsOf = (limits: Limits): WatchLimits => ({ watchMax: limits.grpcWatchMax, watchMaxPerClient: limits.grpcWatchMaxPerClient });
const connectionLimitsOf = (limits: Limits): ConnectionLimits => ({
  connsMax: limits.grpcMaxConns, connsMaxPerClient: limits.grpcMaxConnsPerClient, handshakeTimeoutMs: limits.grpcHandshakeTimeoutMs,
});

function limitsApplier(httpOpts: HttpServerOptions<ApiContext>, stream: StreamServer, grpc: GrpcHealthServer): (limits: Limits) => void {
  return (limits) => {
    grpc.setWatchLimits(watchLimitsOf(limits));
    grpc.setConnectionLimits(connectionLimitsOf(limits));
    httpOpts.ctx.runtime.quota.setMax(limits.stateBytesMax);
    httpOpts.ctx.runtime.checkOwner.probeSlots.setMax(limits.checkProbesMax);
    httpOpts.requestsInFlightPerClientMax = limits.httpMaxConnsPerClient;
    httpOpts.bodyTimeoutMs = limits.requestBodyTimeoutMs;
    httpOpts.bodyBytesMax = limits.kvMaxValueSize;
    httpOpts.answerBytesMax = limits.httpAnswerBytesMax;
    httpOpts.writeIdleMs = limits.httpWriteIdleTimeoutMs;
    stream.setLimits({
      connectionsPerClientMax: limits.streamMaxConnsPerClient, connectionsMax: limits.streamMaxConns,
      pendingItemsMax: limits.streamHeldItemsMax, snapshotBytesMax: limits.streamSnapshotBytesMax,
    });
  };
}

function httpOptions(config: Config, logger: Logger, { ctx, metrics, stream, gate, rateLimit }: Front): HttpServerOptions<ApiContext> {
  const { runtime } = ctx;
  return {
    host: config.httpHost, port: config.httpPort, router: apiRouter(config.dialect), dialect: config.dialect, logger, ctx, observer: metrics,
    hostAllowed: hostCheck(config.httpAllowedHosts, config.httpHost),
    websockets: [{ path: '/v1/stream', behavior: stream.behavior(), closeAll: () => stream.closeAll() }],
    timeOfIndex: (index) => runtime.changes.timeOf(index),
    ...(gate ? { authorize: (req) => gate.check(req), identify: (headers, query) => gate.identify(headers, query) } : {}),
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
  };
}

/** The log's last index as this node knows it: a JetStream stream's last sequence as last asked, else the log's own. */
function logLastIndex(runtime: Runtime): number {
  const status = runtime.logStatus();
  return status?.stream?.lastSeq ?? status?.lastIndex ?? runtime.state.index;
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
