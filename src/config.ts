/**
 * Agent settings: defaults, then the config file, then ROSTER_* environment variables, then command-line
 * flags. Flags are parsed with node:util parseArgs; durations use Go's grammar like every other duration.
 * The config file is read, and its keys and value types checked, in config-file.ts; `limits` is read in
 * config-limits.ts.
 */
import { hostname } from 'node:os';
import { resolve } from 'node:path';
import { parseArgs } from 'node:util';
import { sessionTtlMsMinDefault } from './domain/limits.ts';
import { dialects, type Dialect } from './http/render.ts';
import type { AuthSettings } from './http/auth-gate.ts';
import { ConfigError } from './config-error.ts';
import { allowedHosts, datacenter, nodeName } from './config-names.ts';
import { nodeMeta } from './config-node-meta.ts';
import type { NatsAuth } from '../cluster/index.ts';
import { authSettings, gossipKey, natsSettings } from './config-secrets.ts';
import { checkUpdateInterval, duration, sessionTtlMin, suspicion, writeTimeout } from './config-durations.ts';
import { fileText, readConfigFile } from './config-file.ts';
import { limits, positive, type Limits } from './config-limits.ts';
import { tlsFiles, type TlsFiles } from './config-tls.ts';

export interface Config {
  /** @default 8500 */
  httpPort: number;
  /** @default "127.0.0.1" */
  httpHost: string;
  /** http_allowed_hosts: the Host names requests may name (allowed-hosts.ts). @default by the listen address */
  httpAllowedHosts: string[] | undefined;
  /** gRPC health service port (0 picks a free one). @default 8502 */
  grpcPort: number;
  /** @default "./data" */
  dataDir: string;
  /** @default the host name */
  nodeName: string;
  /** node_meta / --node-meta: this node's metadata in the catalog. @default {} */
  nodeMeta: Record<string, string>;
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
  /** A check's output-only changes wait up to about this long to be written; 0: written at once. @default 5m */
  checkUpdateIntervalMs: number;
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
  'http-allowed-hosts',
] as const;

const options = {
  ...(Object.fromEntries(textFlags.map((name) => [name, { type: 'string' }])) as Record<typeof textFlags[number], { type: 'string' }>),
  join: { type: 'string', multiple: true },
  'node-meta': { type: 'string', multiple: true },
  help: { type: 'boolean', short: 'h' },
} as const;

/** The agent's long flag names (the `roster` command accepts them Consul-style with one dash too). */
export const agentFlagNames: readonly string[] = Object.keys(options);

export const usage = `usage: roster agent [options]   (npm start -- [options])
  --http-port <n>          HTTP port (0 picks a free one)       [ROSTER_HTTP_PORT, default 8500]
  --http-host <addr>       HTTP and gRPC bind address           [ROSTER_HTTP_HOST, default 127.0.0.1]
  --http-allowed-hosts <name,...>
                           Host names served besides IP addresses and localhost
                           (.example.com: the domain and its subdomains; * any name)
                           [ROSTER_HTTP_ALLOWED_HOSTS; default: the machine's host name when
                           --http-host is loopback, any name otherwise]
  --grpc-port <n>          gRPC health service port             [ROSTER_GRPC_PORT, default 8502]
  --data-dir <path>        where the log and snapshots live     [ROSTER_DATA_DIR, default ./data]
  --node-name <name>       this node's name                     [ROSTER_NODE_NAME, default host name]
  --node-meta <key:value> this node's metadata in the catalog (repeatable; node_meta in the file)
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
export { kvMaxValueSizeMax, stateBytesMaxDefault, type Limits } from './config-limits.ts';
export { authSettings } from './config-secrets.ts';

/** Defaults that replace the built-in ones (flags, environment and the config file still win): `roster agent --dev`. */
export type ConfigDefaults = Partial<Pick<Config, 'dataDir' | 'nodeName' | 'logLevel' | 'logFormat'>>;

export function loadConfig(argv: string[], env: NodeJS.ProcessEnv, defaults: ConfigDefaults = {}): Config | 'help' {
  let parsed;
  try {
    parsed = parseArgs({ args: argv, options, strict: true, allowPositionals: false });
  } catch (err) {
    throw new ConfigError(err instanceof Error ? err.message : String(err), true);
  }
  const v = parsed.values;
  if (v.help) return 'help';
  const file = readConfigFile(settingPicker(v, env, {})('config-file', 'ROSTER_CONFIG_FILE'));
  const sources = new Map<string, string>();
  try {
    return settings(v, env, file, defaults, sources);
  } catch (err) {
    throw err instanceof ConfigError ? sourced(err, sources, env) : err;
  }
}

type ParsedFlags = ReturnType<typeof parseArgs<{ args: string[]; options: typeof options; strict: true; allowPositionals: false }>>['values'];

/**
 * A ConfigError whose opening names a flag (`--http-port: …`, as the checks word it) reworded to name where
 * the value came from: the flag, its variable or its config file key (`sources`, filled as settings are
 * read); a setting only the config file has (`--write_timeout: …`) names the file's key, and `encrypt`
 * names ROSTER_ENCRYPT when the variable gave it.
 */
function sourced(err: ConfigError, sources: ReadonlyMap<string, string>, env: NodeJS.ProcessEnv): ConfigError {
  const m = /^(--([\w.-]+)|encrypt):/.exec(err.message);
  if (m === null) return err;
  const name = m[2];
  const source = name === undefined ? (env.ROSTER_ENCRYPT !== undefined ? 'ROSTER_ENCRYPT' : 'the config file\'s encrypt')
    : sources.get(name) ?? (agentFlagNames.includes(name) ? undefined : `the config file's ${name}`);
  return source === undefined || source === m[1] ? err : new ConfigError(`${source}${err.message.slice(m[1]!.length)}`);
}

function settings(v: ParsedFlags, env: NodeJS.ProcessEnv, file: Record<string, unknown>, defaults: ConfigDefaults,
  sources: Map<string, string>): Config {
  const pick = settingPicker(v, env, file, sources);
  const pickList = listPicker(v, env, file, sources);
  return {
    httpPort: port(pick('http-port', 'ROSTER_HTTP_PORT', 'ports.http') ?? '8500', 'http-port'),
    httpHost: pick('http-host', 'ROSTER_HTTP_HOST', 'client_addr') ?? '127.0.0.1',
    httpAllowedHosts: allowedHosts(pickList('http-allowed-hosts', 'ROSTER_HTTP_ALLOWED_HOSTS', 'http_allowed_hosts')),
    grpcPort: port(pick('grpc-port', 'ROSTER_GRPC_PORT', 'ports.grpc') ?? '8502', 'grpc-port'),
    dataDir: pick('data-dir', 'ROSTER_DATA_DIR', 'data_dir') ?? defaults.dataDir ?? './data',
    nodeName: nodeName(pick('node-name', 'ROSTER_NODE_NAME', 'node_name') ?? defaults.nodeName ?? hostname()),
    nodeMeta: nodeMeta(v['node-meta'], file.node_meta),
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
    checkReapIntervalMs: duration('check_reap_interval', fileText(file.check_reap_interval), 30_000),
    checkDeregisterMsMin: duration('check_deregister_min', fileText(file.check_deregister_min), 60_000),
    checkUpdateIntervalMs: checkUpdateInterval(fileText(file.check_update_interval)),
    streamBookmarkIntervalMs: duration('stream_bookmark_interval', fileText(file.stream_bookmark_interval), 30_000),
    ...natsSettings(pickList('nats', 'ROSTER_NATS', 'nats') ?? [], file.nats_auth, { password: env.ROSTER_NATS_PASSWORD, token: env.ROSTER_NATS_TOKEN }),
    replicas: positive('replicas', pick('replicas', 'ROSTER_REPLICAS', 'replicas') ?? '3'),
    gossipListen: pick('gossip-listen', 'ROSTER_GOSSIP_LISTEN', 'gossip_listen') ?? '127.0.0.1:0',
    join: pickList('join', 'ROSTER_JOIN', 'join') ?? [],
    suspicionMs: suspicion(fileText(file.suspicion)),
    writeTimeoutMs: writeTimeout(fileText(file.write_timeout)),
    tls: tlsFiles(pick('tls-cert', 'ROSTER_TLS_CERT', 'cert_file'), pick('tls-key', 'ROSTER_TLS_KEY', 'key_file')),
    auth: authSettings(file.auth, env.ROSTER_AUTH_SECRET),
    gossipKey: gossipKey(env.ROSTER_ENCRYPT ?? fileText(file.encrypt)),
    rateLimit: rateLimit(file.rate_limit),
    writesInFlightMax: positive('writes_in_flight_max', fileText(file.writes_in_flight_max) ?? '10000'),
    limits: limits(file.limits as Record<string, unknown> | undefined),
    uiDir: pick('ui-dir', 'ROSTER_UI_DIR', 'ui_dir') ?? defaultUiDir,
  };
}

/** Where `npm run build:ui` puts the dashboard: dist/ui beside src/, whatever the working directory. */
const defaultUiDir = resolve(import.meta.dirname, '../dist/ui');

function rateLimit(value: unknown): Config['rateLimit'] {
  if (value === undefined) return undefined;
  // Its keys' kinds are checked in config-file.ts: requests is a number, or its digits as a string.
  const o = value as { requests?: unknown; period?: unknown };
  if (o.requests === undefined) throw new ConfigError('--config-file: rate_limit needs requests (a positive integer) and period (a duration such as 1s)');
  return { limit: positive('rate_limit.requests', String(o.requests)), periodMs: duration('rate_limit.period', fileText(o.period), 1000) };
}

/**
 * A setting's text: its flag, else its environment variable, else its key in the config file (a dotted key
 * is nested: `ports.http`), else undefined. An empty value is refused wherever it comes from: an unset
 * shell variable (`ROSTER_DATA_DIR=$DIR`) must not turn into the working directory, every interface, or
 * a node with a log of its own instead of the cluster's.
 */
function settingPicker(flags: Record<string, unknown>, env: NodeJS.ProcessEnv, file: Record<string, unknown>, sources?: Map<string, string>) {
  const given = givenSetting(flags, env, file, sources);
  return (flag: string, envName: string, fileKey?: string): string | undefined => {
    const found = given(flag, envName, fileKey);
    if (found === undefined) return undefined;
    const [values, source] = found;
    const text = values.join(',');
    if (text === '') throw new ConfigError(`${source} is empty: give it a value, or leave it out for the default`);
    return text;
  };
}

/**
 * A list setting (`--join`, `--nats`): its items, from every `--<flag>` given (each may hold several,
 * comma-separated), else its environment variable (comma-separated), else its config file key (a string or
 * a list of strings). The same rule as settingPicker, item by item: a list with no item, or with an empty
 * one (`ROSTER_JOIN=`, `--join=`, `"join": []`, `ROSTER_JOIN=$A,$B` with B unset), is refused rather than
 * taken as fewer seeds, or as no cluster at all; an empty variable does not replace the file's list.
 */
function listPicker(flags: Record<string, unknown>, env: NodeJS.ProcessEnv, file: Record<string, unknown>, sources: Map<string, string>) {
  const given = givenSetting(flags, env, file, sources);
  return (flag: string, envName: string, fileKey: string): string[] | undefined => {
    const found = given(flag, envName, fileKey);
    if (found === undefined) return undefined;
    const [values, source] = found;
    const items = values.flatMap((v) => v.split(',')).map((x) => x.trim());
    if (items.every((x) => x === '')) throw new ConfigError(`${source} is empty: give it a value, or leave it out for the default`);
    if (items.includes('')) throw new ConfigError(`${source} has an empty item in ${JSON.stringify(values.join(','))}: remove the stray comma, or give the missing value`);
    return items;
  };
}

/**
 * Where a setting is given first (flag, environment, config file) and its values there, or undefined when
 * nowhere; the source is also kept in `sources` under the flag's name.
 */
function givenSetting(flags: Record<string, unknown>, env: NodeJS.ProcessEnv, file: Record<string, unknown>, sources?: Map<string, string>) {
  const found = (flag: string, envName: string, fileKey?: string): [string[], string] | undefined => {
    const flagged = flags[flag] as string | string[] | undefined;
    if (flagged !== undefined) return [Array.isArray(flagged) ? flagged : [flagged], `--${flag}`];
    const fromEnv = env[envName];
    if (fromEnv !== undefined) return [[fromEnv], `${envName} (for --${flag})`];
    const fromFile = fileKey?.split('.').reduce<unknown>((o, k) => (o !== null && typeof o === 'object' ? (o as Record<string, unknown>)[k] : undefined), file);
    if (fromFile === undefined) return undefined;
    const values = Array.isArray(fromFile) ? (fromFile as unknown[]).map(String) : [String(fromFile)];
    return [values.length === 0 ? [''] : values, `the config file's ${fileKey} (for --${flag})`];
  };
  return (flag: string, envName: string, fileKey?: string): [string[], string] | undefined => {
    const given = found(flag, envName, fileKey);
    if (given !== undefined) sources?.set(flag, given[1]);
    return given;
  };
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
    for (const item of file[many] as unknown[]) out.push(item);
  }
  return out;
}

function port(text: string, flag: string): number {
  const n = Number(text);
  if (!/^\d+$/.test(text) || n > 65535) throw new ConfigError(`--${flag}: "${text}" is not a port number (0-65535)`);
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
