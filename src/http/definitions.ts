/**
 * Check and service definitions as clients send them (agent register bodies, service-embedded checks,
 * the config file): Consul's field names matched without regard to case or underscores, both
 * spellings of renamed fields (RuntimeContainerID / DockerContainerID), unknown fields refused,
 * defaults applied, and every rule of consul-compat.md §1.3–1.4 and §4 checked before the log.
 */
import type { CheckRegistration, ServiceInput } from '../domain/commands.ts';
import { RegistryError } from '../domain/errors.ts';
import { checkOutputBytesMax } from '../domain/limits.ts';
import type { CheckDefinition, CheckKind, CheckStatus } from '../domain/types.ts';
import { metaProblem } from '../domain/meta-rules.ts';
import { formatGoDuration, goDurationMaxText, goDurationRule, goInvalidDuration, nsInRange, readGoDuration, type GoDuration } from '../util/duration.ts';
import { FieldErrors } from './body.ts';
import { checkHttpRequest } from './check-request.ts';
import type { Dialect } from './render.ts';
import { validateGrpcTarget, validateHostPort, validateHttpUrl } from '../probes/index.ts';

type Raw = Record<string, unknown>;

/**
 * Canonical field → its spellings, lower-cased: first Consul's own (Go's decoder matches it without regard
 * to case), then the twins Consul reads only when that one holds no value (`service_id`, `args`,
 * `script_args`; DockerContainerID for Roster's RuntimeContainerID). A key is matched to a field without
 * regard to case or underscores.
 */
const checkFields: Record<string, string[]> = {
  ID: ['id', 'checkid'], Name: ['name'], Notes: ['notes'], Status: ['status'], ServiceID: ['serviceid', 'service_id'],
  TTL: ['ttl'], HTTP: ['http'], Method: ['method'], Header: ['header'], Body: ['body'],
  TLSSkipVerify: ['tlsskipverify', 'tls_skip_verify'], TLSServerName: ['tlsservername', 'tls_server_name'], DisableRedirects: ['disableredirects'],
  TCP: ['tcp'], GRPC: ['grpc'], GRPCUseTLS: ['grpcusetls', 'grpc_use_tls'], Args: ['scriptargs', 'args', 'script_args'],
  RuntimeContainerID: ['runtimecontainerid', 'dockercontainerid', 'runtime_container_id', 'docker_container_id'], Shell: ['shell'],
  AliasService: ['aliasservice'], AliasNode: ['aliasnode'], Interval: ['interval'], Timeout: ['timeout'],
  DeregisterCriticalServiceAfter: ['deregistercriticalserviceafter', 'deregister_critical_service_after'],
  SuccessBeforePassing: ['successbeforepassing'], FailuresBeforeWarning: ['failuresbeforewarning'],
  FailuresBeforeCritical: ['failuresbeforecritical'], OutputMaxSize: ['outputmaxsize'],
  H2PING: ['h2ping'], H2PingUseTLS: ['h2pingusetls', 'h2ping_use_tls'], UDP: ['udp'], OSService: ['osservice'], TCPUseTLS: ['tcpusetls'],
  Node: ['node'], Definition: ['definition'], Type: ['type'], ExposedPort: ['exposedport'], CheckType: ['checktype'],
};

const serviceFields: Record<string, string[]> = {
  ID: ['id'], Name: ['name', 'service'], Tags: ['tags'], Address: ['address'], Port: ['port'], Meta: ['meta'],
  TaggedAddresses: ['taggedaddresses', 'tagged_addresses'], EnableTagOverride: ['enabletagoverride', 'enable_tag_override'],
  Weights: ['weights'], Kind: ['kind'], Check: ['check'], Checks: ['checks'], Proxy: ['proxy'], Connect: ['connect'],
  SocketPath: ['socketpath'], Namespace: ['namespace'], Partition: ['partition'], Locality: ['locality'],
};

const norm = (k: string) => k.toLowerCase().replace(/_/g, '');
/** Whether a value fills its field, so that Consul reads no twin of it. */
const holdsValue = (v: unknown) => v !== undefined && v !== null && v !== '' && v !== false && !(Array.isArray(v) && v.length === 0);

/**
 * Maps a raw object's keys to canonical names; an unknown key is a decode error, like Go's decoder. A key
 * goes where Go's decoder would send it: keys that differ only in case fill one field, the last one given
 * winning, and of a field's spellings the first that holds a value is read.
 */
function canonical(raw: Raw, fields: Record<string, string[]>, what: string): Raw {
  const index = new Map<string, string>();
  for (const [name, spellings] of Object.entries(fields)) for (const s of spellings) index.set(norm(s), name);
  // Per field, the value given last under each spelling (a spelling Consul does not have comes after its own).
  const given = new Map<string, Map<number, unknown>>();
  for (const [k, v] of Object.entries(raw)) {
    const name = index.get(norm(k));
    if (name === undefined) throw new RegistryError('definitionFieldUnknown', { field: k, what });
    const spellings = fields[name]!;
    const at = spellings.indexOf(k.toLowerCase());
    const bySpelling = given.get(name) ?? new Map<number, unknown>();
    given.set(name, bySpelling.set(at < 0 ? spellings.length : at, v));
  }
  return Object.fromEntries([...given].map(([name, bySpelling]) => {
    const values = [...bySpelling].sort(([a], [b]) => a - b).map(([, v]) => v);
    return [name, values.find(holdsValue) ?? values[0]];
  }));
}

function asObject(value: unknown, what: string): Raw {
  if (value === null || typeof value !== 'object' || Array.isArray(value)) {
    throw new RegistryError('definitionNotObject', { what });
  }
  return value as Raw;
}

class Reader {
  constructor(readonly raw: Raw, readonly errors: FieldErrors, readonly prefix = '') {}

  private name(field: string): string {
    return this.prefix + field;
  }

  str(field: string): string {
    const v = this.raw[field];
    if (v === undefined || v === null) return '';
    if (typeof v !== 'string') { this.errors.broke(this.name(field), 'notString', { goField: field }); return ''; }
    return v;
  }

  bool(field: string): boolean {
    const v = this.raw[field];
    if (v === undefined || v === null) return false;
    if (typeof v !== 'boolean') { this.errors.broke(this.name(field), 'notBool', { goField: field }); return false; }
    return v;
  }

  int(field: string, min = 0): number {
    const v = this.raw[field];
    if (v === undefined || v === null) return 0;
    if (typeof v !== 'number' || !Number.isInteger(v)) { this.errors.broke(this.name(field), 'notInteger', { goField: field }); return 0; }
    if (v < min) { this.errors.add(this.name(field), 'Range', `must be at least ${min}`); return min; }
    // Past this a number is no longer exact here, and past Go's int64 a Go client could not decode it.
    if (v > Number.MAX_SAFE_INTEGER) { this.errors.add(this.name(field), 'Range', `must be at most ${Number.MAX_SAFE_INTEGER}`); return 0; }
    return v;
  }

  /** A Go duration string (or a number of nanoseconds, as Go's decoder accepts); 0 when absent. */
  durationMs(field: string): number {
    const v = this.raw[field];
    if (v === undefined || v === null || v === '') return 0;
    const read: GoDuration = typeof v === 'string' ? readGoDuration(v)
      : typeof v === 'number' && nsInRange(v) ? { ns: v }
      : { problem: typeof v === 'number' ? 'range' : 'format', goError: goInvalidDuration(String(v)) };
    if ('problem' in read) {
      const [rule, text] = read.problem === 'range' ? ['Range', `must be at most ${goDurationMaxText}`] : ['Format', goDurationRule];
      this.errors.broke(this.name(field), 'durationInvalid', { rule, text, goError: read.goError });
      return 0;
    }
    const ns = read.ns;
    if (ns < 0) { this.errors.add(this.name(field), 'Range', 'must not be negative'); return 0; }
    return ns / 1e6;
  }

  strings(field: string): string[] | undefined {
    const v = this.raw[field];
    if (v === undefined || v === null) return undefined;
    if (!Array.isArray(v) || v.some((x) => typeof x !== 'string')) { this.errors.broke(this.name(field), 'notStrings', { goField: field }); return undefined; }
    return v as string[];
  }

  stringMap(field: string): Record<string, string> {
    const v = this.raw[field];
    if (v === undefined || v === null) return {};
    if (typeof v !== 'object' || Array.isArray(v) || Object.values(v).some((x) => typeof x !== 'string')) {
      this.errors.broke(this.name(field), 'notStringMap', { goField: field });
      return {};
    }
    return v as Record<string, string>;
  }

  header(field: string): Record<string, string[]> | undefined {
    const v = this.raw[field];
    if (v === undefined || v === null) return undefined;
    const ok = typeof v === 'object' && !Array.isArray(v) &&
      Object.values(v).every((x) => Array.isArray(x) && x.every((y) => typeof y === 'string'));
    if (!ok) { this.errors.broke(this.name(field), 'notHeaderMap', { goField: field }); return undefined; }
    return v as Record<string, string[]>;
  }
}

function invalidCheck(errors: FieldErrors, field: string, text: string): void {
  errors.broke(field, 'checkInvalid', { text });
}

const statuses = new Set<CheckStatus>(['passing', 'warning', 'critical']);

/** Default probe timeouts by kind (consul-compat.md §4). */
const timeoutMsDefault: Partial<Record<CheckKind, number>> = { http: 10_000, tcp: 10_000, grpc: 10_000, script: 30_000 };

export interface CheckParseOptions {
  /** Script and container checks are allowed (enable_script_checks, or a local definition with enable_local_script_checks). */
  scriptsAllowed: boolean;
  /** From where: the HTTP API ("remote") or the config file ("local"), for the refusal text. */
  origin: 'remote' | 'local';
  /** The request's wire dialect; the config file's definitions are read as the seed dialect reads them. @default 'seed' */
  dialect?: Dialect;
  /** For service-embedded checks: the service's id and name, and the default CheckID. */
  service?: { id: string; name: string; defaultCheckId: string };
}

/** Parses one check definition into a registration; throws a RegistryError listing every bad field. */
export function parseCheck(value: unknown, o: CheckParseOptions): CheckRegistration {
  const raw = canonical(asObject(value, 'check definition'), checkFields, 'check definition');
  const errors = new FieldErrors();
  const r = new Reader(raw, errors);
  const name = r.str('Name') || (o.service ? `Service '${o.service.name}' check` : '');
  if (name === '') errors.broke('Name', 'checkNameMissing');
  const checkId = r.str('ID') || o.service?.defaultCheckId || name;
  const statusText = r.str('Status');
  if (statusText !== '' && !statuses.has(statusText as CheckStatus)) {
    errors.broke('Status', 'checkStatusBad', { inService: o.service !== undefined });
  }
  for (const unsupported of ['H2PING', 'UDP', 'OSService']) {
    if (raw[unsupported] !== undefined && raw[unsupported] !== null && raw[unsupported] !== '') {
      errors.add(unsupported, 'Unsupported', `${unsupported} checks are not supported; use HTTP, TCP, GRPC, TTL, Args or AliasService`);
    }
  }
  // Every field is read before errors are thrown, so a wrong type anywhere is reported, never dropped.
  const notes = r.str('Notes');
  const serviceId = o.service?.id ?? r.str('ServiceID');
  const definition = parseDefinition(r, errors);
  if (definition.args?.length === 0) {
    // As Consul's IsScript has it, an empty Args makes no script check there, and the other fields decide the kind.
    if (o.dialect === 'consul') delete definition.args;
    else errors.add('Args', 'Required', 'must name the command to run: the program, then its arguments');
  }
  const type = kindOf(definition, errors);
  const outputMaxSize = raw.OutputMaxSize;
  if (typeof outputMaxSize === 'number' && Number.isInteger(outputMaxSize) && outputMaxSize < 0) errors.broke('OutputMaxSize', 'outputMaxSizeNegative');
  // Consul's last rule of CheckType.Validate; a FailuresBeforeWarning of 0 (or none) is FailuresBeforeCritical by now.
  if (definition.failuresBeforeWarning > definition.failuresBeforeCritical) {
    errors.broke('FailuresBeforeWarning', 'failuresBeforeWarningAboveCritical', { critical: definition.failuresBeforeCritical });
  }
  if (type === 'http' && definition.http !== undefined) {
    const bad = validateHttpUrl(definition.http);
    if (bad !== undefined) errors.broke('HTTP', 'checkHttpInvalid', { why: bad });
    checkHttpRequest(definition.method ?? '', definition.header, errors);
  }
  if (type === 'tcp' && definition.tcp !== undefined) {
    const bad = validateHostPort(definition.tcp);
    if (bad !== undefined) errors.broke('TCP', 'checkTcpInvalid', { why: bad });
  }
  if (type === 'grpc' && definition.grpc !== undefined) {
    const bad = validateGrpcTarget(definition.grpc);
    if (bad !== undefined) errors.broke('GRPC', 'checkGrpcInvalid', { why: bad });
  }
  errors.throwIfAny();
  if ((type === 'script' || type === 'docker') && !o.scriptsAllowed) {
    throw new RegistryError('scriptChecksDisabled', { remote: o.origin === 'remote' });
  }
  if (definition.timeoutMs === 0) definition.timeoutMs = timeoutMsDefault[type] ?? 0;
  return {
    checkId, name, notes, status: (statusText || 'critical') as CheckStatus, output: '',
    serviceId, type, definition,
  };
}

function parseDefinition(r: Reader, errors: FieldErrors): CheckDefinition {
  const intervalMs = r.durationMs('Interval');
  const timeoutMs = r.durationMs('Timeout');
  const failuresBeforeCritical = r.int('FailuresBeforeCritical');
  // As in Consul, OutputMaxSize only lowers the agent's cap: 0 (or none) keeps it, a larger value is held to it.
  // A negative one is refused once the probe kind's rules are checked (parseCheck), where Consul refuses it.
  const outputMaxSize = r.int('OutputMaxSize', -Infinity);
  const d: CheckDefinition = {
    intervalMs, timeoutMs, ttlMs: r.durationMs('TTL'),
    interval: intervalMs === 0 ? '' : formatGoDuration(intervalMs * 1e6),
    timeout: timeoutMs === 0 ? '' : formatGoDuration(timeoutMs * 1e6),
    deregisterCriticalServiceAfterMs: r.durationMs('DeregisterCriticalServiceAfter'),
    successBeforePassing: r.int('SuccessBeforePassing'),
    // As in Consul's agent, 0 is no threshold of its own: warning comes with critical.
    failuresBeforeWarning: r.int('FailuresBeforeWarning') || failuresBeforeCritical,
    failuresBeforeCritical,
    outputMaxSize: outputMaxSize > 0 ? Math.min(outputMaxSize, checkOutputBytesMax) : checkOutputBytesMax,
  };
  const optional = <K extends keyof CheckDefinition>(key: K, value: CheckDefinition[K] | '' | false | undefined) => {
    if (value !== undefined && value !== '' && value !== false) d[key] = value as CheckDefinition[K];
  };
  optional('http', r.str('HTTP'));
  optional('method', r.str('Method'));
  optional('header', r.header('Header'));
  optional('body', r.str('Body'));
  optional('tlsSkipVerify', r.bool('TLSSkipVerify'));
  optional('tlsServerName', r.str('TLSServerName'));
  optional('disableRedirects', r.bool('DisableRedirects'));
  optional('tcp', r.str('TCP'));
  optional('grpc', r.str('GRPC'));
  optional('grpcUseTls', r.bool('GRPCUseTLS'));
  optional('args', r.strings('Args'));
  optional('runtimeContainerId', r.str('RuntimeContainerID'));
  optional('shell', r.str('Shell'));
  optional('aliasService', r.str('AliasService'));
  optional('aliasNode', r.str('AliasNode'));
  return d;
}

/**
 * Decides the kind from the fields present and checks the kind's rules: Consul's CheckType.Validate, in
 * its order, so the first rule broken gives the consul dialect's text, then Roster's own.
 */
function kindOf(d: CheckDefinition, errors: FieldErrors): CheckKind {
  // The kinds that probe every Interval (Consul's intervalCheck).
  const probes: CheckKind[] = [];
  if (d.http !== undefined) probes.push('http');
  if (d.tcp !== undefined) probes.push('tcp');
  if (d.grpc !== undefined) probes.push('grpc');
  if (d.args !== undefined || d.runtimeContainerId !== undefined) probes.push(d.runtimeContainerId !== undefined ? 'docker' : 'script');
  // A TTL of 0 is none, as in Go.
  const ttl = d.ttlMs > 0;
  const alias = d.aliasService !== undefined || d.aliasNode !== undefined;
  const interval = d.intervalMs > 0;
  const broken: [string, string] | undefined = interval && ttl ? ['Interval', 'Interval and TTL cannot both be specified']
    : probes.length > 0 && !interval ? ['Interval', 'Interval must be > 0 for Script, HTTP, H2PING, TCP, UDP or OSService checks']
    : probes.length > 0 && alias ? ['Interval', 'Interval cannot be set for Alias checks']
    : alias && ttl ? ['TTL', 'TTL must be not be set for Alias checks']
    : probes.length === 0 && !alias && !ttl ? ['TTL', 'TTL must be > 0 for TTL checks']
    // An Interval on an alias check alone breaks none of them: it is taken and never used, as in Consul.
    : undefined;
  if (broken !== undefined) invalidCheck(errors, ...broken);
  const kinds: CheckKind[] = [...(ttl ? ['ttl' as const] : []), ...probes, ...(alias ? ['alias' as const] : [])];
  // Consul runs one of several kinds given together and drops the others without a word; here they are refused.
  if (kinds.length > 1) errors.broke('check', 'checkKindsConflict', { kinds: kinds.join(' and ') });
  if (kinds.includes('docker') && d.args === undefined) errors.add('Args', 'Required', 'container checks need Args (the command to run)');
  return kinds[0] ?? '';
}

// ---------------------------------------------------------------- services

export interface ParsedService {
  service: ServiceInput;
  checks: CheckRegistration[];
}

export function parseService(value: unknown, o: Omit<CheckParseOptions, 'service'>): ParsedService {
  const raw = canonical(asObject(value, 'service definition'), serviceFields, 'service definition');
  const errors = new FieldErrors();
  const r = new Reader(raw, errors);
  const name = r.str('Name');
  if (name === '') errors.broke('Name', 'serviceNameMissing');
  const address = r.str('Address');
  if (address === '0.0.0.0' || address === '::' || address === '[::]') {
    errors.broke('Address', 'serviceAddressUnspecified');
  }
  const weights = parseWeights(raw.Weights, errors);
  const port = r.int('Port');
  if (port > 65535) errors.add('Port', 'Range', 'must be at most 65535');
  const tagged = parseTaggedAddresses(raw.TaggedAddresses, errors);
  const meta = r.stringMap('Meta');
  checkServiceMeta(meta, errors);
  const service: ServiceInput = {
    id: r.str('ID') || name, service: name, kind: r.str('Kind'), tags: r.strings('Tags') ?? [], address, port,
    meta, taggedAddresses: tagged, weights, enableTagOverride: r.bool('EnableTagOverride'),
  };
  errors.throwIfAny();
  const embedded: unknown[] = [];
  if (raw.Check !== undefined && raw.Check !== null) embedded.push(raw.Check);
  if (raw.Checks !== undefined && raw.Checks !== null) {
    if (!Array.isArray(raw.Checks)) throw new RegistryError('checksNotArray');
    for (const check of raw.Checks as unknown[]) embedded.push(check);
  }
  const checks = embedded.map((c, i) => parseCheck(c, {
    ...o,
    service: { id: service.id, name: service.service, defaultCheckId: embedded.length > 1 ? `service:${service.id}:${i + 1}` : `service:${service.id}` },
  }));
  return { service, checks };
}

/** DNS weights, as Consul bounds them (a Go int, so a value past them would not even decode in a Go client). */
const weightMax = 65535;

function parseWeights(value: unknown, errors: FieldErrors): { Passing: number; Warning: number } {
  if (value === undefined || value === null) return { Passing: 1, Warning: 1 };
  const w = value as Raw;
  const passing = typeof w.Passing === 'number' ? w.Passing : 1;
  const warning = typeof w.Warning === 'number' ? w.Warning : 1;
  const why = typeof value !== 'object' || !Number.isInteger(passing) || !Number.isInteger(warning) ? 'Passing and Warning must be integers'
    : passing < 1 ? 'Passing must be greater than 0'
    : warning < 0 ? 'Warning must be greater or equal than 0'
    : passing > weightMax || warning > weightMax ? `DNS Weight must be between 0 and ${weightMax}` : undefined;
  if (why !== undefined) errors.broke('Weights', 'weightsInvalid', { why });
  return { Passing: passing, Warning: warning };
}

function checkServiceMeta(meta: Record<string, string>, errors: FieldErrors): void {
  const why = metaProblem(meta);
  if (why !== undefined) errors.broke('Meta', 'serviceMetaInvalid', { why });
}

function parseTaggedAddresses(value: unknown, errors: FieldErrors): Record<string, { Address: string; Port: number }> {
  if (value === undefined || value === null) return {};
  if (typeof value !== 'object' || Array.isArray(value)) { errors.add('TaggedAddresses', 'Type', 'must be an object'); return {}; }
  const out: Array<[string, { Address: string; Port: number }]> = [];
  for (const [k, v] of Object.entries(value as Raw)) {
    const a = v as Raw | null;
    if (a === null || typeof a !== 'object' || typeof (a.Address ?? '') !== 'string' || typeof (a.Port ?? 0) !== 'number') {
      errors.add(`TaggedAddresses.${k}`, 'Type', 'must be {Address, Port}');
      continue;
    }
    out.push([k, { Address: (a.Address as string | undefined) ?? '', Port: (a.Port as number | undefined) ?? 0 }]);
  }
  return Object.fromEntries(out);
}
