/**
 * Agent settings: defaults, then ROSTER_* environment variables, then command-line flags.
 * Flags are parsed with node:util parseArgs; durations use Go's grammar like every other duration.
 */
import { hostname } from 'node:os';
import { parseArgs } from 'node:util';
import { sessionTtlMsMinDefault } from './domain/limits.ts';
import { dialects, type Dialect } from './http/render.ts';
import { parseGoDurationMs } from './util/duration.ts';

export interface Config {
  /** @default 8500 */
  httpPort: number;
  /** @default "127.0.0.1" */
  httpHost: string;
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
  /** Entries applied between snapshots. @default 20000 */
  snapshotEveryEntries: number;
}

const options = {
  'http-port': { type: 'string' },
  'http-host': { type: 'string' },
  'data-dir': { type: 'string' },
  'node-name': { type: 'string' },
  dialect: { type: 'string' },
  datacenter: { type: 'string' },
  'session-ttl-min': { type: 'string' },
  'log-level': { type: 'string' },
  'snapshot-every': { type: 'string' },
  help: { type: 'boolean', short: 'h' },
} as const;

export const usage = `usage: roster [options]
  --http-port <n>          HTTP port (0 picks a free one)       [ROSTER_HTTP_PORT, default 8500]
  --http-host <addr>       HTTP bind address                    [ROSTER_HTTP_HOST, default 127.0.0.1]
  --data-dir <path>        where the log and snapshots live     [ROSTER_DATA_DIR, default ./data]
  --node-name <name>       this node's name                     [ROSTER_NODE_NAME, default host name]
  --dialect seed|consul    wire dialect of the HTTP API         [ROSTER_DIALECT, default seed]
  --datacenter <name>      datacenter name                      [ROSTER_DATACENTER, default dc1]
  --session-ttl-min <dur>  smallest session TTL accepted        [ROSTER_SESSION_TTL_MIN, default 10s]
  --log-level <level>      pino level                           [ROSTER_LOG_LEVEL, default info]
  --snapshot-every <n>     entries between snapshots            [ROSTER_SNAPSHOT_EVERY, default 20000]`;

export class ConfigError extends Error {}

export function loadConfig(argv: string[], env: NodeJS.ProcessEnv): Config | 'help' {
  let parsed;
  try {
    parsed = parseArgs({ args: argv, options, strict: true, allowPositionals: false });
  } catch (err) {
    throw new ConfigError(err instanceof Error ? err.message : String(err));
  }
  const v = parsed.values;
  if (v.help) return 'help';
  const pick = (flag: string | undefined, envName: string) => flag ?? env[envName];
  return {
    httpPort: port(pick(v['http-port'], 'ROSTER_HTTP_PORT') ?? '8500'),
    httpHost: pick(v['http-host'], 'ROSTER_HTTP_HOST') ?? '127.0.0.1',
    dataDir: pick(v['data-dir'], 'ROSTER_DATA_DIR') ?? './data',
    nodeName: nonEmpty('node-name', pick(v['node-name'], 'ROSTER_NODE_NAME') ?? hostname()),
    dialect: dialect(pick(v.dialect, 'ROSTER_DIALECT') ?? 'seed'),
    datacenter: nonEmpty('datacenter', pick(v.datacenter, 'ROSTER_DATACENTER') ?? 'dc1'),
    sessionTtlMsMin: duration('session-ttl-min', pick(v['session-ttl-min'], 'ROSTER_SESSION_TTL_MIN'), sessionTtlMsMinDefault),
    logLevel: pick(v['log-level'], 'ROSTER_LOG_LEVEL') ?? 'info',
    snapshotEveryEntries: positive('snapshot-every', pick(v['snapshot-every'], 'ROSTER_SNAPSHOT_EVERY') ?? '20000'),
  };
}

function port(text: string): number {
  const n = Number(text);
  if (!/^\d+$/.test(text) || n > 65535) throw new ConfigError(`--http-port: "${text}" is not a port number (0-65535)`);
  return n;
}

function positive(name: string, text: string): number {
  const n = Number(text);
  if (!/^\d+$/.test(text) || n < 1) throw new ConfigError(`--${name}: "${text}" is not a positive integer`);
  return n;
}

function nonEmpty(name: string, text: string): string {
  if (text.trim() === '') throw new ConfigError(`--${name} must not be empty`);
  return text;
}

function dialect(text: string): Dialect {
  if (!(dialects as readonly string[]).includes(text)) throw new ConfigError(`--dialect: "${text}" is not one of ${dialects.join(', ')}`);
  return text as Dialect;
}

function duration(name: string, text: string | undefined, fallback: number): number {
  if (text === undefined) return fallback;
  const ms = parseGoDurationMs(text);
  if (ms === undefined || ms <= 0) throw new ConfigError(`--${name}: "${text}" is not a positive duration such as 10s`);
  return ms;
}
