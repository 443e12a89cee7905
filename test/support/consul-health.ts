/**
 * What the consul-health suites share: the two dialect drivers (the real npm `consul` 2.0.1 client against
 * `--dialect consul`, raw HTTP against the seed dialect), the refusals each dialect renders, and one agent per
 * dialect per suite.
 */
import Consul from 'consul';
import { afterAll, beforeAll, expect } from 'vitest';
import { client, expectError, sleep, startAgent, type Agent } from './in-process.ts';

export type Client = ReturnType<typeof client>;
export type Dialect = 'consul' | 'seed';
export type Def = Record<string, unknown>;
export type TtlVerb = 'pass' | 'warn' | 'fail';
export type State = 'any' | 'passing' | 'warning' | 'critical';

export interface CheckRecord {
  Node: string; CheckID: string; Name: string; Status: string; Notes: string; Output: string; ServiceID: string;
  ServiceName: string; ServiceTags: string[]; Type: string; Interval: string; Timeout: string; ExposedPort: number;
  Definition: Record<string, unknown>; CreateIndex: number; ModifyIndex: number;
}
export interface NodeRecord { ID: string; Node: string; Address: string; Datacenter: string; Meta: Record<string, string> }
export interface HealthEntry {
  Node: NodeRecord;
  Service: { ID: string; Service: string; Tags: string[]; Address: string; Meta: Record<string, string> | null; Port?: number };
  Checks: CheckRecord[];
}
export interface AgentService {
  ID: string; Service: string; Tags: string[]; Meta: Record<string, string>; Port: number; Address: string;
  Weights: { Passing: number; Warning: number }; EnableTagOverride: boolean; Datacenter: string;
}
export interface ServiceNode {
  Node: string; Address: string; Datacenter: string; ServiceID: string; ServiceName: string; ServiceTags: string[];
  ServiceAddress: string; ServiceMeta: Record<string, string>; ServicePort: number;
}
export interface SessionRecord {
  ID: string; Name: string; Node: string; LockDelay: number; Behavior: string; TTL: string;
  NodeChecks: string[]; ServiceChecks: unknown; Checks?: string[]; CreateIndex: number; ModifyIndex: number;
}
export interface KvEntry { LockIndex: number; Key: string; Flags: number; Value: string | null; Session?: string }
export interface HealthQuery { service: string; passing?: boolean; tag?: string; filter?: string }

/** One scenario step per method; each dialect implements it the way its users would call it. */
export interface Driver {
  registerCheck(def: Def): Promise<void>;
  checks(filter?: string): Promise<Record<string, CheckRecord>>;
  ttl(verb: TtlVerb, id: string, note?: string): Promise<void>;
  deregisterCheck(id: string): Promise<void>;
  registerService(def: Def): Promise<void>;
  services(filter?: string): Promise<Record<string, AgentService>>;
  deregisterService(id: string): Promise<void>;
  healthNode(node: string): Promise<CheckRecord[]>;
  healthChecks(service: string): Promise<CheckRecord[]>;
  healthService(q: HealthQuery): Promise<HealthEntry[]>;
  healthState(state: State, filter?: string): Promise<CheckRecord[]>;
  catalogServices(): Promise<Record<string, string[]>>;
  catalogServiceNodes(service: string, tag?: string): Promise<ServiceNode[]>;
  catalogNodes(): Promise<NodeRecord[]>;
  catalogNode(node: string): Promise<{ Node: NodeRecord; Services: Record<string, AgentService> } | null>;
  datacenters(): Promise<string[]>;
  leader(): Promise<string>;
  peers(): Promise<string[]>;
  self(): Promise<any>;
  members(): Promise<any[]>;
  sessionCreate(checks?: string[]): Promise<string>;
  /** The session, or undefined when it does not exist. */
  sessionInfo(id: string): Promise<SessionRecord | undefined>;
  /** ok: the lock was taken; reason: the seed dialect's details.reason when it was not. */
  acquire(key: string, value: string, session: string): Promise<{ ok: boolean; reason?: string }>;
  /** The entry with Value decoded to text, or undefined when the key is missing. */
  kvGet(key: string): Promise<KvEntry | undefined>;
  /**
   * Blocks on /v1/health/service/{service} (consul: the client's watch; seed: ?index&wait), runs `change` once the
   * first answer is in, and resolves with the first later answer `done` accepts plus the two X-Consul-Index values.
   */
  blockOnHealthService(service: string, change: () => Promise<void>, done: (e: HealthEntry[]) => boolean):
    Promise<{ entries: HealthEntry[]; before: bigint; after: bigint }>;
}

/** TTLs long enough that no check lapses while the file runs. */
export const ttl = '10m';
/** Upper bound for anything the server does after the request that caused it (session invalidation). */
export const settleMs = 5000;
/** `wait` of the blocking reads; the read returns at the latest after this (plus jitter). */
export const blockWait = '10s';
export const plainText = 'text/plain; charset=utf-8';

export const enc = encodeURIComponent;
export const fq = (filter: string | undefined, sep = '?') => (filter === undefined ? '' : `${sep}filter=${enc(filter)}`);
export const unknownCheck = (id: string) => `Unknown check ID "${id}". Ensure that the check ID is passed, not the check name.`;
export const unknownService = (id: string) => `Unknown service ID "${id}". Ensure that the service ID is passed, not the service name.`;
export const scriptsDisabled = "Scripts are disabled on this agent from remote calls; to enable, configure 'enable_script_checks' to true";

/** Storage order of checks (consul-compat.md §0): CheckID compared case-insensitively. */
export const checkOrder = (a: string, b: string) => {
  const x = a.toLowerCase();
  const y = b.toLowerCase();
  return x < y ? -1 : x > y ? 1 : 0;
};
export const ids = (list: CheckRecord[]) => list.map((k) => k.CheckID);

export async function until<T>(what: string, probe: () => Promise<T>, ok: (v: T) => boolean): Promise<T> {
  const deadline = Date.now() + settleMs;
  for (;;) {
    const v = await probe();
    if (ok(v)) return v;
    if (Date.now() > deadline) throw new Error(`${what}: not reached within ${settleMs} ms, last ${JSON.stringify(v)}`);
    await sleep(50);
  }
}

// ------------------------------------------------------------------------------------------------------ drivers

/** consul dialect: every step through the npm client, as a Consul user would write it. */
export function consulDriver(k: Consul): Driver {
  const api = k as any; // the client's .d.ts lags its own code (PascalCase options, `filter` on list, required `timeout`)
  const opt = (o: Record<string, unknown>) => Object.fromEntries(Object.entries(o).filter(([, v]) => v !== undefined));
  return {
    registerCheck: async (def) => { expect(await api.agent.check.register(def)).toBeUndefined(); },
    checks: (filter) => api.agent.check.list(opt({ filter })),
    ttl: async (verb, id, note) => { expect(await api.agent.check[verb](opt({ id, note }))).toBeUndefined(); },
    deregisterCheck: async (id) => { expect(await api.agent.check.deregister(id)).toBeUndefined(); },
    registerService: async (def) => { expect(await api.agent.service.register(def)).toBeUndefined(); },
    services: (filter) => api.agent.services(opt({ filter })),
    deregisterService: async (id) => { expect(await api.agent.service.deregister(id)).toBeUndefined(); },
    healthNode: (node) => api.health.node(node),
    healthChecks: (service) => api.health.checks(service),
    healthService: (q) => api.health.service(opt({ ...q })),
    healthState: (state, filter) => api.health.state(opt({ state, filter })),
    catalogServices: () => api.catalog.services(),
    catalogServiceNodes: (service, tag) => api.catalog.service.nodes(opt({ service, tag })),
    catalogNodes: () => api.catalog.nodes(),
    catalogNode: (node) => api.catalog.node.services(node),
    datacenters: () => api.catalog.datacenters(),
    leader: () => api.status.leader(),
    peers: () => api.status.peers(),
    self: () => api.agent.self(),
    members: () => api.agent.members(),
    sessionCreate: async (checks) => (await api.session.create(opt({ checks }))).ID,
    sessionInfo: (id) => api.session.info(id),
    // papi resolves a JSON `false` body as undefined; the exact body is asserted over raw HTTP where it matters.
    acquire: async (key, value, session) => ({ ok: (await api.kv.set({ key, value, acquire: session })) === true }),
    kvGet: (key) => api.kv.get(key),
    blockOnHealthService: (service, change, done) => new Promise((resolve, reject) => {
      const watch = api.watch({ method: api.health.service, options: { service, wait: blockWait }, maxAttempts: 0 });
      let before: bigint | undefined;
      const timer = setTimeout(() => { watch.end(); reject(new Error('the watch saw no matching change')); }, 20_000);
      watch.on('error', (err: Error) => { clearTimeout(timer); watch.end(); reject(err); });
      watch.on('change', (entries: HealthEntry[], res: { headers: Record<string, string> }) => {
        const index = BigInt(res.headers['x-consul-index']!);
        if (before === undefined) {
          before = index;
          change().catch((err) => { clearTimeout(timer); watch.end(); reject(err); });
        } else if (done(entries)) {
          clearTimeout(timer);
          watch.end();
          resolve({ entries, before, after: index });
        }
      });
    }),
  };
}

function healthPath(q: HealthQuery): string {
  const params = [q.passing ? 'passing' : '', q.tag === undefined ? '' : `tag=${enc(q.tag)}`, fq(q.filter, '')];
  const query = params.filter((p) => p !== '').join('&');
  return `/v1/health/service/${enc(q.service)}${query === '' ? '' : `?${query}`}`;
}

/** A blocking read of /v1/health/service/{service} woken by `change`; asserts the woken answer satisfies `done`. */
async function blockOnHealthService(c: Client, service: string, change: () => Promise<void>, done: (entries: HealthEntry[]) => boolean) {
  const path = `/v1/health/service/${enc(service)}`;
  const first = await c.get(path);
  expect(first.status).toBe(200);
  const before = BigInt(first.headers.get('x-consul-index')!);
  const pending = c.get(`${path}?index=${before}&wait=${blockWait}`);
  await sleep(200); // let the read reach the server and block before the change is made
  await change();
  const r = await pending;
  expect(r.status, r.text).toBe(200);
  const entries = r.json<HealthEntry[]>();
  expect(done(entries), `the woken read should show the change: ${r.text}`).toBe(true);
  return { entries, before, after: BigInt(r.headers.get('x-consul-index')!) };
}

/** seed dialect: the same steps over raw HTTP, asserting the seed's 200s. */
export function seedDriver(c: Client): Driver {
  const json = async <T>(path: string): Promise<T> => {
    const r = await c.get(path);
    expect(r.status, `GET ${path}: ${r.text}`).toBe(200);
    expect(r.headers.get('content-type')).toMatch(/^application\/json/);
    return r.json<T>();
  };
  const empty = async (path: string, body?: unknown) => {
    const r = await c.put(path, body);
    expect(r.status, `PUT ${path}: ${r.text}`).toBe(200);
    expect(r.text).toBe('');
  };
  return {
    registerCheck: (def) => empty('/v1/agent/check/register', def),
    checks: (filter) => json(`/v1/agent/checks${fq(filter)}`),
    ttl: (verb, id, note) => empty(`/v1/agent/check/${verb}/${enc(id)}${note === undefined ? '' : `?note=${enc(note)}`}`),
    deregisterCheck: (id) => empty(`/v1/agent/check/deregister/${enc(id)}`),
    registerService: (def) => empty('/v1/agent/service/register', def),
    services: (filter) => json(`/v1/agent/services${fq(filter)}`),
    deregisterService: (id) => empty(`/v1/agent/service/deregister/${enc(id)}`),
    healthNode: (node) => json(`/v1/health/node/${enc(node)}`),
    healthChecks: (service) => json(`/v1/health/checks/${enc(service)}`),
    healthService: (q) => json(healthPath(q)),
    healthState: (state, filter) => json(`/v1/health/state/${state}${fq(filter)}`),
    catalogServices: () => json('/v1/catalog/services'),
    catalogServiceNodes: (service, tag) => json(`/v1/catalog/service/${enc(service)}${tag === undefined ? '' : `?tag=${enc(tag)}`}`),
    catalogNodes: () => json('/v1/catalog/nodes'),
    catalogNode: (node) => json(`/v1/catalog/node/${enc(node)}`),
    datacenters: () => json('/v1/catalog/datacenters'),
    leader: () => json('/v1/status/leader'),
    peers: () => json('/v1/status/peers'),
    self: () => json('/v1/agent/self'),
    members: () => json('/v1/agent/members'),
    sessionCreate: async (checks) => {
      const r = await c.put('/v1/session/create', checks === undefined ? {} : { Checks: checks });
      expect(r.status, r.text).toBe(200);
      return r.json<{ ID: string }>().ID;
    },
    sessionInfo: async (id) => (await json<SessionRecord[]>(`/v1/session/info/${id}`))[0],
    acquire: async (key, value, session) => {
      const r = await c.put(`/v1/kv/${key}?acquire=${session}`, value);
      if (r.status === 200) return { ok: r.json<boolean>() };
      const body = expectError(r, 409, 1025);
      return { ok: false, reason: body.details?.reason };
    },
    kvGet: async (key) => {
      const r = await c.get(`/v1/kv/${key}`);
      if (r.status === 404) return undefined;
      expect(r.status, r.text).toBe(200);
      const e = r.json<KvEntry[]>()[0]!;
      return { ...e, Value: e.Value === null ? null : Buffer.from(e.Value, 'base64').toString() };
    },
    blockOnHealthService: (service, change, done) => blockOnHealthService(c, service, change, done),
  };
}

// ------------------------------------------------------------------------------------------------ failure cases

/** One request the server must refuse, with its rendering in each dialect. */
export interface Failure {
  what: string;
  /** The npm client call (consul dialect); null when the client cannot send this request (it validates or drops it). */
  viaClient: ((k: any) => Promise<unknown>) | null;
  /**
   * The rejection's err.message: the body when text/plain and under 80 chars, else the lower-cased status text. (node-consul's
   * body middleware hands the response error back without papi's `consul: <call>: ` prefix that consul-compat §0 mentions.)
   */
  clientMessage?: string;
  raw: { method: string; path: string; body?: unknown };
  consul: { status: number; text: string | RegExp };
  seed: { status: number; code: number; details?: string };
}

export async function expectFailure(dialect: Dialect, c: Client, k: Consul, f: Failure): Promise<any> {
  const r = await c.req(f.raw.method, f.raw.path, f.raw.body);
  if (dialect === 'seed') {
    const body = expectError(r, f.seed.status, f.seed.code);
    if (f.seed.details !== undefined) expect(body.details, r.text).toHaveProperty([f.seed.details]);
    return body;
  }
  expect(r.status, r.text).toBe(f.consul.status);
  expect(r.headers.get('content-type')).toBe(plainText);
  if (typeof f.consul.text === 'string') expect(r.text).toBe(f.consul.text);
  else expect(r.text).toMatch(f.consul.text);
  if (f.viaClient !== null) {
    const err = await f.viaClient(k).then(() => undefined, (e: unknown) => e as Error & { statusCode?: number });
    expect(err, `${f.what}: the client call should reject`).toBeInstanceOf(Error);
    expect(err!.statusCode).toBe(f.consul.status);
    expect(err!.message).toBe(f.clientMessage);
  }
  return r.text;
}

/** Deregistering an id the agent does not know: 404 with Consul's text, or code 1006. */
export function deregisterUnknown(kind: 'check' | 'service', id: string): Failure {
  return {
    what: `deregister of an unknown ${kind} id`,
    viaClient: (k) => k.agent[kind].deregister(id),
    clientMessage: 'not found',
    raw: { method: 'PUT', path: `/v1/agent/${kind}/deregister/${id}` },
    consul: { status: 404, text: kind === 'check' ? unknownCheck(id) : unknownService(id) },
    seed: { status: 404, code: 1006 },
  };
}

export const dialects = ['consul', 'seed'] as const;

/** One dialect's clients, handed to the suite once its agent is started. */
export interface DialectAgent { c: Client; k: Consul; d: Driver }

/**
 * Starts one agent in `dialect` for the enclosing suite (stopped after it) and hands its clients to `ready`.
 * Returns `removeAll`, which removes what a scenario registered, so the next one (and the catalog's exact
 * answers) start clean.
 */
export function consulHealthSuite(dialect: Dialect, ready: (s: DialectAgent) => void) {
  let agent: Agent | undefined;
  let started: DialectAgent | undefined;

  beforeAll(async () => {
    agent = await startAgent({ args: dialect === 'consul' ? ['--dialect', 'consul'] : [] });
    const c = client(agent);
    const k = new Consul({ host: '127.0.0.1', port: Number(new URL(agent.url).port) });
    started = { c, k, d: dialect === 'consul' ? consulDriver(k) : seedDriver(c) };
    ready(started);
  }, 30_000);

  afterAll(async () => {
    (started?.k as any)?.destroy();
    await agent?.stop();
  });

  return async function removeAll(checks: string[], services: string[]): Promise<void> {
    for (const id of checks) await started!.c.put(`/v1/agent/check/deregister/${enc(id)}`);
    for (const id of services) await started!.c.put(`/v1/agent/service/deregister/${enc(id)}`);
  };
}
