/**
 * Reloading the config file without a restart (SIGHUP, `PUT /v1/agent/reload`), as Consul's agent does.
 * The file, environment and flags are read again and validated whole before anything changes, the file's
 * services and checks judged against the registry too (definitions-sync.ts): a file that does not parse or
 * validate, or whose definitions the registry would refuse, leaves the agent as it was, and the reload fails
 * with the reason. Then a changed HTTPS certificate and key are put in use (their files read again), the
 * file's services and checks are brought in line with it under the file's state quota, and only once they
 * went through do the other settings that can change while running take effect — the log level,
 * enable_script_checks, enable_debug, session_ttl_min, check_update_interval, writes_in_flight_max,
 * rate_limit's requests and period, the limits (but the stream's buffered-bytes ones). Every other changed
 * setting (ports, data dir, node name, cluster addresses, …) is left as it was, named in a warning.
 */
import type { Logger } from 'pino';
import { ConfigError, type Config, type Limits } from '../config.ts';
import type { ApiContext } from '../http/index.ts';
import type { Runtime } from '../runtime/index.ts';
import { judgeSync, planSync, registeredOn, runSync, type DefinitionsRecord, type RecordStore, type SyncPlan } from './definitions-sync.ts';
import { parseLocalDefinitions } from './local-definitions.ts';

/** Settings a reload applies to the running agent. */
const liveKeys: ReadonlySet<keyof Config> = new Set<keyof Config>([
  'logLevel', 'services', 'checks', 'enableScriptChecks', 'enableLocalScriptChecks', 'enableDebug', 'writesInFlightMax', 'rateLimit', 'limits',
  'sessionTtlMsMin', 'tls', 'checkUpdateIntervalMs',
]);
/** Limits a reload leaves as they are: uWS's backpressure cut-off of the stream is derived from them at start. */
const restartOnlyLimits: readonly (keyof Limits)[] = ['streamBufferedBytesSoft', 'streamBufferedBytesHard'];

/** What a reload changes: the running agent's parts. */
export interface ReloadTarget {
  /** The running settings; live ones are updated in place (the agent's closures read them). */
  config: Config;
  logger: Logger;
  runtime: Runtime;
  ctx: ApiContext;
  /** What came from the config file (definitions-sync.ts), kept true by every sync. */
  definitions: DefinitionsRecord;
  /** Where that record is kept between starts. @default nowhere */
  store?: RecordStore;
  /** Puts new limits in force (those of restartOnlyLimits excepted). */
  applyLimits(limits: Limits): void;
  /** Serves new HTTPS connections with this certificate and key (throws when it cannot). */
  useCertificate?(tls: { certFile: string; keyFile: string }): void;
  /** Puts a new log level in force. @default sets the logger's level */
  setLogLevel?(level: string): void;
}

/** A reload's outcome: the changed settings that need a restart. */
export interface ReloadOutcome { restartNeeded: string[] }

/**
 * A reload function: `reread` reads the settings again (throws a ConfigError when they do not
 * validate). Reloads run one at a time.
 */
export function configReloader(target: ReloadTarget, reread: () => Config): () => Promise<ReloadOutcome> {
  let queue: Promise<unknown> = Promise.resolve();
  return () => {
    const run = queue.then(() => reloadOnce(target, reread));
    queue = run.catch(() => undefined);
    return run;
  };
}

async function reloadOnce(target: ReloadTarget, reread: () => Config): Promise<ReloadOutcome> {
  const { config, logger, runtime } = target;
  const next = reread();
  // The file's definitions judged whole, against the registry and the file's own state quota, before anything changes.
  const plan = planSync(config.nodeName, target.definitions, parseLocalDefinitions(next), registeredOn(runtime, config.nodeName));
  judgeSync(runtime, plan, next.limits.stateBytesMax);
  const restartNeeded: string[] = changedKeys(config, next).filter((key) => !liveKeys.has(key) || (key === 'rateLimit' && !rateLimitLive(config, next))
    || (key === 'tls' && (config.tls === undefined || next.tls === undefined)));
  restartNeeded.push(...restartOnlyLimits.filter((key) => config.limits[key] !== next.limits[key]).map((key) => `limits.${key}`));
  const certificate = config.tls !== undefined && next.tls !== undefined && !restartNeeded.includes('tls') && JSON.stringify(config.tls) !== JSON.stringify(next.tls)
    ? { before: config.tls, after: next.tls } : undefined;
  // A certificate the HTTP library refuses leaves everything as it was.
  if (certificate !== undefined) target.useCertificate?.(certificate.after);
  await syncDefinitions(target, plan, next.limits.stateBytesMax, certificate?.before);
  for (const key of restartNeeded) logger.warn({ setting: key }, `reload: ${key} changed; it takes effect at the next restart`);
  if (certificate !== undefined) {
    config.tls = certificate.after;
    logger.info({ certFile: certificate.after.certFile, keyFile: certificate.after.keyFile, notAfter: new Date(certificate.after.notAfterMs).toISOString() }, 'reload: HTTPS certificate changed; new connections get it');
  }
  if (target.setLogLevel !== undefined) target.setLogLevel(next.logLevel);
  else logger.level = next.logLevel;
  config.logLevel = next.logLevel;
  config.enableScriptChecks = next.enableScriptChecks;
  config.enableLocalScriptChecks = next.enableLocalScriptChecks;
  config.enableDebug = next.enableDebug;
  target.ctx.enableScriptChecks = next.enableScriptChecks;
  config.sessionTtlMsMin = next.sessionTtlMsMin;
  target.ctx.sessionTtlMsMin = next.sessionTtlMsMin;
  config.writesInFlightMax = next.writesInFlightMax;
  config.checkUpdateIntervalMs = next.checkUpdateIntervalMs;
  runtime.checkOwner.updateIntervalMs = next.checkUpdateIntervalMs;
  // The rate limiter holds this object: its requests and period change in place.
  if (config.rateLimit !== undefined && next.rateLimit !== undefined) Object.assign(config.rateLimit, next.rateLimit);
  const limits = { ...next.limits, ...Object.fromEntries(restartOnlyLimits.map((key) => [key, config.limits[key]])) };
  target.applyLimits(limits);
  config.limits = limits;
  config.services = next.services;
  config.checks = next.checks;
  logger.info({ restartNeeded }, 'configuration reloaded');
  return { restartNeeded };
}

/**
 * Proposes the file's definitions under the file's state quota, which judged them. A write the registry
 * still refuses (the registry changed since the judgement) stops there: what went through stays, recorded
 * as the file's; the quota and certificate go back to those in effect, and the reload fails saying so.
 */
async function syncDefinitions(target: ReloadTarget, plan: SyncPlan, stateBytesMax: number, certificate: Config['tls']): Promise<void> {
  const { quota } = target.runtime;
  const quotaBefore = quota.max;
  quota.setMax(stateBytesMax);
  try {
    await runSync(target.runtime, plan, target.definitions, target.store);
  } catch (err) {
    quota.setMax(quotaBefore);
    if (certificate !== undefined) target.useCertificate?.(certificate);
    if (!(err instanceof ConfigError)) throw err;
    throw new ConfigError(`${err.message} (the reload stopped there: the file's definitions before it are registered, and every other setting is as it was)`);
  }
}

/** Rate limiting turned on or off needs a restart; its numbers do not. */
function rateLimitLive(before: Config, after: Config): boolean {
  return before.rateLimit !== undefined && after.rateLimit !== undefined;
}

function changedKeys(before: Config, after: Config): (keyof Config)[] {
  return (Object.keys(after) as (keyof Config)[]).filter((key) => JSON.stringify(before[key]) !== JSON.stringify(after[key]));
}
