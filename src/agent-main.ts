/**
 * The composition root. It reads the settings, locks the data dir, opens the log (the embedded WAL in
 * the data dir, or JetStream with --nats), has `src/agent/assemble.ts` start the runtime and the
 * listeners, logs `roster listening http=<url> grpc=<address>` when ready, shuts down cleanly on
 * SIGTERM/SIGINT and after `PUT /v1/agent/leave`, reloads the config file on SIGHUP (one held during the
 * start is dealt with once the agent is ready: src/early-hangup.ts), and turns failures into exit codes.
 */
import { join, resolve } from 'node:path';
import type { Logger } from 'pino';
import { assembleAgent, type SelfAddresses } from './agent/assemble.ts';
import { dataDirRecordStore } from './agent/definitions-record.ts';
import { LogOutput } from './agent/log-output.ts';
import { createLogger } from './agent/logger.ts';
import { checkDataDirMode, checkDataDirPath, foreignLogRefusal, joinedLog, markClusterDataDir, markEmbeddedDataDir } from './agent/data-dir-mode.ts';
import { nodeIdOf, writeNodeId } from './agent/node-id.ts';
import { ConfigError, loadConfig, usage, type Config, type ConfigDefaults } from './config.ts';
import { handOverHangups, holdHangups, readingConfiguration } from './early-hangup.ts';
import { BindingUnavailable, loadUws } from './http/index.ts';
import { SystemClock } from './ports/clock.ts';
import type { ReplicatedLog } from './ports/log.ts';
import { isWriteTimedOut } from './ports/log-errors.ts';
import type { Membership } from './ports/membership.ts';
import type { IdentityHolder, SharedIdentity } from '../cluster/identity-clash.ts';
import { isLogDamaged, WalLog } from './wal/index.ts';
import { DataDirLocked, DataDirUnusable, dataDirFault, keepLock, lockDataDir } from './util/data-dir-lock.ts';
import { listenErrorFor } from './util/listen-error.ts';
import { makeDirs } from './util/make-dirs.ts';

/**
 * The log: the embedded WAL on one node (`reclaimDir`: what the agent puts back in a data dir made again
 * after it was removed); with --nats, the JetStream stream shared by the cluster, which must be the log
 * the data dir's node joined before (`joined`, when it records one).
 */
async function openLog(config: Config, dataDir: string, joined: string | undefined, clock: SystemClock, logger: Logger, reclaimDir: () => Promise<void>): Promise<ReplicatedLog> {
  if (config.nats.length === 0) return new WalLog({ dir: dataDir, clock, logger, reclaimDir });
  const { JetStreamLog } = await import('../cluster/index.ts');
  return new JetStreamLog({
    servers: config.nats, auth: config.natsAuth, replicas: config.replicas, clock, nodeName: config.nodeName, logger, joined,
    // Cut off from the log for twice the suspicion timeout, a node stops owning timers (reach-watch.ts).
    unreachableAfterMs: 2 * config.suspicionMs,
    // The node's state has left the log's: stop, so that a restart replays the stream (exit code 70, as a
    // log that cannot be applied; a supervisor restarts it).
    onDiverged: (err) => {
      logger.fatal({ err }, 'stopping: this node\'s state no longer follows the log');
      process.exit(70);
    },
  });
}

/** Cluster mode: gossip membership announcing this node's addresses (loaded only when needed). */
async function joinCluster(config: Config, self: SelfAddresses, log: ReplicatedLog, logger: Logger): Promise<Membership | undefined> {
  if (config.nats.length === 0) {
    const ignored = [...(config.join.length > 0 ? ['--join'] : []), ...(config.gossipKey !== undefined ? ['encrypt'] : [])];
    if (ignored.length > 0) logger.warn({ ignored }, 'cluster settings given without --nats are ignored: this agent runs alone on its own log');
    return undefined;
  }
  const { GossipMembership } = await import('../cluster/gossip-membership.ts');
  const gossip = new GossipMembership({
    self, listen: toMultiaddr(config.gossipListen), seeds: config.join, suspicionMs: config.suspicionMs,
    // The log is what makes nodes one cluster: nodes that share it are members of each other, whatever else differs.
    cluster: log.identity?.(), ...(config.gossipKey ? { key: config.gossipKey } : {}), logger,
    identityTaken: (shared, other) => {
      logger.fatal({ name: self.name, id: self.id, other }, identityTakenText(shared, self, other, join(resolve(config.dataDir), 'node-id')));
      process.exit(2);
    },
  });
  await gossip.start().catch(async (err: unknown) => { throw await gossipListenError(config.gossipListen, err); });
  logger.info({ gossip: gossip.addresses() }, 'gossip membership started');
  return gossip;
}

/** Why this node stops: another node, started first, shares its name, its node ID or both (cluster/identity-clash.ts). */
function identityTakenText(shared: SharedIdentity, self: SelfAddresses, other: IdentityHolder, nodeIdFile: string): string {
  if (shared === 'name') {
    return `another node of the cluster runs under this node name and started first (node ID ${other.id}, HTTP ${other.http}): stopping, `
      + 'as the two would take the name from each other in the catalog; give each node its own node_name (--node-name)';
  }
  if (shared === 'id') {
    return `another node of the cluster runs with this node's ID ${self.id} under the name ${other.name} and started first (HTTP ${other.http}): `
      + 'stopping, as each would remove the other\'s node from the catalog; this data dir looks copied from that node\'s (a cloned machine or data dir): '
      + `remove ${nodeIdFile} to give this node an ID of its own`;
  }
  return `another process runs as this node (name ${self.name}, node ID ${self.id}) and started first (HTTP ${other.http}, at ${other.startedAt}): `
    + 'stopping, as the two would act as one node; this machine looks cloned with its configuration and data dir: give it its own node_name '
    + `(--node-name) and remove ${nodeIdFile} to give it an ID of its own`;
}

/** A gossip start that failed because its address does not bind, as the other ports say it (exit 2); else `err`. */
async function gossipListenError(address: string, err: unknown): Promise<unknown> {
  const m = /^\/ip[46]\/([^/]+)\/tcp\/(\d+)$/.exec(toMultiaddr(address));
  if (m === null || Number(m[2]) === 0) return err;
  const refused = await listenErrorFor(m[1]!, Number(m[2]));
  return refused.code === undefined ? err : new ConfigError(`--gossip-listen ${address}: ${refused.message}`);
}

/**
 * The ports this node will listen on, given by number, are free (exit 2 naming the flag if not), checked
 * before the log is opened: the node registers itself in the catalog as it starts, before it listens, and
 * a start stopped after that left a node in the catalog that never ran (in a cluster, one more node that
 * counts towards the majority the failure detector needs). A port taken between this check and the
 * listen still stops the start, as before.
 */
async function checkAddressesFree(config: Config): Promise<void> {
  const gossip = /^\/ip[46]\/([^/]+)\/tcp\/(\d+)$/.exec(config.nats.length > 0 ? toMultiaddr(config.gossipListen) : '');
  // Each as its flag names it in the refusal (the one the listener's own refusal names it by).
  const fixed: Array<{ named: string; host: string; port: number }> = [
    { named: `--http-port ${config.httpPort}`, host: config.httpHost, port: config.httpPort },
    { named: `--grpc-port ${config.grpcPort}`, host: config.httpHost, port: config.grpcPort },
    ...(gossip === null ? [] : [{ named: `--gossip-listen ${config.gossipListen}`, host: gossip[1]!, port: Number(gossip[2]) }]),
  ];
  for (const { named, host, port } of fixed) {
    if (port === 0) continue;
    const refused = await listenErrorFor(host, port);
    if (refused.code !== undefined) throw new ConfigError(`${named}: ${refused.message}`);
  }
}

/** `host:port` → `/ip4/host/tcp/port`; a multiaddr is kept as given. */
function toMultiaddr(address: string): string {
  if (address.startsWith('/')) return address;
  const m = /^(.*):(\d+)$/.exec(address);
  if (!m) throw new ConfigError(`--gossip-listen: "${address}" is neither host:port nor a multiaddr`);
  return `/ip4/${m[1]}/tcp/${m[2]}`;
}

/** Creates the data dir if need be; a path that cannot be one is the operator's to fix (exit 2). */
function makeDataDir(dataDir: string): void {
  checkDataDirPath(dataDir);
  try {
    makeDirs(dataDir);
  } catch (err) {
    const code = (err as NodeJS.ErrnoException).code;
    const why = code === 'EEXIST' || code === 'ENOTDIR' ? 'it, or a directory above it, is a file' : (err as Error).message;
    throw new ConfigError(`--data-dir ${dataDir}: cannot be used as the data dir: ${why}`);
  }
}

/**
 * A cluster node's data dir removed or moved away while it runs: its lock, node ID and cluster marker are
 * written at the path again, so that a later start there keeps the node's ID, is refused without --nats,
 * and a second agent is refused. The registry is in the stream: nothing else was there.
 */
async function remakeClusterDataDir(dataDir: string, reclaim: () => Promise<void>, joined: string | undefined, logger: Logger): Promise<void> {
  try {
    makeDirs(dataDir);
    await reclaim();
    await markClusterDataDir(dataDir, joined);
    logger.warn({ dataDir }, 'the data dir was removed or moved while the agent ran: its lock, node ID and cluster marker are written there again');
  } catch (err) {
    logger.error({ err, dataDir }, 'the data dir was removed or moved while the agent ran and could not be made again; retrying in a second');
  }
}

async function run(config: Config, reread: () => Config): Promise<void> {
  const { logger, tap: logTap, output } = createLogger(config);
  loadUws(); // fail now, with a clear message, if the native binding does not load
  const dataDir = resolve(config.dataDir);
  makeDataDir(dataDir);
  // Before anything in the data dir is read or written: two agents on one log would interleave its frames.
  const lock = lockDataDir(dataDir);
  checkDataDirMode(dataDir, config.nats.length > 0);
  // The log a cluster node joined before: the one it must find again (undefined: a new node, or an earlier release's dir).
  const joined = config.nats.length > 0 ? joinedLog(dataDir) : undefined;
  let log: ReplicatedLog | undefined;
  const clock = new SystemClock();
  const nodeId = await nodeIdOf(dataDir);
  // What the agent puts back in a data dir made again: its lock, its node ID and (a single node) the mark of its log.
  const reclaim = async () => {
    lock.reclaim();
    await writeNodeId(dataDir, nodeId);
    if (config.nats.length === 0) await markEmbeddedDataDir(dataDir);
  };
  keepLock(lock, {
    taken: (err) => {
      logger.fatal({ err: err.message, dataDir }, 'another agent has taken this data dir (its LOCK was removed by hand): stopping, so that one agent writes its log');
      process.exit(70);
    },
    // The embedded log makes its dir again itself, with the state it holds; a cluster node keeps only these.
    ...(config.nats.length > 0 ? { gone: () => remakeClusterDataDir(dataDir, reclaim, log?.identity?.() ?? joined, logger) } : {}),
  });
  await checkAddressesFree(config);
  log = await openLog(config, dataDir, joined, clock, logger, reclaim);
  // A leave asked before the shutdown below is in place is carried out once it is.
  let asked: string | undefined;
  let shutdown: (signal: string) => void = (signal) => { asked = signal; };
  const agent = await assembleAgent(config, {
    log, clock, nodeId, logger, logTap, reread, definitionsStore: dataDirRecordStore(dataDir, logger),
    onFatal: () => process.exit(70),
    join: (self) => joinCluster(config, self, log, logger),
    onLeave: () => shutdown('leave'),
  });
  const { runtime, http, grpc } = agent;
  // A cluster node needs nothing else of its local disk: a full one does not stop it here.
  if (config.nats.length > 0) {
    await markJoined(dataDir, log.identity?.(), logger);
  } else {
    await markEmbeddedDataDir(dataDir).catch((err: unknown) => logger.warn({ err, dataDir }, 'could not mark the data dir as holding the embedded log; a start that finds it gone will not be refused'));
  }
  shutdown = shutdownOf(agent, logger, output);
  process.on('SIGTERM', () => shutdown('SIGTERM'));
  process.on('SIGINT', () => shutdown('SIGINT'));
  // Announced only now: a supervisor that stops the agent as soon as it reads this line must find the
  // signal handled (before process.on, SIGTERM's default action ends the process with no exit code).
  // Written at every log level but silent: it is what a supervisor or a person waits for.
  logTap.always((l) => l.info({ dataDir, dialect: config.dialect, index: runtime.state.index, cluster: config.nats.length > 0 }, `roster listening http=${http.url} grpc=${grpc.address}`));
  if (asked !== undefined) shutdown(asked);
  // A reload that fails leaves the agent running as it was; the reason is logged.
  const reload = (why: string) => {
    logger.info({ signal: 'SIGHUP' }, why);
    agent.reload().catch((err: unknown) => logger.error({ err: err instanceof ConfigError ? err.message : err }, 'reload failed; the configuration in effect is unchanged'));
  };
  // SIGHUPs of the start were held (early-hangup.ts): one after the file was read may be about a newer file.
  const early = handOverHangups(() => reload('reloading the configuration'));
  if (early.afterRead > 0) {
    reload('reloading the configuration: SIGHUP came while the agent started, after it had read its configuration');
  } else if (early.beforeRead > 0) {
    logger.info({ signal: 'SIGHUP' }, 'SIGHUP came while the agent started, before it read its configuration: the configuration read is in effect');
  }
}

/** Records in the data dir the log this cluster node joined; a failure is logged, the node serves on. */
async function markJoined(dataDir: string, log: string | undefined, logger: Logger): Promise<void> {
  const done = await markClusterDataDir(dataDir, log).catch((err: unknown) => {
    logger.warn({ err, dataDir }, 'could not mark the data dir as a cluster node\'s; a start without --nats on it, or on another log, will not be refused');
  });
  if (done === 'adopted') {
    logger.info({ dataDir, log }, 'the data dir recorded no log (an earlier release marked it): it now records the log found, '
      + 'and a later start whose --nats servers hold another log, or none, stops');
  }
}

/**
 * Stops the agent once, on a signal or a leave, and exits 0 (1 when the stop failed) once the log reader
 * has taken the lines still queued, or `logDrainMsMax` has passed (what it had not taken is lost, and
 * standard error says so). A second SIGTERM or SIGINT while it stops ends the process at once, with 1.
 */
function shutdownOf(agent: { stop(o?: { leaving?: boolean }): Promise<void> }, logger: Logger, output: LogOutput): (signal: string) => void {
  let stopping = false;
  const exit = async (code: number) => {
    const held = await output.settle();
    if (held > 0) process.stderr.write(LogOutput.lostText(held));
    process.exit(code);
  };
  return (signal) => {
    if (stopping) {
      if (signal === 'leave') return;
      process.stderr.write(`roster: ${signal} while stopping: exiting now, without waiting for the stop to finish\n`);
      process.exit(1);
    }
    stopping = true;
    logger.info({ signal }, 'shutting down');
    agent.stop({ leaving: signal === 'leave' }).then(
      () => { logger.info('stopped'); return exit(0); },
      (err: unknown) => { logger.error({ err }, 'shutdown failed'); return exit(1); },
    );
  };
}

/**
 * The one place a failed start is written for the operator: `roster: <reason>`, then optionally the
 * usage. Error messages carry only the reason; the prefix is added here and nowhere else.
 */
function printFailure(err: unknown, usageText?: string): void {
  // The agent's own writes at start (its node, the file's services) are bounded by write_timeout too.
  const reason = isWriteTimedOut(err) ? `a write of the start: ${err.message} (write_timeout)` : err instanceof Error ? err.message : String(err);
  process.stderr.write(`roster: ${reason}\n${usageText === undefined ? '' : `${usageText}\n`}`);
}

/**
 * The agent's entry: `npm start` and `roster agent` both come here. `defaults` replace built-in
 * defaults (flags, environment and the config file still win), for `roster agent --dev`.
 */
export function main(argv: string[], env: NodeJS.ProcessEnv = process.env, defaults: ConfigDefaults = {}): void {
  // SIGHUP must never stop the agent: until it is ready, one is held (src/main.ts holds them from its start).
  holdHangups();
  readingConfiguration();
  let config;
  try {
    config = loadConfig(argv, env, defaults);
  } catch (err) {
    if (err instanceof ConfigError) {
      printFailure(err, err.commandLine ? usage : undefined);
      process.exit(2);
    }
    throw err;
  }
  if (config === 'help') {
    process.stdout.write(`${usage}\n`);
    return;
  }
  // A reload reads the same flags and environment, and the config file again.
  const dataDir = config.dataDir;
  run(config, () => loadConfigOrThrow(argv, env, defaults)).catch((failure: unknown) => {
    // A filesystem error on a path inside the data dir (a file where the log keeps a directory, a segment
    // the agent may not open) is the operator's to mend, as a lock it cannot take is.
    // A log other than the one the data dir's node joined (--nats naming another cluster's servers) too.
    const err = dataDirFault(failure, dataDir) ?? foreignLogRefusal(failure, resolve(dataDir), config.nats) ?? failure;
    printFailure(err);
    // 2: the start was refused for a reason the operator must fix (config, data dir or port in use, a damaged
    // log, a native binding that does not load on this Node.js and C library).
    const refused = err instanceof ConfigError || err instanceof DataDirLocked || err instanceof DataDirUnusable || isLogDamaged(err) || err instanceof BindingUnavailable;
    process.exit(refused ? 2 : 1);
  });
}

function loadConfigOrThrow(argv: string[], env: NodeJS.ProcessEnv, defaults: ConfigDefaults): Config {
  const config = loadConfig(argv, env, defaults);
  if (config === 'help') throw new ConfigError('--help is not a configuration');
  return config;
}
