// Goal: the health/catalog/status/check-bound-session scenarios of consul-compat.md §1.3–1.6 and §5 run once per dialect — through the real npm `consul` 2.0.1 client against `--dialect consul` and over raw HTTP against the seed dialect — so the two renderings of one behaviour cannot drift apart.
import Consul from 'consul';
import { afterAll, beforeAll, describe, expect, test } from 'vitest';
import { client, expectError, sleep, startAgent, type Agent } from '../support/agent.ts';

type Client = ReturnType<typeof client>;
type Dialect = 'consul' | 'seed';
type Def = Record<string, unknown>;
type TtlVerb = 'pass' | 'warn' | 'fail';
type State = 'any' | 'passing' | 'warning' | 'critical';

interface CheckRecord {
  Node: string; CheckID: string; Name: string; Status: string; Notes: string; Output: string; ServiceID: string;
  ServiceName: string; ServiceTags: string[]; Type: string; Interval: string; Timeout: string; ExposedPort: number;
  Definition: Record<string, unknown>; CreateIndex: number; ModifyIndex: number;
}
interface NodeRecord { ID: string; Node: string; Address: string; Datacenter: string; Meta: Record<string, string> }
interface HealthEntry {
  Node: NodeRecord;
  Service: { ID: string; Service: string; Tags: string[]; Address: string; Meta: Record<string, string> | null; Port?: number };
  Checks: CheckRecord[];
}
interface AgentService {
  ID: string; Service: string; Tags: string[]; Meta: Record<string, string>; Port: number; Address: string;
  Weights: { Passing: number; Warning: number }; EnableTagOverride: boolean; Datacenter: string;
}
interface ServiceNode {
  Node: string; Address: string; Datacenter: string; ServiceID: string; ServiceName: string; ServiceTags: string[];
  ServiceAddress: string; ServiceMeta: Record<string, string>; ServicePort: number;
}
interface SessionRecord {
  ID: string; Name: string; Node: string; LockDelay: number; Behavior: string; TTL: string;
  NodeChecks: string[]; ServiceChecks: unknown; Checks?: string[]; CreateIndex: number; ModifyIndex: number;
}
interface KvEntry { LockIndex: number; Key: string; Flags: number; Value: string | null; Session?: string }
interface HealthQuery { service: string; passing?: boolean; tag?: string; filter?: string }

/** One scenario step per method; each dialect implements it the way its users would call it. */
interface Driver {
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
const ttl = '10m';
/** Upper bound for anything the server does after the request that caused it (session invalidation). */
const settleMs = 5000;
/** `wait` of the blocking reads; the read returns at the latest after this (plus jitter). */
const blockWait = '10s';
const plainText = 'text/plain; charset=utf-8';

const enc = encodeURIComponent;
const fq = (filter: string | undefined, sep = '?') => (filter === undefined ? '' : `${sep}filter=${enc(filter)}`);
const unknownCheck = (id: string) => `Unknown check ID "${id}". Ensure that the check ID is passed, not the check name.`;
const unknownService = (id: string) => `Unknown service ID "${id}". Ensure that the service ID is passed, not the service name.`;
const scriptsDisabled = "Scripts are disabled on this agent from remote calls; to enable, configure 'enable_script_checks' to true";

/** Storage order of checks (consul-compat.md §0): CheckID compared case-insensitively. */
const checkOrder = (a: string, b: string) => {
  const x = a.toLowerCase();
  const y = b.toLowerCase();
  return x < y ? -1 : x > y ? 1 : 0;
};
const ids = (list: CheckRecord[]) => list.map((k) => k.CheckID);

async function until<T>(what: string, probe: () => Promise<T>, ok: (v: T) => boolean): Promise<T> {
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
function consulDriver(k: Consul): Driver {
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

/** seed dialect: the same steps over raw HTTP, asserting the seed's 200s. */
function seedDriver(c: Client): Driver {
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
  const healthPath = (q: HealthQuery) => {
    const params = [q.passing ? 'passing' : '', q.tag === undefined ? '' : `tag=${enc(q.tag)}`, fq(q.filter, '')];
    const query = params.filter((p) => p !== '').join('&');
    return `/v1/health/service/${enc(q.service)}${query === '' ? '' : `?${query}`}`;
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
    blockOnHealthService: async (service, change, done) => {
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
    },
  };
}

// ------------------------------------------------------------------------------------------------ failure cases

/** One request the server must refuse, with its rendering in each dialect. */
interface Failure {
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

async function expectFailure(dialect: Dialect, c: Client, k: Consul, f: Failure): Promise<any> {
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

// -------------------------------------------------------------------------------------------------- scenarios

describe.each(['consul', 'seed'] as const)('%s dialect', (dialect) => {
  let agent: Agent;
  let c: Client;
  let k: Consul;
  let d: Driver;

  beforeAll(async () => {
    agent = await startAgent({ args: dialect === 'consul' ? ['--dialect', 'consul'] : [] });
    c = client(agent);
    k = new Consul({ host: '127.0.0.1', port: Number(new URL(agent.url).port) });
    d = dialect === 'consul' ? consulDriver(k) : seedDriver(c);
  }, 30_000);

  afterAll(async () => {
    (k as any)?.destroy();
    await agent?.stop();
    agent?.cleanup();
  });

  /** Removes what a scenario registered, so the next one (and the catalog's exact answers) start clean. */
  async function removeAll(checks: string[], services: string[]): Promise<void> {
    for (const id of checks) await c.put(`/v1/agent/check/deregister/${enc(id)}`);
    for (const id of services) await c.put(`/v1/agent/service/deregister/${enc(id)}`);
  }

  // Runs first: catalog/services must be exact for an agent holding one service (node-consul's acceptance test).
  describe('4. catalog & status (§1.6, §1.4)', () => {
    beforeAll(async () => {
      await d.registerService({ Name: 'cat-web', ID: 'cat-web-1', Tags: ['v1'], Address: '127.0.0.10', Port: 8080, Meta: { team: 'a' } });
      await d.registerService({ Name: 'cat-web', ID: 'cat-web-2', Tags: ['v1', 'v2'], Port: 8081 });
    });
    afterAll(() => removeAll([], ['cat-web-1', 'cat-web-2']));

    test('catalog.services(): the tag union per service; the consul dialect adds exactly "consul": []', async () => {
      const want = dialect === 'consul' ? { consul: [], 'cat-web': ['v1', 'v2'] } : { 'cat-web': ['v1', 'v2'] };
      expect(await d.catalogServices()).toEqual(want);
    });

    test('catalog.service.nodes(): one ServiceNode per instance in ID order, ?tag narrows, unknown service []', async () => {
      const all = await d.catalogServiceNodes('cat-web');
      expect(all.map((n) => n.ServiceID)).toEqual(['cat-web-1', 'cat-web-2']);
      expect(all[0]).toMatchObject({
        Node: 'node1', Datacenter: 'dc1', ServiceID: 'cat-web-1', ServiceName: 'cat-web', ServiceTags: ['v1'],
        ServiceAddress: '127.0.0.10', ServicePort: 8080, ServiceMeta: { team: 'a' },
      });
      expect(all[1]).toMatchObject({ ServiceID: 'cat-web-2', ServiceTags: ['v1', 'v2'], ServiceAddress: '', ServicePort: 8081 });
      expect((await d.catalogServiceNodes('cat-web', 'v2')).map((n) => n.ServiceID)).toEqual(['cat-web-2']);
      expect(await d.catalogServiceNodes('cat-missing')).toEqual([]);
    });

    test('catalog.nodes() lists node1; catalog.node.services() gives the node and its services, null for an unknown node', async () => {
      const nodes = await d.catalogNodes();
      expect(nodes).toHaveLength(1);
      expect(nodes[0]).toMatchObject({ Node: 'node1', Datacenter: 'dc1' });
      expect(nodes[0]!.Address).toMatch(/^\d+\.\d+\.\d+\.\d+$/);
      const node = await d.catalogNode('node1');
      expect(node!.Node).toMatchObject({ Node: 'node1', Datacenter: 'dc1' });
      expect(node!.Services['cat-web-1']).toMatchObject({ ID: 'cat-web-1', Service: 'cat-web', Tags: ['v1'], Port: 8080, Address: '127.0.0.10' });
      expect(node!.Services['cat-web-2']).toMatchObject({ ID: 'cat-web-2', Service: 'cat-web', Tags: ['v1', 'v2'], Port: 8081 });
      // papi resolves a JSON `null` body as undefined, so the exact body is read raw.
      expect([null, undefined]).toContain(await d.catalogNode('no-such-node'));
      const raw = await c.get('/v1/catalog/node/no-such-node');
      expect(raw.status).toBe(200);
      expect(raw.text).toBe('null');
    });

    test('catalog.datacenters() is ["dc1"]; status.leader() is "host:port" and status.peers() is [leader]', async () => {
      expect(await d.datacenters()).toEqual(['dc1']);
      const leader = await d.leader();
      expect(leader).toMatch(/^\d+\.\d+\.\d+\.\d+:\d+$/);
      expect(await d.peers()).toEqual([leader]);
    });

    test('agent.self(): Config.NodeName/Datacenter/Server and Member.Name/Addr; agent.members(): this agent, Status 1', async () => {
      const self = await d.self();
      expect(self.Config).toMatchObject({ NodeName: 'node1', Datacenter: 'dc1', Server: true });
      expect(self.Member).toMatchObject({ Name: 'node1' });
      expect(self.Member.Addr).toMatch(/^\d+\.\d+\.\d+\.\d+$/);
      const members = await d.members();
      expect(members).toHaveLength(1);
      expect(members[0]).toMatchObject({ Name: 'node1', Addr: self.Member.Addr, Status: 1 });
    });

    test('status and agent endpoints carry no index headers (§1)', async () => {
      for (const path of ['/v1/status/leader', '/v1/status/peers', '/v1/agent/self', '/v1/agent/checks', '/v1/agent/services']) {
        const r = await c.get(path);
        expect(r.status, path).toBe(200);
        expect(r.headers.get('x-consul-index'), path).toBeNull();
      }
    });
  });

  describe('1. agent checks (§1.3)', () => {
    const made = ['ac-ttl', 'ac-http', 'ac-tcp', 'ac-raw', 'ac-upd'];
    afterAll(() => removeAll(made, []));

    test('agent.check.register: ttl, http and tcp definitions are accepted; agent.checks() shows the record and its Type', async () => {
      await d.registerCheck({ ID: 'ac-ttl', Name: 'ac ttl', Notes: 'ttl notes', TTL: ttl });
      // Closed port: only the registration, the record's shape and Type are asserted, never a probe result.
      await d.registerCheck({
        ID: 'ac-http', Name: 'ac http', HTTP: 'http://127.0.0.1:1/health', Method: 'POST', Header: { 'X-Test': ['a'] },
        Body: '{}', TLSSkipVerify: true, Interval: '30s', Timeout: '2s',
      });
      await d.registerCheck({ ID: 'ac-tcp', Name: 'ac tcp', TCP: '127.0.0.1:1', Interval: '1m30s' });
      const all = await d.checks();
      expect(Object.keys(all).sort()).toEqual(['ac-http', 'ac-tcp', 'ac-ttl']);
      expect(all['ac-ttl']).toEqual({
        Node: 'node1', CheckID: 'ac-ttl', Name: 'ac ttl', Status: 'critical', Notes: 'ttl notes', Output: '',
        ServiceID: '', ServiceName: '', ServiceTags: [], Type: 'ttl', Interval: '', Timeout: '', ExposedPort: 0,
        Definition: {}, CreateIndex: 0, ModifyIndex: 0,
      });
      expect(all['ac-http']).toMatchObject({ CheckID: 'ac-http', Name: 'ac http', Type: 'http', Interval: '30s', Timeout: '2s', ServiceTags: [] });
      expect(all['ac-tcp']).toMatchObject({ CheckID: 'ac-tcp', Name: 'ac tcp', Type: 'tcp', Interval: '1m30s', Timeout: '' });
    });

    test('agent.check.list({filter}): §5 examples on the check records', async () => {
      expect(Object.keys(await d.checks('Type == ttl'))).toEqual(['ac-ttl']);
      expect(Object.keys(await d.checks('Status != passing and Type == ttl'))).toEqual(['ac-ttl']);
      expect(Object.keys(await d.checks('Name matches "^ac t[a-z]+$"')).sort()).toEqual(['ac-tcp', 'ac-ttl']);
      expect(await d.checks('Type == grpc')).toEqual({});
    });

    test('pass/warn/fail with a note: Status follows, the note becomes Output, Notes is untouched', async () => {
      for (const [verb, status] of [['pass', 'passing'], ['warn', 'warning'], ['fail', 'critical']] as const) {
        await d.ttl(verb, 'ac-ttl', `note for ${verb}`);
        expect((await d.checks())['ac-ttl'], verb).toMatchObject({ Status: status, Output: `note for ${verb}`, Notes: 'ttl notes' });
      }
      await d.ttl('pass', 'ac-ttl');
      expect((await d.checks())['ac-ttl']).toMatchObject({ Status: 'passing', Output: '' });
    });

    test('agent.check.deregister removes the check', async () => {
      await d.deregisterCheck('ac-tcp');
      expect(Object.keys(await d.checks()).sort()).toEqual(['ac-http', 'ac-ttl']);
    });

    test('register, pass and deregister answer 200 with an empty body (consul: no Content-Type, Content-Length 0)', async () => {
      const steps: [string, unknown][] = [
        ['/v1/agent/check/register', { ID: 'ac-raw', Name: 'ac raw', TTL: ttl }],
        ['/v1/agent/check/pass/ac-raw', undefined],
        ['/v1/agent/check/deregister/ac-raw', undefined],
      ];
      for (const [path, body] of steps) {
        const r = await c.put(path, body);
        expect(r.status, `${path}: ${r.text}`).toBe(200);
        expect(r.text, path).toBe('');
        if (dialect === 'consul') {
          expect(r.headers.get('content-type'), path).toBeNull();
          expect(r.headers.get('content-length'), path).toBe('0');
        }
      }
      expect(await d.checks()).not.toHaveProperty('ac-raw');
    });

    describe('refusals', () => {
      beforeAll(() => d.registerCheck({ ID: 'ac-upd', Name: 'ac upd', TTL: ttl }));

      const failures: Failure[] = [
        {
          what: 'pass of an unknown check id',
          viaClient: (k) => k.agent.check.pass('ac-missing'),
          clientMessage: 'not found', // the body is 80 chars or more
          raw: { method: 'PUT', path: '/v1/agent/check/pass/ac-missing' },
          consul: { status: 404, text: unknownCheck('ac-missing') },
          seed: { status: 404, code: 1006 },
        },
        {
          what: 'deregister of an unknown check id',
          viaClient: (k) => k.agent.check.deregister('ac-missing'),
          clientMessage: 'not found',
          raw: { method: 'PUT', path: '/v1/agent/check/deregister/ac-missing' },
          consul: { status: 404, text: unknownCheck('ac-missing') },
          seed: { status: 404, code: 1006 },
        },
        {
          what: 'Interval without a probe kind', // the client refuses this itself ("args/grpc/… and interval, ttl, …")
          viaClient: null,
          raw: { method: 'PUT', path: '/v1/agent/check/register', body: { ID: 'ac-bad-kind', Name: 'ac bad kind', Interval: '10s' } },
          // Consul's CheckType.Validate: neither an interval kind nor an alias, so the TTL rule is the one that fails.
          consul: { status: 400, text: 'Invalid check: TTL must be > 0 for TTL checks' },
          seed: { status: 400, code: 1009 },
        },
        {
          what: 'missing Name', // the client refuses this itself ("name required")
          viaClient: null,
          raw: { method: 'PUT', path: '/v1/agent/check/register', body: { ID: 'ac-bad-name', TTL: ttl } },
          consul: { status: 400, text: 'Missing check name' },
          seed: { status: 400, code: 1009, details: 'Name' },
        },
        {
          what: 'a script check without enable_script_checks',
          viaClient: (k) => k.agent.check.register({ id: 'ac-bad-script', name: 'ac bad script', args: ['/bin/true'], interval: '10s' }),
          clientMessage: 'internal server error',
          raw: { method: 'PUT', path: '/v1/agent/check/register', body: { ID: 'ac-bad-script', Name: 'ac bad script', Args: ['/bin/true'], Interval: '10s' } },
          consul: { status: 500, text: scriptsDisabled },
          seed: { status: 403, code: 1004 },
        },
        {
          what: 'check/update with a bad Status', // the client has no update call
          viaClient: null,
          raw: { method: 'PUT', path: '/v1/agent/check/update/ac-upd', body: { Status: 'x', Output: 'o' } },
          consul: { status: 400, text: "Invalid check status: 'x'" },
          seed: { status: 400, code: 1009, details: 'Status' },
        },
        {
          what: 'an unknown field in the body', // the client only sends fields it knows
          viaClient: null,
          raw: { method: 'PUT', path: '/v1/agent/check/register', body: { ID: 'ac-bad-field', Name: 'ac bad field', TTL: ttl, Bogus: 1 } },
          consul: { status: 400, text: 'Request decode failed: json: unknown field "Bogus"' },
          seed: { status: 400, code: 1009 },
        },
      ];

      test.each(failures)('$what', async (f) => {
        await expectFailure(dialect, c, k, f);
      });

      test('no refused registration left a check behind; ac-upd kept its status', async () => {
        const all = await d.checks();
        for (const id of ['ac-bad-kind', 'ac-bad-name', 'ac-bad-script', 'ac-bad-field']) expect(all).not.toHaveProperty(id);
        expect(all['ac-upd']).toMatchObject({ Status: 'critical', Output: '' });
      });
    });
  });

  describe('2. agent services (§1.4)', () => {
    const made = ['as-web-1', 'as-multi-1', 'as-plain'];
    afterAll(() => removeAll([], made));

    test('agent.service.register with name, id, tags, meta, address, port and check/checks; agent.services() shows them', async () => {
      await d.registerService({
        Name: 'as-web', ID: 'as-web-1', Tags: ['v1', 'primary'], Meta: { env: 'prod', team: 'core' }, Address: '127.0.0.2',
        Port: 8080, Check: { TTL: ttl, Notes: 'web ttl' },
      });
      await d.registerService({ Name: 'as-multi', ID: 'as-multi-1', Port: 9000, Checks: [{ TTL: ttl }, { TTL: ttl, Status: 'passing' }] });
      await d.registerService({ Name: 'as-plain' });
      const all = await d.services();
      expect(Object.keys(all).sort()).toEqual(['as-multi-1', 'as-plain', 'as-web-1']);
      expect(all['as-web-1']).toMatchObject({
        ID: 'as-web-1', Service: 'as-web', Tags: ['v1', 'primary'], Meta: { env: 'prod', team: 'core' }, Port: 8080,
        Address: '127.0.0.2', Weights: { Passing: 1, Warning: 1 }, EnableTagOverride: false, Datacenter: 'dc1',
      });
      expect(all['as-plain']).toMatchObject({ ID: 'as-plain', Service: 'as-plain', Tags: [], Meta: {}, Port: 0, Address: '' });
    });

    test('embedded checks are named service:<id> (service:<id>:N when several) with Name "Service \'<name>\' check"', async () => {
      const all = await d.checks();
      expect(Object.keys(all).sort()).toEqual(['service:as-multi-1:1', 'service:as-multi-1:2', 'service:as-web-1']);
      expect(all['service:as-web-1']).toMatchObject({
        CheckID: 'service:as-web-1', Name: "Service 'as-web' check", Notes: 'web ttl', Status: 'critical', ServiceID: 'as-web-1',
        ServiceName: 'as-web', ServiceTags: ['v1', 'primary'], Type: 'ttl',
      });
      expect(all['service:as-multi-1:1']).toMatchObject({ Name: "Service 'as-multi' check", ServiceID: 'as-multi-1', Status: 'critical' });
      expect(all['service:as-multi-1:2']).toMatchObject({ Name: "Service 'as-multi' check", ServiceID: 'as-multi-1', Status: 'passing' });
      // A TTL check embedded in a service is driven by its check id like any other.
      await d.ttl('pass', 'service:as-web-1', 'up');
      expect((await d.checks())['service:as-web-1']).toMatchObject({ Status: 'passing', Output: 'up' });
    });

    test('agent.services({filter}): §5 examples on services', async () => {
      expect(Object.keys(await d.services('"primary" in Tags'))).toEqual(['as-web-1']);
      expect(Object.keys(await d.services('Meta.env == prod'))).toEqual(['as-web-1']);
      expect(Object.keys(await d.services('Port == 9000'))).toEqual(['as-multi-1']);
    });

    test('agent.service.deregister removes the service and its checks', async () => {
      await d.deregisterService('as-web-1');
      expect(Object.keys(await d.services()).sort()).toEqual(['as-multi-1', 'as-plain']);
      expect(await d.checks()).not.toHaveProperty('service:as-web-1');
      expect(await d.healthChecks('as-web')).toEqual([]);
    });

    test('deregister of an unknown service id → 404 (consul: Consul\'s text; seed: code 1006)', async () => {
      await expectFailure(dialect, c, k, {
        what: 'deregister of an unknown service id',
        viaClient: (k) => k.agent.service.deregister('as-missing'),
        clientMessage: 'not found',
        raw: { method: 'PUT', path: '/v1/agent/service/deregister/as-missing' },
        consul: { status: 404, text: unknownService('as-missing') },
        seed: { status: 404, code: 1006 },
      });
    });
  });

  describe('3. health (§1.5, §5, §2)', () => {
    const node = 'hl-node';
    const api1 = 'service:hl-api-1';
    const api2 = 'service:hl-api-2';

    /** node check passing, instance 1 passing, instance 2 warning — every status set by a TTL call. */
    async function baseline(): Promise<void> {
      await d.ttl('pass', node, 'node ok');
      await d.ttl('pass', api1, 'ok 1');
      await d.ttl('warn', api2, 'slow');
    }

    beforeAll(async () => {
      await d.registerCheck({ ID: node, Name: 'hl node', TTL: ttl });
      await d.registerService({ Name: 'hl-api', ID: 'hl-api-1', Tags: ['primary', 'v1'], Port: 9001, Meta: { env: 'prod' }, Check: { TTL: ttl } });
      await d.registerService({ Name: 'hl-api', ID: 'hl-api-2', Tags: ['v2'], Port: 9002, Meta: { env: 'dev' }, Check: { TTL: ttl } });
      await baseline();
    });
    afterAll(() => removeAll([node], ['hl-api-1', 'hl-api-2']));

    test('health.node(): every check of the node incl. gossipHealth, in storage order; unknown node []', async () => {
      await baseline();
      const list = await d.healthNode('node1');
      expect(ids(list)).toEqual(['gossipHealth', node, api1, api2].sort(checkOrder));
      expect(list.map((k) => [k.CheckID, k.Status, k.Output, k.Type])).toEqual([
        ['gossipHealth', 'passing', expect.any(String), ''],
        [node, 'passing', 'node ok', 'ttl'],
        [api1, 'passing', 'ok 1', 'ttl'],
        [api2, 'warning', 'slow', 'ttl'],
      ]);
      expect(list.every((k) => k.Node === 'node1')).toBe(true);
      expect(await d.healthNode('no-such-node')).toEqual([]);
    });

    test('health.checks(): the service checks of every instance, no node checks', async () => {
      await baseline();
      const list = await d.healthChecks('hl-api');
      expect(list.map((k) => [k.CheckID, k.ServiceID, k.ServiceName, k.ServiceTags, k.Status])).toEqual([
        [api1, 'hl-api-1', 'hl-api', ['primary', 'v1'], 'passing'],
        [api2, 'hl-api-2', 'hl-api', ['v2'], 'warning'],
      ]);
      expect(await d.healthChecks('hl-missing')).toEqual([]);
    });

    test('health.service(): {Node, Service, Checks} per instance; Checks = node checks + the instance\'s own', async () => {
      await baseline();
      const list = await d.healthService({ service: 'hl-api' });
      expect(list.map((e) => e.Service.ID)).toEqual(['hl-api-1', 'hl-api-2']);
      expect(list[0]!.Node).toMatchObject({ Node: 'node1', Datacenter: 'dc1' });
      expect(list[0]!.Service).toMatchObject({ ID: 'hl-api-1', Service: 'hl-api', Tags: ['primary', 'v1'], Port: 9001, Meta: { env: 'prod' } });
      expect(ids(list[0]!.Checks)).toEqual(['gossipHealth', node, api1]);
      expect(ids(list[1]!.Checks)).toEqual(['gossipHealth', node, api2]);
      expect(await d.healthService({ service: 'hl-missing' })).toEqual([]);
    });

    test('health.service({passing}): drops an instance with any non-passing check, node checks included', async () => {
      await baseline();
      const passing = async () => (await d.healthService({ service: 'hl-api', passing: true })).map((e) => e.Service.ID);
      expect(await passing()).toEqual(['hl-api-1']); // hl-api-2 is warning
      await d.ttl('pass', api2, 'better');
      expect(await passing()).toEqual(['hl-api-1', 'hl-api-2']);
      await d.ttl('fail', node, 'node down');
      expect(await passing()).toEqual([]);
      await baseline();
      expect(await passing()).toEqual(['hl-api-1']);
    });

    test('health.service({tag}) and ({filter}) with §5 examples', async () => {
      await baseline();
      const pick = async (q: Omit<HealthQuery, 'service'>) => (await d.healthService({ service: 'hl-api', ...q })).map((e) => e.Service.ID);
      expect(await pick({ tag: 'primary' })).toEqual(['hl-api-1']);
      expect(await pick({ tag: 'v2' })).toEqual(['hl-api-2']);
      expect(await pick({ filter: '"primary" in Service.Tags' })).toEqual(['hl-api-1']);
      expect(await pick({ filter: 'Service.Tags contains "v2"' })).toEqual(['hl-api-2']);
      expect(await pick({ filter: 'Service.Meta.env == prod' })).toEqual(['hl-api-1']);
      expect(await pick({ filter: 'Checks.Status == warning' })).toEqual(['hl-api-2']);
      expect(await pick({ filter: 'Checks.Status == critical' })).toEqual([]);
      expect(await pick({ tag: 'v1', filter: 'Service.Meta.env == dev' })).toEqual([]);
    });

    test('health.state(any|passing|warning|critical) follows TTL pass/warn/fail', async () => {
      await baseline();
      const mine = (list: CheckRecord[]) => ids(list).filter((id) => id.startsWith('hl-') || id.startsWith('service:hl-'));
      expect(mine(await d.healthState('any'))).toEqual([node, api1, api2]);
      expect(ids(await d.healthState('any'))).toContain('gossipHealth');
      expect(mine(await d.healthState('passing'))).toEqual([node, api1]);
      expect(mine(await d.healthState('warning'))).toEqual([api2]);
      expect(await d.healthState('critical')).toEqual([]);
      await d.ttl('fail', api2, 'broken');
      const critical = await d.healthState('critical');
      expect(critical.map((k) => [k.CheckID, k.Status, k.Output])).toEqual([[api2, 'critical', 'broken']]);
      expect(mine(await d.healthState('warning'))).toEqual([]);
      expect(ids(await d.healthState('any', 'ServiceName == "hl-api"'))).toEqual([api1, api2]);
      expect(ids(await d.healthState('any', 'not (Status == passing or Status == warning)'))).toEqual([api2]);
    });

    test('/v1/health/state/fail and /v1/health/state/foo (raw: the client refuses both states itself)', async () => {
      await baseline();
      await d.ttl('fail', api2, 'broken');
      const fail = await c.get('/v1/health/state/fail');
      expect(fail.status, fail.text).toBe(200);
      if (dialect === 'seed') {
        // Registry spec: `fail` = the critical checks.
        expect(ids(fail.json())).toEqual([api2]);
        expect(fail.json()).toEqual(await d.healthState('critical'));
        const body = expectError(await c.get('/v1/health/state/foo'), 400, 1009);
        expect(body.details).toHaveProperty(['state']);
      } else {
        // consul-compat §1.5: Consul does not validate the state and matches Status == state literally → [].
        expect(fail.json()).toEqual([]);
        const foo = await c.get('/v1/health/state/foo');
        expect(foo.status, foo.text).toBe(200);
        expect(foo.json()).toEqual([]);
        await expect(k.health.state('fail' as State)).rejects.toThrow('consul: health.state: state invalid: fail');
      }
    });

    test('a bad filter: consul 500 with bexpr\'s text, seed 400 1009 with details.filter and details.position', async () => {
      const raw = (path: string) => ({ method: 'GET', path });
      const body = await expectFailure(dialect, c, k, {
        what: 'health.service with a filter cut short',
        viaClient: (k) => k.health.service({ service: 'hl-api', filter: 'Service.Tags contains' }),
        clientMessage: 'internal server error',
        raw: raw(`/v1/health/service/hl-api${fq('Service.Tags contains')}`),
        consul: { status: 500, text: /^Failed to create boolean expression evaluator: 1:22 \(21\): no match found, expected: / },
        seed: { status: 400, code: 1009, details: 'filter' },
      });
      if (dialect === 'seed') expect(body.details.position).toEqual({ line: 1, column: 22, offset: 21 });
      const agentBody = await expectFailure(dialect, c, k, {
        what: 'agent.check.list with a filter cut short',
        viaClient: (k) => k.agent.check.list({ filter: 'Status ==' }),
        clientMessage: 'internal server error',
        raw: raw(`/v1/agent/checks${fq('Status ==')}`),
        consul: { status: 500, text: /^(Failed to create boolean expression evaluator: )?1:10 \(9\): no match found, expected: / },
        seed: { status: 400, code: 1009, details: 'filter' },
      });
      if (dialect === 'seed') expect(agentBody.details.position).toEqual({ line: 1, column: 10, offset: 9 });
    });

    test('health and catalog reads carry X-Consul-Index, KnownLeader, LastContact and Effective-Consistency', async () => {
      for (const path of [
        '/v1/health/node/node1', '/v1/health/checks/hl-api', '/v1/health/service/hl-api', '/v1/health/state/any',
        '/v1/catalog/services', '/v1/catalog/service/hl-api', '/v1/catalog/nodes', '/v1/catalog/node/node1',
      ]) {
        const r = await c.get(path);
        expect(r.status, path).toBe(200);
        expect(r.headers.get('x-consul-index'), path).toMatch(/^[1-9]\d*$/);
        expect(r.headers.get('x-consul-knownleader'), path).toBe('true');
        expect(r.headers.get('x-consul-lastcontact'), path).toBe('0');
        expect(r.headers.get('x-consul-effective-consistency'), path).toMatch(/^(leader|stale|consistent)$/);
      }
    });

    test('a blocking health.service read (consul: the client\'s watch) wakes when a check changes', async () => {
      await baseline();
      const statusOf = (entries: HealthEntry[], id: string) =>
        entries.find((e) => e.Service.ID === id)?.Checks.find((k) => k.CheckID === `service:${id}`)?.Status;
      const { entries, before, after } = await d.blockOnHealthService(
        'hl-api',
        () => d.ttl('fail', api1, 'gone'),
        (e) => statusOf(e, 'hl-api-1') === 'critical',
      );
      expect(after).toBeGreaterThan(before);
      expect(statusOf(entries, 'hl-api-1')).toBe('critical');
      expect(statusOf(entries, 'hl-api-2')).toBe('warning');
    }, 30_000);
  });

  describe('5. sessions bound to checks (§1.1, §3)', () => {
    const check = 'sx-ttl';
    const key = `sx/lock-${dialect}`;
    const sessions: string[] = [];
    afterAll(async () => {
      for (const id of sessions) await c.put(`/v1/session/destroy/${id}`);
      await c.del(`/v1/kv/${key}`);
      await removeAll([check], []);
    });

    test('session.create({checks: ["serfHealth", <ttl check>]}): NodeChecks ["gossipHealth"], Checks keeps both', async () => {
      await d.registerCheck({ ID: check, Name: 'sx ttl', TTL: ttl, Status: 'passing' });
      const id = await d.sessionCreate(['serfHealth', check]);
      sessions.push(id);
      const s = await d.sessionInfo(id);
      expect(s).toMatchObject({
        ID: id, Node: 'node1', Behavior: 'release', LockDelay: 15_000_000_000, NodeChecks: ['gossipHealth'],
        ServiceChecks: null, Checks: ['gossipHealth', check],
      });
      expect(s!.CreateIndex).toBe(s!.ModifyIndex);
    });

    test('failing the TTL check invalidates the session (info → undefined) and releases its lock; lock-delay follows', async () => {
      const id = sessions[0]!;
      expect(await d.acquire(key, 'held', id)).toEqual({ ok: true });
      expect(await d.kvGet(key)).toMatchObject({ Key: key, Value: 'held', Session: id, LockIndex: 1 });

      await d.ttl('fail', check, 'down');
      await until('session invalidated', () => d.sessionInfo(id), (s) => s === undefined);
      const entry = await until('lock released', () => d.kvGet(key), (e) => e !== undefined && e.Session === undefined);
      expect(entry).toMatchObject({ Key: key, Value: 'held', LockIndex: 1 });
      expect(entry).not.toHaveProperty('Session');

      // Invalidation arms the key's lock-delay (15 s default): another session cannot take it yet.
      const other = await d.sessionCreate();
      sessions.push(other);
      const again = await d.acquire(key, 'mine', other);
      expect(again.ok).toBe(false);
      if (dialect === 'seed') expect(again.reason).toBe('lock-delay');
      else {
        const r = await c.put(`/v1/kv/${key}?acquire=${other}`, 'mine');
        expect([r.status, r.text]).toEqual([200, 'false']);
      }
      expect(await d.kvGet(key)).toMatchObject({ Value: 'held' });
      expect(await d.kvGet(key)).not.toHaveProperty('Session');
    });

    test('a session cannot bind a critical check (consul 500 Consul\'s text; seed 400 1009)', async () => {
      await expectFailure(dialect, c, k, {
        what: 'session bound to a critical check',
        viaClient: (k) => k.session.create({ checks: ['serfHealth', check] }),
        clientMessage: `Check '${check}' is in critical state`,
        raw: { method: 'PUT', path: '/v1/session/create', body: { Checks: ['serfHealth', check] } },
        consul: { status: 500, text: `Check '${check}' is in critical state` },
        seed: { status: 400, code: 1009 },
      });
    });
  });
});
