/**
 * Agent settings: defaults, then ROSTER_* environment variables, then command-line flags.
 * Flags are parsed with node:util parseArgs; durations use Go's grammar like every other duration.
 */
import { readFileSync } from 'node:fs';
import { hostname } from 'node:os';
import { resolve } from 'node:path';
import { parseArgs } from 'node:util';
import { getHeapStatistics } from 'node:v8';
import { requestBodyBytesMax, sessionTtlMsMinDefault } from './domain/limits.ts';
import { answerBytesMaxDefault, writeIdleMsDefault } from './http/large-answers.ts';
import { dialects, type Dialect } from './http/render.ts';
import { connectionLimitsDefault, watchLimitsDefault } from './grpc/limits.ts';
import type { AuthSettings } from './http/auth-gate.ts';
import { ConfigError } from './config-error.ts';
import { datacenter, nodeName } from './config-names.ts';
import type { NatsAuth } from '../cluster/index.ts';
import { authSettings, gossipKey, natsSettings } from './config-secrets.ts';
import { duration, sessionTtlMin, suspicion } from './config-durations.ts';
import { tlsFiles, type TlsFiles } from './config-tls.ts';

export interface Config {
  /** @default 8500 */
  httpPort: number;
  /** @default "127.0.0.1" */
  httpHost: string;
  /** gRPC health service port (0 picks a free one). @default 8502 */
  grpcPort: number;
  /** @default "./data" */
  dataDir: string;
  /** @default the host name */
  nodeName: string;
  /** @default "seed" */
  dialect: Dialect;
  /** @default "dc1" */
  datacenter: string;
  /** Smallest accepted session TTL (Consul's session_ttl_min). @default 10s */
  sessionTtlMsMin: number;
  /** @default "info" */
  logLevel: string;
  /** `json`: one JSON object a line, for machines; `pretty`: local time, level name and message, for people. @default "json" */
  logFormat: LogFormat;
  /** Entries applied between snapshots. @default 20000 */
  snapshotEveryEntries: number;
  /** enable_script_checks: script/container checks may come through the HTTP API. @default false */
  enableScriptChecks: boolean;
  /** enable_local_script_checks: script/container checks may come from the config file. @default false */
  enableLocalScriptChecks: boolean;
  /** enable_debug: profiles of the agent may be taken without authentication (with it: operator read). @default false */
  enableDebug: boolean;
  /** Check and service definitions of the config file (`check`, `checks`, `service`, `services`), as written. */
  checks: unknown[];
  services: unknown[];
  /** How often critical checks are looked at for DeregisterCriticalServiceAfter. @default 30s */
  checkReapIntervalMs: number;
  /** Smallest DeregisterCriticalServiceAfter honoured. @default 1m */
  checkDeregisterMsMin: number;
  /** A stream bookmark after this much silence on a connection. @default 30s */
  streamBookmarkIntervalMs: number;
  /** Cluster mode: NATS server URLs whose JetStream holds the log (none: the embedded log), without credentials. */
  nats: string[];
  /** nats_auth (or a --nats URL's userinfo): how the node authenticates to the nats-servers. */
  natsAuth: NatsAuth | undefined;
  /** Replicas of the JetStream log stream. @default 3 */
  replicas: number;
  /** Where gossip listens (host:port or a multiaddr). @default 127.0.0.1:0 in cluster mode */
  gossipListen: string;
  /** Gossip addresses of other members to join through (host:port or multiaddrs, no peer ids). */
  join: string[];
  /** A member unheard this long is failed. @default 5s */
  suspicionMs: number;
  /** write_timeout: a write not confirmed this long is answered as timed out, outcome unknown. @default 30s */
  writeTimeoutMs: number;
  /** HTTPS: PEM certificate and key (both or neither). */
  tls: TlsFiles | undefined;
  /** Connection and stream limits (config file `limits`). */
  limits: Limits;
  /** Authentication (off when absent): the JWT secret and the signed-request callers. */
  auth: AuthSettings | undefined;
  /** encrypt (or ROSTER_ENCRYPT): the gossip key, 32 bytes (base64 in the file); a node without it cannot join. */
  gossipKey: Uint8Array | undefined;
  /** `rate_limit: {requests, period}`: requests per period per caller (off when absent). */
  rateLimit: { limit: number; periodMs: number } | undefined;
  /** Writes in flight beyond which new writes are answered 503. @default 10000 */
  writesInFlightMax: number;
  /** The built dashboard served at /ui/ (Consul's ui_dir). @default dist/ui of this checkout */
  uiDir: string;
}

/** The agent's flags that take one text value each (parsed further in readConfig). */
const textFlags = [
  'http-port', 'http-host', 'grpc-port', 'data-dir', 'node-name', 'dialect', 'datacenter', 'session-ttl-min',
  'log-level', 'log-format', 'snapshot-every', 'config-file', 'nats', 'replicas', 'gossip-listen', 'tls-cert', 'tls-key', 'ui-dir',
] as const;

const options = {
  ...(Object.fromEntries(textFlags.map((name) => [name, { type: 'string' }])) as Record<typeof textFlags[number], { type: 'string' }>),
  join: { type: 'string', multiple: true },
  help: { type: 'boolean', short: 'h' },
} as const;

/** The agent's long flag names (the `roster` command accepts them Consul-style with one dash too). */
export const agentFlagNames: readonly string[] = Object.keys(options);

export const usage = `usage: roster agent [options]   (npm start -- [options])
  --http-port <n>          HTTP port (0 picks a free one)       [ROSTER_HTTP_PORT, default 8500]
  --http-host <addr>       HTTP and gRPC bind address           [ROSTER_HTTP_HOST, default 127.0.0.1]
  --grpc-port <n>          gRPC health service port             [ROSTER_GRPC_PORT, default 8502]
  --data-dir <path>        where the log and snapshots live     [ROSTER_DATA_DIR, default ./data]
  --node-name <name>       this node's name                     [ROSTER_NODE_NAME, default host name]
  --dialect seed|consul    wire dialect of the HTTP API         [ROSTER_DIALECT, default seed]
  --datacenter <name>      datacenter name                      [ROSTER_DATACENTER, default dc1]
  --session-ttl-min <dur>  smallest session TTL accepted        [ROSTER_SESSION_TTL_MIN, default 10s]
  --log-level <level>      pino level                           [ROSTER_LOG_LEVEL, default info]
  --log-format json|pretty json lines, or readable lines for people
                                                                [ROSTER_LOG_FORMAT, default json]
  --snapshot-every <n>     entries between snapshots            [ROSTER_SNAPSHOT_EVERY, default 20000]
  --nats <url,...>         cluster mode: NATS servers whose JetStream holds the log
                                                                [ROSTER_NATS, default: none, embedded log]
  --replicas <n>           replicas of the log stream           [ROSTER_REPLICAS, default 3]
  --gossip-listen <addr>   gossip listen address, host:port     [ROSTER_GOSSIP_LISTEN, default 127.0.0.1:0]
  --join <addr>            gossip address of a member to join (repeatable; no peer ids needed)
                                                                [ROSTER_JOIN, comma-separated]
  --tls-cert <pem>, --tls-key <pem>
                           serve HTTPS with this certificate and key [ROSTER_TLS_CERT, ROSTER_TLS_KEY]
  --ui-dir <path>          the built dashboard served at /ui/   [ROSTER_UI_DIR, default dist/ui of the checkout]
  --config-file <path>     JSON agent configuration (Consul names: node_name, datacenter, data_dir,
                           ports.http, enable_script_checks, enable_local_script_checks, check(s),
                           service(s), ...); environment and flags override it   [ROSTER_CONFIG_FILE]`;

export { ConfigError } from './config-error.ts';
export { authSettings } from './config-secrets.ts';

/** Defaults that replace the built-in ones (flags, environment and the config file still win): `roster agent --dev`. */
export type ConfigDefaults = Partial<Pick<Config, 'dataDir' | 'nodeName' | 'logLevel' | 'logFormat'>>;

export function loadConfig(argv: string[], env: NodeJS.ProcessEnv, defaults: ConfigDefaults = {}): Config | 'help' {
  let parsed;
  try {
    parsed = parseArgs({ args: argv, options, strict: true, allowPositionals: false });
  } catch (err) {
    throw new ConfigError(err instanceof Error ? err.message : String(err));
  }
  const v = parsed.values;
  if (v.help) return 'help';
  const file = readConfigFile(settingPicker(v, env, {})('config-file', 'ROSTER_CONFIG_FILE'));
  const pick = settingPicker(v, env, file);
  return {
    httpPort: port(pick('http-port', 'ROSTER_HTTP_PORT', 'ports.http') ?? '8500', 'http-port'),
    httpHost: pick('http-host', 'ROSTER_HTTP_HOST', 'client_addr') ?? '127.0.0.1',
    grpcPort: port(pick('grpc-port', 'ROSTER_GRPC_PORT', 'ports.grpc') ?? '8502', 'grpc-port'),
    dataDir: pick('data-dir', 'ROSTER_DATA_DIR', 'data_dir') ?? defaults.dataDir ?? './data',
    nodeName: nodeName(pick('node-name', 'ROSTER_NODE_NAME', 'node_name') ?? defaults.nodeName ?? hostname()),
    dialect: dialect(pick('dialect', 'ROSTER_DIALECT', 'dialect') ?? 'seed'),
    datacenter: datacenter(pick('datacenter', 'ROSTER_DATACENTER', 'datacenter') ?? 'dc1'),
    sessionTtlMsMin: sessionTtlMin(pick('session-ttl-min', 'ROSTER_SESSION_TTL_MIN', 'session_ttl_min'), sessionTtlMsMinDefault),
    logLevel: logLevel(pick('log-level', 'ROSTER_LOG_LEVEL', 'log_level') ?? defaults.logLevel ?? 'info'),
    logFormat: logFormat(pick('log-format', 'ROSTER_LOG_FORMAT', 'log_format') ?? defaults.logFormat ?? 'json'),
    snapshotEveryEntries: positive('snapshot-every', pick('snapshot-every', 'ROSTER_SNAPSHOT_EVERY') ?? '20000'),
    enableScriptChecks: fileBool(file, 'enable_script_checks'),
    enableLocalScriptChecks: fileBool(file, 'enable_local_script_checks'),
    enableDebug: fileBool(file, 'enable_debug'),
    checks: fileList(file, 'check', 'checks'),
    services: fileList(file, 'service', 'services'),
    checkReapIntervalMs: duration('check_reap_interval', file.check_reap_interval as string | undefined, 30_000),
    checkDeregisterMsMin: duration('check_deregister_min', file.check_deregister_min as string | undefined, 60_000),
    streamBookmarkIntervalMs: duration('stream_bookmark_interval', file.stream_bookmark_interval as string | undefined, 30_000),
    ...natsSettings(list(pick('nats', 'ROSTER_NATS', 'nats')), file.nats_auth, { password: env.ROSTER_NATS_PASSWORD, token: env.ROSTER_NATS_TOKEN }),
    replicas: positive('replicas', pick('replicas', 'ROSTER_REPLICAS', 'replicas') ?? '3'),
    gossipListen: pick('gossip-listen', 'ROSTER_GOSSIP_LISTEN', 'gossip_listen') ?? '127.0.0.1:0',
    join: v.join !== undefined ? v.join.flatMap(list) : list(env.ROSTER_JOIN ?? fileText(file.join)),
    suspicionMs: suspicion(fileText(file.suspicion)),
    writeTimeoutMs: duration('write_timeout', fileText(file.write_timeout), 30_000),
    tls: tlsFiles(pick('tls-cert', 'ROSTER_TLS_CERT', 'cert_file'), pick('tls-key', 'ROSTER_TLS_KEY', 'key_file')),
    auth: authSettings(file.auth, env.ROSTER_AUTH_SECRET),
    gossipKey: gossipKey(env.ROSTER_ENCRYPT ?? fileText(file.encrypt)),
    rateLimit: rateLimit(file.rate_limit),
    writesInFlightMax: positive('writes_in_flight_max', fileText(file.writes_in_flight_max) ?? '10000'),
    limits: limits(file.limits),
    uiDir: pick('ui-dir', 'ROSTER_UI_DIR', 'ui_dir') ?? defaultUiDir,
  };
}

export interface Limits {
  /** HTTP requests in flight per client address (Consul's http_max_conns_per_client). @default 200 */
  httpMaxConnsPerClient: number;
  /** Open /v1/stream connections per client (token subject, else address). @default 64 */
  streamMaxConnsPerClient: number;
  /** A request body must arrive within this long of its head. @default 8s */
  requestBodyTimeoutMs: number;
  /** Largest request body, KV values included (Consul's limits.kv_max_value_size). @default 524288 */
  kvMaxValueSize: number;
  /** Stream backpressure: buffered bytes above which events are held and coalesced and snapshot pages wait. @default 1 MiB */
  streamBufferedBytesSoft: number;
  /** A stream connection's queue budget (events and messages buffered, held or queued) past which it is closed with 4008. @default 4 MiB */
  streamBufferedBytesHard: number;
  /** Held distinct items above which a slow stream reader is closed with 4008. @default 10000 */
  streamHeldItemsMax: number;
  /** Open /v1/stream connections of the agent; the next upgrade is refused 503. @default 256 */
  streamMaxConns: number;
  /** Stream snapshot pages in flight over all connections, past which further pages wait. @default 64 MiB */
  streamSnapshotBytesMax: number;
  /** Open gRPC Watch calls of the agent; the next one gets RESOURCE_EXHAUSTED. @default 1024 */
  grpcWatchMax: number;
  /** Open gRPC Watch calls per client address. @default 64 */
  grpcWatchMaxPerClient: number;
  /** Open connections of the gRPC port; the next one is closed at once. @default 4096 */
  grpcMaxConns: number;
  /** Open connections of the gRPC port per client address (Consul's rpc_max_conns_per_client). @default 100 */
  grpcMaxConnsPerClient: number;
  /** A gRPC connection that has not sent HTTP/2's preface within this long is closed (Consul's rpc_handshake_timeout). @default 5s */
  grpcHandshakeTimeoutMs: number;
  /** The state quota: past this estimated size, writes that would grow the state are refused. @default stateBytesMaxDefault() */
  stateBytesMax: number;
  /** Bytes of large HTTP answers (1 MiB or more) in flight; past them a large answer is refused 503. @default 256 MiB */
  httpAnswerBytesMax: number;
  /** A large HTTP answer's connection is closed when its client has read nothing for this long. @default 30s */
  httpWriteIdleTimeoutMs: number;
  /** This agent's probes (HTTP, TCP, gRPC, script, container) running at once; the others wait their turn. @default 1024 */
  checkProbesMax: number;
}

/**
 * The state quota's default: 400 MiB, or a fifth of the V8 heap's limit where that is less. A snapshot is
 * read back as one string (at most about 512 MiB), and writing or restoring one takes several times the
 * state's size in heap for a while.
 */
export function stateBytesMaxDefault(): number {
  return Math.min(400 * 1024 * 1024, Math.floor(getHeapStatistics().heap_size_limit / 5));
}

const limitKeys = ['kv_max_value_size', 'http_max_conns_per_client', 'stream_max_conns_per_client', 'request_body_timeout',
  'stream_buffered_bytes_soft', 'stream_buffered_bytes_hard', 'stream_held_items_max', 'stream_max_conns', 'stream_snapshot_bytes_max',
  'grpc_watch_max', 'grpc_watch_max_per_client', 'grpc_max_conns', 'grpc_max_conns_per_client', 'grpc_handshake_timeout', 'state_bytes_max',
  'http_answer_bytes_max', 'http_write_idle_timeout', 'check_probes_max'];

/** `limits: {...}` of the config file; unknown keys are refused like unknown top-level settings. */
function limits(value: unknown): Limits {
  const o = (value ?? {}) as Record<string, unknown>;
  if (typeof o !== 'object' || Array.isArray(o)) throw new ConfigError('--config-file: limits must be an object');
  const unknown = Object.keys(o).filter((k) => !limitKeys.includes(k));
  if (unknown.length > 0) throw new ConfigError(`--config-file: unknown setting ${unknown.map((k) => JSON.stringify(`limits.${k}`)).join(', ')}`);
  const n = (key: string, fallback: number) => positive(`limits.${key}`, fileText(o[key]) ?? String(fallback));
  return {
    kvMaxValueSize: n('kv_max_value_size', requestBodyBytesMax),
    httpMaxConnsPerClient: n('http_max_conns_per_client', 200),
    streamMaxConnsPerClient: n('stream_max_conns_per_client', 64),
    requestBodyTimeoutMs: duration('limits.request_body_timeout', fileText(o.request_body_timeout), 8_000),
    streamBufferedBytesSoft: n('stream_buffered_bytes_soft', 1024 * 1024),
    streamBufferedBytesHard: n('stream_buffered_bytes_hard', 4 * 1024 * 1024),
    streamHeldItemsMax: n('stream_held_items_max', 10_000),
    streamMaxConns: n('stream_max_conns', 256),
    streamSnapshotBytesMax: n('stream_snapshot_bytes_max', 64 * 1024 * 1024),
    grpcWatchMax: n('grpc_watch_max', watchLimitsDefault.watchMax),
    grpcWatchMaxPerClient: n('grpc_watch_max_per_client', watchLimitsDefault.watchMaxPerClient),
    grpcMaxConns: n('grpc_max_conns', connectionLimitsDefault.connsMax),
    grpcMaxConnsPerClient: n('grpc_max_conns_per_client', connectionLimitsDefault.connsMaxPerClient),
    grpcHandshakeTimeoutMs: duration('limits.grpc_handshake_timeout', fileText(o.grpc_handshake_timeout), connectionLimitsDefault.handshakeTimeoutMs),
    stateBytesMax: n('state_bytes_max', stateBytesMaxDefault()),
    httpAnswerBytesMax: n('http_answer_bytes_max', answerBytesMaxDefault),
    httpWriteIdleTimeoutMs: duration('limits.http_write_idle_timeout', fileText(o.http_write_idle_timeout), writeIdleMsDefault),
    checkProbesMax: n('check_probes_max', 1024),
  };
}

/** Keys of the config file this agent understands; any other key is refused, so a typo is not silent. */
const fileKeys = new Set([
  'node_name', 'datacenter', 'data_dir', 'client_addr', 'ports', 'dialect', 'log_level', 'log_format', 'session_ttl_min',
  'enable_script_checks', 'enable_local_script_checks', 'enable_debug', 'check', 'checks', 'service', 'services',
  'check_reap_interval', 'check_deregister_min', 'stream_bookmark_interval',
  'nats', 'nats_auth', 'replicas', 'gossip_listen', 'join', 'suspicion', 'write_timeout', 'encrypt', 'cert_file', 'key_file', 'auth',
  'rate_limit', 'writes_in_flight_max', 'limits', 'ui_dir',
]);

/** Where `npm run build:ui` puts the dashboard: dist/ui beside src/, whatever the working directory. */
const defaultUiDir = resolve(import.meta.dirname, '../dist/ui');

function rateLimit(value: unknown): Config['rateLimit'] {
  if (value === undefined) return undefined;
  const o = value as { requests?: unknown; period?: unknown };
  if (typeof o !== 'object' || o === null || typeof o.requests !== 'number' || !Number.isInteger(o.requests) || o.requests < 1) {
    throw new ConfigError('--config-file: rate_limit needs requests (a positive integer) and period (a duration such as 1s)');
  }
  return { limit: o.requests, periodMs: duration('rate_limit.period', typeof o.period === 'string' ? o.period : '1s', 1000) };
}

/**
 * A setting's text: its flag, else its environment variable, else its key in the config file (a dotted key
 * is nested: `ports.http`), else undefined. An empty value is refused wherever it comes from: an unset
 * shell variable (`ROSTER_DATA_DIR=$DIR`) must not turn into the working directory, every interface, or
 * a node with a log of its own instead of the cluster's.
 */
function settingPicker(flags: Record<string, unknown>, env: NodeJS.ProcessEnv, file: Record<string, unknown>) {
  return (flag: string, envName: string, fileKey?: string): string | undefined => {
    const fromFile = fileKey?.split('.').reduce<unknown>((o, k) => (o !== null && typeof o === 'object' ? (o as Record<string, unknown>)[k] : undefined), file);
    const [text, source] = flags[flag] !== undefined ? [flags[flag] as string, `--${flag}`]
      : env[envName] !== undefined ? [env[envName], `${envName} (for --${flag})`]
      : [fileText(fromFile), `the config file's ${fileKey} (for --${flag})`];
    if (text === '') throw new ConfigError(`${source} is empty: give it a value, or leave it out for the default`);
    return text;
  };
}

function list(text: string | undefined): string[] {
  return (text ?? '').split(',').map((x) => x.trim()).filter((x) => x !== '');
}

/** A file value that may be a string or a list of strings, as comma-separated text. */
function fileText(value: unknown): string | undefined {
  if (value === undefined || value === null) return undefined;
  return Array.isArray(value) ? value.map(String).join(',') : String(value);
}

function readConfigFile(path: string | undefined): Record<string, unknown> {
  if (path === undefined) return {};
  let text: string;
  try {
    text = readFileSync(path, 'utf8');
  } catch (err) {
    throw new ConfigError(`--config-file: cannot read ${path}: ${err instanceof Error ? err.message : String(err)}`);
  }
  let parsed: unknown;
  try {
    // A byte order mark (editors on Windows write one) is not JSON, but not a mistake either.
    parsed = JSON.parse(text.startsWith('\uFEFF') ? text.slice(1) : text);
  } catch (err) {
    throw new ConfigError(`--config-file: ${path} is not valid JSON: ${err instanceof Error ? err.message : String(err)}`);
  }
  if (parsed === null || typeof parsed !== 'object' || Array.isArray(parsed)) throw new ConfigError(`--config-file: ${path} must hold a JSON object`);
  const unknown = Object.keys(parsed).filter((k) => !fileKeys.has(k));
  if (unknown.length > 0) throw new ConfigError(`--config-file: unknown setting ${unknown.map((k) => JSON.stringify(k)).join(', ')} in ${path}`);
  return parsed as Record<string, unknown>;
}

function fileBool(file: Record<string, unknown>, key: string): boolean {
  const v = file[key];
  if (v === undefined) return false;
  if (typeof v !== 'boolean') throw new ConfigError(`--config-file: ${key} must be true or false`);
  return v;
}

function fileList(file: Record<string, unknown>, one: string, many: string): unknown[] {
  const out: unknown[] = [];
  if (file[one] !== undefined) out.push(file[one]);
  if (file[many] !== undefined) {
    if (!Array.isArray(file[many])) throw new ConfigError(`--config-file: ${many} must be an array`);
    out.push(...(file[many] as unknown[]));
  }
  return out;
}

function port(text: string, flag: string): number {
  const n = Number(text);
  if (!/^\d+$/.test(text) || n > 65535) throw new ConfigError(`--${flag}: "${text}" is not a port number (0-65535)`);
  return n;
}

function positive(name: string, text: string): number {
  const n = Number(text);
  if (!/^\d+$/.test(text) || n < 1) throw new ConfigError(`--${name}: "${text}" is not a positive integer`);
  return n;
}

/** pino's levels, and `silent`. */
const logLevels = ['trace', 'debug', 'info', 'warn', 'error', 'fatal', 'silent'] as const;

function logLevel(text: string): string {
  const level = text.trim().toLowerCase();
  if (!(logLevels as readonly string[]).includes(level)) throw new ConfigError(`--log-level: "${text}" is not one of ${logLevels.join(', ')}`);
  return level;
}

/** How the agent writes its log lines. */
export const logFormats = ['json', 'pretty'] as const;
export type LogFormat = typeof logFormats[number];

function logFormat(text: string): LogFormat {
  if (!(logFormats as readonly string[]).includes(text)) throw new ConfigError(`--log-format: "${text}" is not one of ${logFormats.join(', ')}`);
  return text as LogFormat;
}

function dialect(text: string): Dialect {
  if (!(dialects as readonly string[]).includes(text)) throw new ConfigError(`--dialect: "${text}" is not one of ${dialects.join(', ')}`);
  return text as Dialect;
}
