/**
 * The config file (`--config-file`): read, parsed as JSON, no key twice in one object, every key known and
 * every value of the type its setting takes, before any setting is read from it. A wrong type is refused, never turned into text: `"data_dir":
 * {}` would otherwise name a directory `[object Object]`, `"node_name": 123` a node `123`. Nested objects
 * (`ports`, `limits`) refuse unknown keys as the top level does, Consul's keys that Roster has no use
 * for included, so that a setting never silently does nothing.
 */
import { readFileSync } from 'node:fs';
import { ConfigError } from './config-error.ts';
import { duplicateKey } from './config-json.ts';
import { limitKinds } from './config-limits.ts';

/**
 * What a value must be. `text`: a string. `number`: a count, byte size or port, written as a JSON number
 * as in Consul's files, or as its digits in a string. `list`: a string (comma-separated) or an array of
 * strings. `bool`: true or false. `object` and `array`: checked further where they are read.
 */
type Kind = 'text' | 'number' | 'list' | 'bool' | 'object' | 'array';

/** An object whose keys are known: each with its kind. */
type Shape = Readonly<Record<string, Kind | { readonly [key: string]: Kind }>>;

/** Roster's ports: HTTP and gRPC (Consul's others, dns, https, serf_lan, …, serve nothing here and are refused). */
const portKinds = { http: 'number', grpc: 'number' } as const;

/** Keys of the config file this agent understands, with their kinds; any other key is refused, so a typo is not silent. */
const fileShape: Shape = {
  node_name: 'text', node_meta: 'object', datacenter: 'text', data_dir: 'text', client_addr: 'text', http_allowed_hosts: 'list', ports: portKinds, dialect: 'text',
  log_level: 'text', log_format: 'text', session_ttl_min: 'text',
  enable_script_checks: 'bool', enable_local_script_checks: 'bool', enable_debug: 'bool',
  check: 'object', checks: 'array', service: 'object', services: 'array',
  check_reap_interval: 'text', check_deregister_min: 'text', check_update_interval: 'text', stream_bookmark_interval: 'text',
  nats: 'list', nats_auth: 'object', replicas: 'number', gossip_listen: 'text', join: 'list', suspicion: 'text',
  write_timeout: 'text', encrypt: 'text', cert_file: 'text', key_file: 'text', auth: 'object',
  rate_limit: { requests: 'number', period: 'text' }, writes_in_flight_max: 'number', limits: limitKinds, ui_dir: 'text',
};

const expected: Record<Kind, string> = {
  text: 'a string',
  number: 'a number (or its digits as a string)',
  list: 'a string or a list of strings',
  bool: 'true or false',
  object: 'an object',
  array: 'an array',
};

/** The file's settings as a JSON object, or a ConfigError naming the file and what is wrong with it. */
export function readConfigFile(path: string | undefined): Record<string, unknown> {
  if (path === undefined) return {};
  let text: string;
  try {
    text = readFileSync(path, 'utf8');
  } catch (err) {
    throw new ConfigError(`--config-file: cannot read ${path}: ${err instanceof Error ? err.message : String(err)}`);
  }
  let parsed: unknown;
  // A byte order mark (editors on Windows write one) is not JSON, but not a mistake either.
  const json = text.startsWith('\uFEFF') ? text.slice(1) : text;
  try {
    parsed = JSON.parse(json);
  } catch (err) {
    throw new ConfigError(`--config-file: ${path} is not valid JSON: ${err instanceof Error ? err.message : String(err)}`);
  }
  const twice = duplicateKey(json);
  if (twice !== undefined) throw new ConfigError(`--config-file: ${path} sets ${JSON.stringify(twice)} twice: keep one (JSON would take the last without a word)`);
  if (!isObject(parsed)) throw new ConfigError(`--config-file: ${path} must hold a JSON object`);
  checkShape(parsed, fileShape, '', ` in ${path}`);
  return parsed;
}

/** A file value already checked to be text, a number or a list, as the text a flag would give; undefined when absent. */
export function fileText(value: unknown): string | undefined {
  if (value === undefined) return undefined;
  return Array.isArray(value) ? value.join(',') : String(value);
}

/** Refuses unknown keys first (all of them at once), then the first value of the wrong kind. */
function checkShape(o: Record<string, unknown>, shape: Shape, prefix: string, where: string): void {
  const unknown = Object.keys(o).filter((k) => !Object.hasOwn(shape, k));
  if (unknown.length > 0) throw new ConfigError(`--config-file: unknown setting ${unknown.map((k) => JSON.stringify(prefix + k)).join(', ')}${where}`);
  for (const [key, kind] of Object.entries(shape)) {
    const value = o[key];
    if (value === undefined) continue;
    const name = prefix + key;
    if (typeof kind === 'object') {
      if (!isObject(value)) throw wrongKind(name, 'object', value);
      checkShape(value, kind, `${name}.`, '');
    } else if (!isKind(value, kind)) {
      throw wrongKind(name, kind, value);
    }
  }
}

function isKind(value: unknown, kind: Kind): boolean {
  switch (kind) {
    case 'text': return typeof value === 'string';
    case 'number': return typeof value === 'number' || typeof value === 'string';
    case 'list': return typeof value === 'string' || (Array.isArray(value) && value.every((v) => typeof v === 'string'));
    case 'bool': return typeof value === 'boolean';
    case 'object': return isObject(value);
    case 'array': return Array.isArray(value);
  }
}

function isObject(value: unknown): value is Record<string, unknown> {
  return typeof value === 'object' && value !== null && !Array.isArray(value);
}

/** The error for a value of the wrong kind; it names the value's type only, never the value (`encrypt` is a secret). */
function wrongKind(name: string, kind: Kind, value: unknown): ConfigError {
  const other = kind === 'list' && Array.isArray(value) ? value.find((v) => typeof v !== 'string') : undefined;
  const got = other === undefined ? typeName(value) : `a list holding ${typeName(other)}`;
  return new ConfigError(`--config-file: ${name} must be ${expected[kind]}, not ${got}`);
}

function typeName(value: unknown): string {
  if (value === null) return 'null';
  if (Array.isArray(value)) return 'an array';
  if (typeof value === 'object') return 'an object';
  if (typeof value === 'boolean') return value ? 'true' : 'false';
  return `a ${typeof value}`;
}
