// Goal: the health half of the HTTP API (consul-compat.md §1.3–1.6, §5; registry.md health rows): agent checks and services, catalog, health queries, ?filter on every endpoint, blocking, and the --config-file definitions — through HTTP against started agents, with TTL checks so every status is set by the test.
import { spawn } from 'node:child_process';
import { mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, test } from 'vitest';
import { client, expectError, repoRoot, sleep, startAgent, tempDataDir, tsxLoader, withAgent, type Agent, type HttpResult } from '../support/agent.ts';

type Client = ReturnType<typeof client>;

interface CheckRecord {
  Node: string; CheckID: string; Name: string; Status: string; Notes: string; Output: string; ServiceID: string;
  ServiceName: string; ServiceTags: string[]; Type: string; Interval: string; Timeout: string; ExposedPort: number;
  Definition: Record<string, unknown>; CreateIndex: number; ModifyIndex: number;
}
interface NodeRecord {
  ID: string; Node: string; Address: string; Datacenter: string; TaggedAddresses: Record<string, string>;
  Meta: Record<string, string>; CreateIndex: number; ModifyIndex: number;
}
interface HealthService {
  ID: string; Service: string; Tags: string[]; Address: string; Meta: Record<string, string> | null; Port?: number;
  Weights: { Passing: number; Warning: number }; EnableTagOverride: boolean; CreateIndex: number; ModifyIndex: number;
}
interface HealthEntry { Node: NodeRecord; Service: HealthService; Checks: CheckRecord[] }
interface AgentService {
  Kind?: string; ID: string; Service: string; Tags: string[]; Meta: Record<string, string>; Port: number; Address: string;
  TaggedAddresses?: Record<string, { Address: string; Port: number }>; Weights: { Passing: number; Warning: number };
  EnableTagOverride: boolean; Datacenter: string;
}
interface CatalogServiceNode {
  ID: string; Node: string; Address: string; ServiceID: string; ServiceName: string; ServiceTags: string[];
  ServiceMeta: Record<string, string>; ServicePort: number;
}

/** consul-compat.md §1.3: the check record's fields, in this order. */
const checkFieldOrder = [
  'Node', 'CheckID', 'Name', 'Status', 'Notes', 'Output', 'ServiceID', 'ServiceName', 'ServiceTags', 'Type',
  'Interval', 'Timeout', 'ExposedPort', 'Definition', 'CreateIndex', 'ModifyIndex',
];
/** consul-compat.md §1.6: a catalog ServiceNode's fields, in this order. */
const serviceNodeFieldOrder = [
  'ID', 'Node', 'Address', 'Datacenter', 'TaggedAddresses', 'NodeMeta', 'ServiceKind', 'ServiceID', 'ServiceName',
  'ServiceTags', 'ServiceAddress', 'ServiceWeights', 'ServiceMeta', 'ServicePort', 'ServiceSocketPath',
  'ServiceEnableTagOverride', 'ServiceProxy', 'ServiceConnect', 'ServiceLocality', 'CreateIndex', 'ModifyIndex',
];
const nodeFieldOrder = ['ID', 'Node', 'Address', 'Datacenter', 'TaggedAddresses', 'Meta', 'CreateIndex', 'ModifyIndex'];

/** TTLs long enough that no check lapses while the file runs. */
const ttl = '10m';
const evaluatorPrefix = 'Failed to create boolean expression evaluator: ';

/** Storage order of checks (consul-compat.md §0): CheckID compared case-insensitively. */
function byCheckId(a: string, b: string): number {
  const x = a.toLowerCase();
  const y = b.toLowerCase();
  return x < y ? -1 : x > y ? 1 : a < b ? -1 : a > b ? 1 : 0;
}

const q = (filter: string) => `filter=${encodeURIComponent(filter)}`;

async function getJson<T = any>(c: Client, path: string): Promise<T> {
  const r = await c.get(path);
  expect(r.status, `${path}: ${r.text}`).toBe(200);
  return r.json<T>();
}

/** A PUT that answers nothing: 200 with an empty body. */
async function putEmpty(c: Client, path: string, body?: unknown): Promise<void> {
  const r = await c.put(path, body);
  expect(r.status, `${path}: ${r.text}`).toBe(200);
  expect(r.text).toBe('');
}

const registerCheck = (c: Client, body: Record<string, unknown>) => putEmpty(c, '/v1/agent/check/register', body);
const registerService = (c: Client, body: Record<string, unknown>, query = '') => putEmpty(c, `/v1/agent/service/register${query}`, body);
const agentChecks = (c: Client, filter?: string) => getJson<Record<string, CheckRecord>>(c, `/v1/agent/checks${filter === undefined ? '' : `?${q(filter)}`}`);
const agentServices = (c: Client, filter?: string) => getJson<Record<string, AgentService>>(c, `/v1/agent/services${filter === undefined ? '' : `?${q(filter)}`}`);

/** 400 code 1009 whose details name one of `fields` (a key equal to it or starting with it); any field when none given. */
function expectInvalid(r: HttpResult, ...fields: string[]): any {
  const body = expectError(r, 400, 1009);
  expect(body.details, r.text).toBeTypeOf('object');
  const keys = Object.keys(body.details ?? {});
  expect(keys.length, r.text).toBeGreaterThan(0);
  if (fields.length > 0) {
    const named = keys.some((k) => fields.some((f) => k === f || k.startsWith(`${f}.`) || k.startsWith(`${f}[`)));
    expect(named, `details should name ${fields.join(' or ')}: ${r.text}`).toBe(true);
  }
  return body;
}

/** Asserts a filter keeps exactly the records `want` picks from the unfiltered list, and that this is some but not all. */
function expectSubset<T>(all: T[], filtered: T[], want: (x: T) => boolean, key: (x: T) => string): void {
  const expected = all.filter(want).map(key);
  expect(expected.length, 'the data set should make the filter select something').toBeGreaterThan(0);
  expect(expected.length, 'the data set should make the filter leave something out').toBeLessThan(all.length);
  expect(filtered.map(key)).toEqual(expected);
}

describe('health API on one agent', () => {
  let c: Client;

  withAgent((a) => { c = client(a); });

  test('a fresh agent: /v1/health/state/fail is [] when no check is critical; agent checks and services are empty; gossipHealth passes', async () => {
    expect(await getJson(c, '/v1/health/state/fail')).toEqual([]);
    expect(await getJson(c, '/v1/health/state/critical')).toEqual([]);
    expect(await agentChecks(c)).toEqual({});
    expect(await agentServices(c)).toEqual({});
    const node = await getJson<CheckRecord[]>(c, '/v1/health/node/node1');
    expect(node.map((k) => [k.CheckID, k.Status, k.Type])).toEqual([['gossipHealth', 'passing', '']]);
  });

  // ------------------------------------------------------------------------------------------------ 1. agent checks
  describe('agent checks (§1.3)', () => {
    const nodeChecks: string[] = [];
    const services: string[] = [];

    beforeAll(async () => {
      await registerService(c, { Name: 'chk-host', Tags: ['h1'] });
      services.push('chk-host');
    });

    afterAll(async () => {
      for (const id of nodeChecks) await c.put(`/v1/agent/check/deregister/${encodeURIComponent(id)}`);
      for (const id of services) await c.put(`/v1/agent/service/deregister/${encodeURIComponent(id)}`);
    });

    test('register with Consul names: the record has every field in order, Definition {}, indexes 0, default Status critical', async () => {
      await registerCheck(c, { ID: 'chk-plain', Name: 'plain check', Notes: 'some notes', TTL: ttl });
      nodeChecks.push('chk-plain');
      const r = await c.get('/v1/agent/checks');
      expect(r.status).toBe(200);
      expect(r.headers.get('content-type')).toMatch(/^application\/json/);
      const all = r.json<Record<string, CheckRecord>>();
      const rec = all['chk-plain']!;
      expect(Object.keys(rec)).toEqual(checkFieldOrder);
      expect(rec).toEqual({
        Node: 'node1', CheckID: 'chk-plain', Name: 'plain check', Status: 'critical', Notes: 'some notes', Output: '',
        ServiceID: '', ServiceName: '', ServiceTags: [], Type: 'ttl', Interval: '', Timeout: '', ExposedPort: 0,
        Definition: {}, CreateIndex: 0, ModifyIndex: 0,
      });
      // gossipHealth is a node check of the catalog, not one registered through the agent.
      expect(all).not.toHaveProperty('gossipHealth');
    });

    test('ID defaults to Name; initial Status passing and warning are honoured', async () => {
      await registerCheck(c, { Name: 'chk-named', TTL: ttl, Status: 'passing' });
      await registerCheck(c, { ID: 'chk-warn', Name: 'warn check', TTL: ttl, Status: 'warning' });
      nodeChecks.push('chk-named', 'chk-warn');
      const all = await agentChecks(c);
      expect(all['chk-named']).toMatchObject({ CheckID: 'chk-named', Name: 'chk-named', Status: 'passing' });
      expect(all['chk-warn']).toMatchObject({ CheckID: 'chk-warn', Status: 'warning' });
    });

    test('field names are matched case-insensitively and in snake_case (service_id, deregister_critical_service_after, …)', async () => {
      await registerCheck(c, {
        id: 'chk-snake', NAME: 'snake check', notes: 'n', STATUS: 'warning', service_id: 'chk-host', Ttl: ttl,
        deregister_critical_service_after: '90m', output_max_size: 2048, success_before_passing: 1,
        failures_before_warning: 1, failures_before_critical: 2,
      });
      const rec = (await agentChecks(c))['chk-snake'];
      expect(rec).toMatchObject({
        CheckID: 'chk-snake', Name: 'snake check', Notes: 'n', Status: 'warning', ServiceID: 'chk-host',
        ServiceName: 'chk-host', ServiceTags: ['h1'], Type: 'ttl',
      });
      await registerCheck(c, { checkid: 'chk-lower', name: 'lower', serviceid: 'chk-host', ttl, deregistercriticalserviceafter: '90m' });
      expect((await agentChecks(c))['chk-lower']).toMatchObject({ CheckID: 'chk-lower', ServiceID: 'chk-host', Type: 'ttl' });
    });

    test('every probe kind and its fields are accepted (HTTP, TCP, gRPC, alias), Interval/Timeout shown as Go durations', async () => {
      await registerService(c, { Name: 'kinds-host' });
      await registerService(c, { Name: 'kinds-target' });
      try {
        await registerCheck(c, {
          ID: 'kinds-http', Name: 'kinds http', Notes: 'n', Status: 'warning', ServiceID: 'kinds-host',
          HTTP: 'http://127.0.0.1:1/health', Method: 'POST', Header: { 'X-Test': ['a', 'b'] }, Body: '{"x":1}',
          TLSSkipVerify: true, TLSServerName: 'example.test', DisableRedirects: true, Interval: '30s', Timeout: '2s',
          DeregisterCriticalServiceAfter: '90m', SuccessBeforePassing: 2, FailuresBeforeWarning: 1,
          FailuresBeforeCritical: 3, OutputMaxSize: 1024,
        });
        await registerCheck(c, {
          id: 'kinds-http2', name: 'kinds http snake', service_id: 'kinds-host', http: 'https://127.0.0.1:1/',
          tls_skip_verify: true, tls_server_name: 'example.test', disable_redirects: true, interval: '1m30s', timeout: '1500ms',
        });
        await registerCheck(c, { ID: 'kinds-tcp', Name: 'kinds tcp', ServiceID: 'kinds-host', TCP: '127.0.0.1:1', Interval: '30s' });
        await registerCheck(c, { ID: 'kinds-grpc', Name: 'kinds grpc', ServiceID: 'kinds-host', GRPC: '127.0.0.1:1/svc', GRPCUseTLS: true, Interval: '30s' });
        await registerCheck(c, { id: 'kinds-grpc2', name: 'kinds grpc snake', service_id: 'kinds-host', grpc: '127.0.0.1:1', grpc_use_tls: false, interval: '30s' });
        await registerCheck(c, { ID: 'kinds-alias', Name: 'kinds alias', ServiceID: 'kinds-host', AliasService: 'kinds-target', AliasNode: 'node1' });
        await registerCheck(c, { id: 'kinds-alias2', name: 'kinds alias snake', service_id: 'kinds-host', alias_service: 'kinds-target', alias_node: 'node1' });
        const all = await agentChecks(c);
        expect(all['kinds-http']).toMatchObject({ Type: 'http', Interval: '30s', Timeout: '2s', Notes: 'n', ServiceID: 'kinds-host', ServiceName: 'kinds-host' });
        // The probe may already have run (first run at a random point of the interval): warning as given, or its result.
        expect(['warning', 'critical']).toContain(all['kinds-http']!.Status);
        expect(all['kinds-http2']).toMatchObject({ Type: 'http', Interval: '1m30s', Timeout: '1.5s' });
        expect(all['kinds-tcp']).toMatchObject({ Type: 'tcp', Interval: '30s' });
        expect(all['kinds-grpc']).toMatchObject({ Type: 'grpc', Interval: '30s' });
        expect(all['kinds-grpc2']).toMatchObject({ Type: 'grpc' });
        expect(all['kinds-alias']).toMatchObject({ Type: 'alias', Interval: '' });
        expect(all['kinds-alias2']).toMatchObject({ Type: 'alias' });
        // TTL updates are for TTL checks only.
        expectInvalid(await c.put('/v1/agent/check/pass/kinds-tcp'));
      } finally {
        await c.put('/v1/agent/service/deregister/kinds-host');
        await c.put('/v1/agent/service/deregister/kinds-target');
      }
      const left = Object.keys(await agentChecks(c)).filter((id) => id.startsWith('kinds-'));
      expect(left).toEqual([]);
    });

    test('re-registering a check id keeps its current Status and Output, takes the new Name and Notes', async () => {
      await registerCheck(c, { ID: 'chk-re', Name: 're check', Notes: 'first', TTL: ttl });
      nodeChecks.push('chk-re');
      await putEmpty(c, '/v1/agent/check/pass/chk-re?note=all%20good');
      await registerCheck(c, { ID: 'chk-re', Name: 're check 2', Notes: 'second', TTL: ttl, Status: 'critical' });
      expect((await agentChecks(c))['chk-re']).toMatchObject({ Name: 're check 2', Notes: 'second', Status: 'passing', Output: 'all good' });
    });

    test('pass/warn/fail with ?note set Status and Output (Notes untouched); update sets both from the body', async () => {
      await registerCheck(c, { ID: 'chk-ttl', Name: 'ttl check', Notes: 'keep me', TTL: ttl });
      nodeChecks.push('chk-ttl');
      const cases: [string, string][] = [['pass', 'passing'], ['warn', 'warning'], ['fail', 'critical']];
      for (const [verb, status] of cases) {
        await putEmpty(c, `/v1/agent/check/${verb}/chk-ttl?note=${verb}-note`);
        expect((await agentChecks(c))['chk-ttl']).toMatchObject({ Status: status, Output: `${verb}-note`, Notes: 'keep me' });
      }
      await putEmpty(c, '/v1/agent/check/update/chk-ttl', { Status: 'warning', Output: 'via update' });
      expect((await agentChecks(c))['chk-ttl']).toMatchObject({ Status: 'warning', Output: 'via update' });
    });

    test('update with a bad Status → 400 1009 naming Status, and the check is unchanged', async () => {
      await registerCheck(c, { ID: 'chk-upd', Name: 'upd', TTL: ttl, Status: 'passing' });
      nodeChecks.push('chk-upd');
      expectInvalid(await c.put('/v1/agent/check/update/chk-upd', { Status: 'sideways', Output: 'x' }), 'Status');
      expect((await agentChecks(c))['chk-upd']).toMatchObject({ Status: 'passing', Output: '' });
    });

    test('TTL output over 4096 bytes keeps the first 4096 + " ... (captured 4096 of N bytes)" (note and update)', async () => {
      await registerCheck(c, { ID: 'chk-big', Name: 'big', TTL: ttl });
      nodeChecks.push('chk-big');
      const note = 'a'.repeat(4096) + 'b'.repeat(904);
      const expected = `${'a'.repeat(4096)} ... (captured 4096 of 5000 bytes)`;
      await putEmpty(c, `/v1/agent/check/warn/chk-big?note=${note}`);
      expect((await agentChecks(c))['chk-big']).toMatchObject({ Status: 'warning', Output: expected });
      await putEmpty(c, '/v1/agent/check/update/chk-big', { Status: 'passing', Output: note });
      expect((await agentChecks(c))['chk-big']).toMatchObject({ Status: 'passing', Output: expected });
      await putEmpty(c, '/v1/agent/check/pass/chk-big?note=short');
      expect((await agentChecks(c))['chk-big']!.Output).toBe('short');
    });

    test('deregister removes the check (200, empty body); a second deregister is 404 1006', async () => {
      await registerCheck(c, { ID: 'chk-gone', Name: 'gone', TTL: ttl });
      expect(await agentChecks(c)).toHaveProperty('chk-gone');
      await putEmpty(c, '/v1/agent/check/deregister/chk-gone');
      expect(await agentChecks(c)).not.toHaveProperty('chk-gone');
      expect((await getJson<CheckRecord[]>(c, '/v1/health/node/node1')).map((k) => k.CheckID)).not.toContain('chk-gone');
      expectError(await c.put('/v1/agent/check/deregister/chk-gone'), 404, 1006);
    });

    test('an unknown check id is 404 1006 on deregister, pass, warn, fail and update', async () => {
      for (const verb of ['deregister', 'pass', 'warn', 'fail']) {
        expectError(await c.put(`/v1/agent/check/${verb}/no-such-check`), 404, 1006);
      }
      expectError(await c.put('/v1/agent/check/update/no-such-check', { Status: 'passing' }), 404, 1006);
    });

    test('validation errors → 400 1009 with details naming the field', async () => {
      const cases: [string, Record<string, unknown>, string[]][] = [
        ['unknown field', { Name: 'v1', TTL: ttl, Script: 'echo hi' }, ['Script']],
        ['missing Name', { TTL: ttl }, ['Name']],
        ['bad Status', { Name: 'v2', TTL: ttl, Status: 'sideways' }, ['Status']],
        ['Interval with TTL', { Name: 'v3', TTL: ttl, Interval: '10s' }, ['Interval', 'TTL']],
        ['HTTP without Interval', { Name: 'v4', HTTP: 'http://127.0.0.1:1/' }, ['Interval']],
        ['TCP without Interval', { Name: 'v5', TCP: '127.0.0.1:1' }, ['Interval']],
        ['GRPC without Interval', { Name: 'v6', GRPC: '127.0.0.1:1' }, ['Interval']],
        ['Args without Interval', { Name: 'v7', Args: ['true'] }, ['Interval']],
        ['Alias with Interval', { Name: 'v8', AliasService: 'chk-host', Interval: '10s' }, ['Interval']],
        ['no kind', { Name: 'v9' }, []],
        ['non-http(s) URL', { Name: 'v10', HTTP: 'ftp://127.0.0.1/x', Interval: '10s' }, ['HTTP']],
        ['bad TTL duration', { Name: 'v11', TTL: 'abc' }, ['TTL']],
      ];
      for (const [what, body, fields] of cases) {
        const r = await c.put('/v1/agent/check/register', body);
        expect(r.status, `${what}: ${r.text}`).toBe(400);
        expectInvalid(r, ...fields);
      }
      const left = Object.keys(await agentChecks(c)).filter((id) => /^v\d+$/.test(id));
      expect(left).toEqual([]);
    });

    test('an unknown ServiceID → 404 1006', async () => {
      expectError(await c.put('/v1/agent/check/register', { Name: 'orphan', TTL: ttl, ServiceID: 'no-such-service' }), 404, 1006);
      expect(await agentChecks(c)).not.toHaveProperty('orphan');
    });

    test('script and container checks without enable_script_checks → 403 1004', async () => {
      expectError(await c.put('/v1/agent/check/register', { Name: 'script', Args: ['true'], Interval: '10s' }), 403, 1004);
      expectError(await c.put('/v1/agent/check/register', { Name: 'docker', Args: ['true'], DockerContainerID: 'abc', Interval: '10s' }), 403, 1004);
      expectError(await c.put('/v1/agent/check/register', { Name: 'runtime', Args: ['true'], RuntimeContainerID: 'abc', Shell: '/bin/sh', Interval: '10s' }), 403, 1004);
      const all = await agentChecks(c);
      for (const id of ['script', 'docker', 'runtime']) expect(all).not.toHaveProperty(id);
    });
  });

  // ------------------------------------------------------------------------------------------------ 2. agent services
  describe('agent services (§1.4)', () => {
    const services: string[] = [];

    afterAll(async () => {
      for (const id of services) await c.put(`/v1/agent/service/deregister/${encodeURIComponent(id)}`);
    });

    test('register with every field: /v1/agent/services shows it; minimal service gets ID = Name, Tags [], Meta {}, Weights 1/1', async () => {
      await registerService(c, {
        ID: 'svc-full-1', Name: 'svc-full', Tags: ['b', 'a'], Address: '10.1.1.1', Port: 8080, Meta: { env: 'test' },
        TaggedAddresses: { lan: { Address: '10.1.1.1', Port: 8080 }, wan: { Address: '198.51.100.1', Port: 80 } },
        EnableTagOverride: true, Weights: { Passing: 3, Warning: 2 },
      });
      await registerService(c, { Name: 'svc-min' });
      await registerService(c, { Name: 'svc-gw', Kind: 'mesh-gateway', Port: 8443 });
      services.push('svc-full-1', 'svc-min', 'svc-gw');
      const all = await agentServices(c);
      expect(all['svc-full-1']).toEqual({
        ID: 'svc-full-1', Service: 'svc-full', Tags: ['b', 'a'], Meta: { env: 'test' }, Port: 8080, Address: '10.1.1.1',
        TaggedAddresses: { lan: { Address: '10.1.1.1', Port: 8080 }, wan: { Address: '198.51.100.1', Port: 80 } },
        Weights: { Passing: 3, Warning: 2 }, EnableTagOverride: true, Datacenter: 'dc1',
      });
      expect(all['svc-min']).toEqual({
        ID: 'svc-min', Service: 'svc-min', Tags: [], Meta: {}, Port: 0, Address: '', Weights: { Passing: 1, Warning: 1 },
        EnableTagOverride: false, Datacenter: 'dc1',
      });
      expect(all['svc-gw']).toMatchObject({ Kind: 'mesh-gateway', ID: 'svc-gw', Port: 8443 });
    });

    test('service field names are matched case-insensitively', async () => {
      await registerService(c, { name: 'svc-lower', id: 'svc-lower-1', tags: ['x'], port: 1234, meta: { k: 'v' }, enable_tag_override: true });
      services.push('svc-lower-1');
      expect((await agentServices(c))['svc-lower-1']).toMatchObject({ Service: 'svc-lower', Tags: ['x'], Port: 1234, Meta: { k: 'v' }, EnableTagOverride: true });
    });

    test('an embedded Check gets CheckID service:<id> and Name "Service \'<name>\' check", with ServiceName and ServiceTags', async () => {
      await registerService(c, { ID: 'svc-emb-1', Name: 'svc-emb', Tags: ['t1'], Check: { TTL: ttl } });
      services.push('svc-emb-1');
      const rec = (await agentChecks(c))['service:svc-emb-1'];
      expect(rec).toEqual({
        Node: 'node1', CheckID: 'service:svc-emb-1', Name: "Service 'svc-emb' check", Status: 'critical', Notes: '', Output: '',
        ServiceID: 'svc-emb-1', ServiceName: 'svc-emb', ServiceTags: ['t1'], Type: 'ttl', Interval: '', Timeout: '',
        ExposedPort: 0, Definition: {}, CreateIndex: 0, ModifyIndex: 0,
      });
    });

    test('several Checks without ids get service:<id>:1, :2 …; explicit ids and names are kept', async () => {
      await registerService(c, { Name: 'svc-multi', Checks: [{ TTL: ttl }, { TTL: ttl, Status: 'passing' }, { CheckID: 'svc-multi-own', Name: 'own', TTL: ttl }] });
      services.push('svc-multi');
      const all = await agentChecks(c);
      expect(all['service:svc-multi:1']).toMatchObject({ Name: "Service 'svc-multi' check", ServiceID: 'svc-multi', Status: 'critical' });
      expect(all['service:svc-multi:2']).toMatchObject({ Name: "Service 'svc-multi' check", ServiceID: 'svc-multi', Status: 'passing' });
      expect(all['svc-multi-own']).toMatchObject({ Name: 'own', ServiceID: 'svc-multi' });
      expect(all).not.toHaveProperty('service:svc-multi');
    });

    test('re-registration keeps unlisted checks; ?replace-existing-checks drops them and keeps the listed one\'s status', async () => {
      const checks = [{ CheckID: 'rep-a', Name: 'a', TTL: ttl }, { CheckID: 'rep-b', Name: 'b', TTL: ttl }];
      await registerService(c, { Name: 'svc-rep', Checks: checks });
      services.push('svc-rep');
      await putEmpty(c, '/v1/agent/check/pass/rep-a');
      await registerService(c, { Name: 'svc-rep', Check: checks[0] });
      let all = await agentChecks(c);
      expect(all).toHaveProperty('rep-a');
      expect(all).toHaveProperty('rep-b');
      await registerService(c, { Name: 'svc-rep', Check: checks[0] }, '?replace-existing-checks');
      all = await agentChecks(c);
      expect(all['rep-a']).toMatchObject({ Status: 'passing', ServiceID: 'svc-rep' });
      expect(all).not.toHaveProperty('rep-b');
    });

    test('service checks follow a tag change on re-registration (embedded and separately registered checks)', async () => {
      await registerService(c, { Name: 'svc-tags', Tags: ['old'], Check: { TTL: ttl } });
      services.push('svc-tags');
      await registerCheck(c, { ID: 'svc-tags-extra', Name: 'extra', ServiceID: 'svc-tags', TTL: ttl });
      let all = await agentChecks(c);
      expect(all['service:svc-tags']!.ServiceTags).toEqual(['old']);
      expect(all['svc-tags-extra']!.ServiceTags).toEqual(['old']);
      await registerService(c, { Name: 'svc-tags', Tags: ['new', 'newer'], Check: { TTL: ttl } });
      all = await agentChecks(c);
      expect(all['service:svc-tags']!.ServiceTags).toEqual(['new', 'newer']);
      expect(all['svc-tags-extra']!.ServiceTags).toEqual(['new', 'newer']);
      const viaHealth = await getJson<CheckRecord[]>(c, '/v1/health/checks/svc-tags');
      expect(viaHealth.map((k) => [k.CheckID, k.ServiceTags])).toEqual([['service:svc-tags', ['new', 'newer']], ['svc-tags-extra', ['new', 'newer']]]);
    });

    test('deregister removes the service and all its checks; unknown id → 404 1006', async () => {
      await registerService(c, { Name: 'svc-dereg', Checks: [{ TTL: ttl }, { TTL: ttl }] });
      await registerCheck(c, { ID: 'svc-dereg-extra', Name: 'extra', ServiceID: 'svc-dereg', TTL: ttl });
      expect(Object.keys(await agentChecks(c)).filter((id) => id.includes('svc-dereg'))).toHaveLength(3);
      await putEmpty(c, '/v1/agent/service/deregister/svc-dereg');
      expect(await agentServices(c)).not.toHaveProperty('svc-dereg');
      expect(Object.keys(await agentChecks(c)).filter((id) => id.includes('svc-dereg'))).toEqual([]);
      expect(await getJson(c, '/v1/health/checks/svc-dereg')).toEqual([]);
      expectError(await c.put('/v1/agent/service/deregister/svc-dereg'), 404, 1006);
      expectError(await c.put('/v1/agent/service/deregister/no-such-service'), 404, 1006);
    });

    test('validation errors → 400 1009 (missing Name, Address 0.0.0.0, Weights.Passing 0, a bad check inside); nothing registered', async () => {
      expectInvalid(await c.put('/v1/agent/service/register', { ID: 'bad-noname', Port: 1 }), 'Name');
      expectInvalid(await c.put('/v1/agent/service/register', { Name: 'bad-addr', Address: '0.0.0.0' }), 'Address');
      expectInvalid(await c.put('/v1/agent/service/register', { Name: 'bad-weights', Weights: { Passing: 0, Warning: 1 } }), 'Weights');
      expectInvalid(await c.put('/v1/agent/service/register', { Name: 'bad-check', Check: { TTL: ttl, Interval: '10s' } }));
      expectInvalid(await c.put('/v1/agent/service/register', { Name: 'bad-checks', Checks: [{ TTL: ttl }, { TTL: ttl, Status: 'sideways' }] }));
      expectInvalid(await c.put('/v1/agent/service/register', { Name: 'bad-field', Bogus: 1 }), 'Bogus');
      const all = await agentServices(c);
      for (const id of ['bad-noname', 'bad-addr', 'bad-weights', 'bad-check', 'bad-checks', 'bad-field']) expect(all).not.toHaveProperty(id);
    });
  });

  // ------------------------------------------------------------------------------- 3–5. catalog, health, filters
  describe('catalog, health queries and filters on one data set', () => {
    let node1: NodeRecord;

    beforeAll(async () => {
      // Three instances of web on node1 (passing, warning, critical), api (all passing), and two passing node checks
      // whose ids sort around the service checks only when compared without case.
      await registerService(c, { Name: 'web', Tags: ['v1', 'primary'], Meta: { env: 'prod' }, Port: 8080, Check: { TTL: ttl, Status: 'passing' } });
      await registerService(c, { ID: 'web-2', Name: 'web', Tags: ['v2'], Meta: { env: 'dev' }, Port: 8081, Check: { TTL: ttl, Status: 'warning' } });
      await registerService(c, { ID: 'web-3', Name: 'web', Tags: ['v1', 'canary'], Check: { TTL: ttl } });
      await registerService(c, {
        Name: 'api', Checks: [
          { Name: 'api-1', TTL: ttl, Status: 'passing' }, { Name: 'api-22', TTL: ttl, Status: 'passing' },
          { Name: 'api-x', TTL: ttl, Status: 'passing' }, { Name: 'api-1b', TTL: ttl, Status: 'passing' },
        ],
      });
      await registerCheck(c, { ID: 'mem-check', Name: 'mem', TTL: ttl, Status: 'passing' });
      await registerCheck(c, { ID: 'Zeta-check', Name: 'zeta', TTL: ttl, Status: 'passing' });
      for (const [node, address, meta] of [['node2', '10.0.0.2', { rack: 'r2' }], ['node3', '10.0.0.3', undefined]] as const) {
        const r = await c.put('/v1/catalog/register', { Node: node, Address: address, ...(meta ? { NodeMeta: meta } : {}) });
        expect(r.status, r.text).toBe(200);
        expect(r.json()).toBe(true);
      }
      node1 = (await getJson<{ Node: NodeRecord }>(c, '/v1/catalog/node/node1')).Node;
    });

    // ------------------------------------------------------------------ 3. catalog
    test('/v1/catalog/services: each name with the sorted union of its instances\' tags, [] when none; index headers', async () => {
      const r = await c.get('/v1/catalog/services');
      expect(r.status).toBe(200);
      expect(Number(r.headers.get('x-consul-index'))).toBeGreaterThan(0);
      expect(r.headers.get('x-consul-knownleader')).toBe('true');
      const all = r.json<Record<string, string[]>>();
      expect(all.web).toEqual(['canary', 'primary', 'v1', 'v2']);
      expect(all.api).toEqual([]);
      const names = Object.keys(all);
      expect(names).toEqual([...names].sort());
    });

    test('/v1/catalog/service/{name}: ServiceNode shape in order, instances by id; ?tag repeatable with AND; unknown → []', async () => {
      const list = await getJson<CatalogServiceNode[]>(c, '/v1/catalog/service/web');
      expect(list.map((s) => s.ServiceID)).toEqual(['web', 'web-2', 'web-3']);
      expect(Object.keys(list[0]!)).toEqual(serviceNodeFieldOrder);
      expect(list[0]).toMatchObject({
        ID: node1.ID, Node: 'node1', Address: node1.Address, Datacenter: 'dc1', ServiceKind: '', ServiceID: 'web', ServiceName: 'web',
        ServiceTags: ['v1', 'primary'], ServiceAddress: '', ServiceWeights: { Passing: 1, Warning: 1 }, ServiceMeta: { env: 'prod' },
        ServicePort: 8080, ServiceEnableTagOverride: false, ServiceLocality: null,
      });
      expect(list[2]!.ServiceMeta).toEqual({});
      expect((await getJson<CatalogServiceNode[]>(c, '/v1/catalog/service/web?tag=v1')).map((s) => s.ServiceID)).toEqual(['web', 'web-3']);
      expect((await getJson<CatalogServiceNode[]>(c, '/v1/catalog/service/web?tag=v1&tag=canary')).map((s) => s.ServiceID)).toEqual(['web-3']);
      expect(await getJson(c, '/v1/catalog/service/web?tag=v1&tag=v2')).toEqual([]);
      expect(await getJson(c, '/v1/catalog/service/no-such-service')).toEqual([]);
    });

    test('/v1/catalog/nodes lists every node in name order with the node shape; /v1/catalog/node/{node}; null for unknown', async () => {
      const nodes = await getJson<NodeRecord[]>(c, '/v1/catalog/nodes');
      expect(nodes.map((n) => n.Node)).toEqual(['node1', 'node2', 'node3']);
      for (const n of nodes) expect(Object.keys(n)).toEqual(nodeFieldOrder);
      expect(nodes[1]).toMatchObject({
        Node: 'node2', Address: '10.0.0.2', Datacenter: 'dc1', Meta: { rack: 'r2' },
        TaggedAddresses: { lan: '10.0.0.2', lan_ipv4: '10.0.0.2', wan: '10.0.0.2', wan_ipv4: '10.0.0.2' },
      });
      const one = await getJson<{ Node: NodeRecord; Services: Record<string, AgentService> }>(c, '/v1/catalog/node/node1');
      expect(one.Node).toMatchObject({ Node: 'node1', Datacenter: 'dc1' });
      expect(Object.keys(one.Services).sort()).toEqual(['api', 'web', 'web-2', 'web-3']);
      expect(one.Services.web).toMatchObject({ ID: 'web', Service: 'web', Tags: ['v1', 'primary'], Port: 8080, Meta: { env: 'prod' } });
      expect(await getJson(c, '/v1/catalog/node/node2')).toMatchObject({ Node: { Node: 'node2' }, Services: {} });
      const unknown = await c.get('/v1/catalog/node/no-such-node');
      expect(unknown.status).toBe(200);
      expect(unknown.json()).toBeNull();
    });

    // ------------------------------------------------------------------ 4. health
    test('/v1/health/node/node1: all its checks, gossipHealth first, then by CheckID without regard to case; unknown node → []', async () => {
      const checks = await getJson<CheckRecord[]>(c, '/v1/health/node/node1');
      const ids = checks.map((k) => k.CheckID);
      expect(ids[0]).toBe('gossipHealth');
      expect(ids).toEqual([...ids].sort(byCheckId));
      expect(ids).toEqual(expect.arrayContaining(['mem-check', 'Zeta-check', 'service:web', 'service:web-2', 'service:web-3', 'service:api:1']));
      expect(ids.indexOf('mem-check')).toBeLessThan(ids.indexOf('service:web'));
      expect(ids.indexOf('service:web')).toBeLessThan(ids.indexOf('Zeta-check'));
      for (const k of checks) {
        expect(Object.keys(k)).toEqual(checkFieldOrder);
        expect(k.Node).toBe('node1');
        expect(k.CreateIndex).toBeGreaterThan(0);
        expect(k.ModifyIndex).toBeGreaterThanOrEqual(k.CreateIndex);
      }
      expect(checks[0]).toMatchObject({ Status: 'passing', Type: '', ServiceID: '', ServiceTags: [] });
      expect(await getJson(c, '/v1/health/node/no-such-node')).toEqual([]);
    });

    test('/v1/health/checks/{service}: the service checks of every instance, no node checks; unknown → []', async () => {
      const checks = await getJson<CheckRecord[]>(c, '/v1/health/checks/web');
      expect(checks.map((k) => [k.CheckID, k.ServiceID, k.Status])).toEqual([
        ['service:web', 'web', 'passing'], ['service:web-2', 'web-2', 'warning'], ['service:web-3', 'web-3', 'critical'],
      ]);
      for (const k of checks) expect(k.ServiceName).toBe('web');
      expect(checks[0]!.ServiceTags).toEqual(['v1', 'primary']);
      expect(await getJson(c, '/v1/health/checks/no-such-service')).toEqual([]);
    });

    test('/v1/health/service/{service}: entries {Node, Service, Checks = node checks + own checks}; Tags [] not null; unknown → []', async () => {
      const r = await c.get('/v1/health/service/web');
      expect(r.status).toBe(200);
      expect(Number(r.headers.get('x-consul-index'))).toBeGreaterThan(0);
      const entries = r.json<HealthEntry[]>();
      expect(entries.map((e) => e.Service.ID)).toEqual(['web', 'web-2', 'web-3']);
      const nodeCheckIds = (await getJson<CheckRecord[]>(c, '/v1/health/node/node1')).filter((k) => k.ServiceID === '').map((k) => k.CheckID);
      expect(nodeCheckIds).toEqual(expect.arrayContaining(['gossipHealth', 'mem-check', 'Zeta-check']));
      for (const e of entries) {
        expect(Object.keys(e)).toEqual(['Node', 'Service', 'Checks']);
        expect(e.Node).toMatchObject({ ID: node1.ID, Node: 'node1', Address: node1.Address, Datacenter: 'dc1' });
        expect(Object.keys(e.Node.TaggedAddresses).sort()).toEqual(['lan', 'lan_ipv4', 'wan', 'wan_ipv4']);
        const ids = e.Checks.map((k) => k.CheckID);
        expect([...ids].sort(byCheckId)).toEqual([...nodeCheckIds, `service:${e.Service.ID}`].sort(byCheckId));
        expect(ids).toEqual([...ids].sort(byCheckId));
      }
      expect(entries[0]!.Service).toMatchObject({
        ID: 'web', Service: 'web', Tags: ['v1', 'primary'], Address: '', Meta: { env: 'prod' }, Port: 8080,
        Weights: { Passing: 1, Warning: 1 }, EnableTagOverride: false,
      });
      const api = await getJson<HealthEntry[]>(c, '/v1/health/service/api');
      expect(api).toHaveLength(1);
      expect(api[0]!.Service.Tags).toEqual([]);
      expect(api[0]!.Service.Meta).toBeNull();
      expect(api[0]!.Service).not.toHaveProperty('Port');
      expect(api[0]!.Checks.filter((k) => k.ServiceID === 'api').map((k) => k.CheckID)).toEqual(['service:api:1', 'service:api:2', 'service:api:3', 'service:api:4']);
      expect(await getJson(c, '/v1/health/service/no-such-service')).toEqual([]);
    });

    test('/v1/health/service ?passing drops instances with a warning or critical check; ?tag (repeatable, AND)', async () => {
      const ids = async (query: string) => (await getJson<HealthEntry[]>(c, `/v1/health/service/web${query}`)).map((e) => e.Service.ID);
      expect(await ids('?passing')).toEqual(['web']);
      expect(await ids('?passing=true')).toEqual(['web']);
      expect(await ids('?passing=false')).toEqual(['web', 'web-2', 'web-3']);
      expect(await ids('?tag=v1')).toEqual(['web', 'web-3']);
      expect(await ids('?tag=v1&tag=canary')).toEqual(['web-3']);
      expect(await ids('?tag=v1&passing')).toEqual(['web']);
      expect(await ids('?tag=nope')).toEqual([]);
      expectInvalid(await c.get('/v1/health/service/web?passing=maybe'), 'passing');
    });

    test('?passing: a failing node-level check makes every service on the node non-passing', async () => {
      const passing = async (name: string) => (await getJson<HealthEntry[]>(c, `/v1/health/service/${name}?passing`)).map((e) => e.Service.ID);
      await registerCheck(c, { ID: 'node-ttl', Name: 'node ttl', TTL: ttl, Status: 'passing' });
      try {
        expect(await passing('web')).toEqual(['web']);
        expect(await passing('api')).toEqual(['api']);
        await putEmpty(c, '/v1/agent/check/fail/node-ttl?note=down');
        expect(await passing('web')).toEqual([]);
        expect(await passing('api')).toEqual([]);
        const all = await getJson<HealthEntry[]>(c, '/v1/health/service/web');
        for (const e of all) expect(e.Checks.find((k) => k.CheckID === 'node-ttl')).toMatchObject({ Status: 'critical', Output: 'down' });
        await putEmpty(c, '/v1/agent/check/warn/node-ttl');
        expect(await passing('api')).toEqual([]);
      } finally {
        await c.put('/v1/agent/check/deregister/node-ttl');
      }
      expect(await passing('web')).toEqual(['web']);
      expect(await passing('api')).toEqual(['api']);
    });

    test('/v1/health/state/{any|passing|warning|critical|fail}; fail = critical; an unknown state → 400 1009', async () => {
      const all = await getJson<CheckRecord[]>(c, '/v1/health/state/any');
      expect(all.map((k) => k.CheckID)).toEqual(expect.arrayContaining(['gossipHealth', 'service:web', 'service:web-2', 'service:web-3', 'mem-check']));
      for (const state of ['passing', 'warning', 'critical']) {
        const got = await getJson<CheckRecord[]>(c, `/v1/health/state/${state}`);
        expect(got.map((k) => `${k.Node}/${k.CheckID}`), state).toEqual(all.filter((k) => k.Status === state).map((k) => `${k.Node}/${k.CheckID}`));
        expect(got.length, state).toBeGreaterThan(0);
      }
      const critical = await getJson<CheckRecord[]>(c, '/v1/health/state/critical');
      expect(await getJson(c, '/v1/health/state/fail')).toEqual(critical);
      expect(critical.map((k) => k.CheckID)).toContain('service:web-3');
      for (const bad of ['unknown', 'foo', 'failing']) expectInvalid(await c.get(`/v1/health/state/${bad}`));
    });

    // ------------------------------------------------------------------ 5. filters (§5 examples on their endpoints)
    test('/v1/agent/checks filters: ServiceName == "web", ServiceID == web, Status != passing and Type == ttl (keys kept)', async () => {
      const all = await agentChecks(c);
      const list = Object.values(all);
      const key = (k: CheckRecord) => k.CheckID;
      const run = async (f: string) => {
        const got = await agentChecks(c, f);
        for (const [id, rec] of Object.entries(got)) expect(rec.CheckID).toBe(id);
        return Object.values(got);
      };
      expectSubset(list, await run('ServiceName == "web"'), (k) => k.ServiceName === 'web', key);
      expectSubset(list, await run('ServiceID == web'), (k) => k.ServiceID === 'web', key);
      expect(Object.keys(await agentChecks(c, 'ServiceID == web'))).toEqual(['service:web']);
      expectSubset(list, await run('Status != passing and Type == ttl'), (k) => k.Status !== 'passing' && k.Type === 'ttl', key);
      expect(Object.keys(await agentChecks(c, 'Status != passing and Type == ttl'))).toEqual(expect.arrayContaining(['service:web-2', 'service:web-3']));
    });

    test('/v1/health/service/web filters: "primary" in Service.Tags, Service.Tags contains "v1", Service.Meta.env == prod, Checks.Status == critical', async () => {
      const all = await getJson<HealthEntry[]>(c, '/v1/health/service/web');
      const run = async (f: string) => getJson<HealthEntry[]>(c, `/v1/health/service/web?${q(f)}`);
      const key = (e: HealthEntry) => e.Service.ID;
      expectSubset(all, await run('"primary" in Service.Tags'), (e) => e.Service.Tags.includes('primary'), key);
      expectSubset(all, await run('Service.Tags contains "v1"'), (e) => e.Service.Tags.includes('v1'), key);
      expectSubset(all, await run('Service.Meta.env == prod'), (e) => e.Service.Meta?.env === 'prod', key);
      expectSubset(all, await run('Checks.Status == critical'), (e) => e.Checks.some((k) => k.Status === 'critical'), key);
      expect((await run('Checks.Status == critical')).map(key)).toEqual(['web-3']);
      expect((await run('Service.Tags contains "v1"')).map(key)).toEqual(['web', 'web-3']);
    });

    test('/v1/health/service/web filter Checks.Status==passing: implicit ANY over node + service checks', async () => {
      // Node checks pass in every entry (gossipHealth, mem-check, Zeta-check), so the filter keeps all. With every
      // node check failing, only entries with a passing service check remain: web, not warning web-2 nor critical web-3.
      const all = await getJson<HealthEntry[]>(c, '/v1/health/service/web');
      const run = async () => (await getJson<HealthEntry[]>(c, `/v1/health/service/web?${q('Checks.Status==passing')}`)).map((e) => e.Service.ID);
      expect(await run()).toEqual(all.map((e) => e.Service.ID));
      const gossip = (await getJson<CheckRecord[]>(c, '/v1/health/node/node1')).find((k) => k.CheckID === 'gossipHealth')!;
      const setGossip = async (Status: string, Output: string) => {
        const r = await c.put('/v1/catalog/register', { Node: 'node1', ID: node1.ID, Address: node1.Address, Check: { CheckID: 'gossipHealth', Name: gossip.Name, Status, Output } });
        expect(r.status, r.text).toBe(200);
      };
      await setGossip('critical', 'test: pretend the node is down');
      await putEmpty(c, '/v1/agent/check/warn/mem-check');
      await putEmpty(c, '/v1/agent/check/warn/Zeta-check');
      try {
        const nowAll = await getJson<HealthEntry[]>(c, '/v1/health/service/web');
        expect(nowAll.map((e) => e.Service.ID)).toEqual(['web', 'web-2', 'web-3']);
        const filtered = await getJson<HealthEntry[]>(c, `/v1/health/service/web?${q('Checks.Status==passing')}`);
        expectSubset(nowAll, filtered, (e) => e.Checks.some((k) => k.Status === 'passing'), (e) => e.Service.ID);
        expect(filtered.map((e) => e.Service.ID)).toEqual(['web']);
      } finally {
        await setGossip('passing', gossip.Output);
        await putEmpty(c, '/v1/agent/check/pass/mem-check');
        await putEmpty(c, '/v1/agent/check/pass/Zeta-check');
      }
      expect((await getJson<CheckRecord[]>(c, '/v1/health/node/node1'))[0]).toMatchObject({ CheckID: 'gossipHealth', Status: 'passing' });
      expect(await run()).toEqual(all.map((e) => e.Service.ID));
    });

    test('/v1/health/service/web filter Node.Meta["rack"] is not empty follows node1\'s meta (catalog register with its ID)', async () => {
      const f = q('Node.Meta["rack"] is not empty');
      expect(await getJson(c, `/v1/health/service/web?${f}`)).toEqual([]);
      const r = await c.put('/v1/catalog/register', { Node: 'node1', ID: node1.ID, Address: node1.Address, NodeMeta: { rack: 'r1' } });
      expect(r.status, r.text).toBe(200);
      const after = await getJson<HealthEntry[]>(c, `/v1/health/service/web?${f}`);
      expect(after.map((e) => e.Service.ID)).toEqual(['web', 'web-2', 'web-3']);
      expect(after[0]!.Node.Meta).toMatchObject({ rack: 'r1' });
      expect(after[0]!.Node.ID).toBe(node1.ID);
      expect(await getJson(c, `/v1/health/service/web?${q('Node.Meta["rack"] == r2')}`)).toEqual([]);
    });

    test('/v1/health/state/any filters: Name matches "^api-[0-9]+$", not (Status == passing or Status == warning)', async () => {
      const all = await getJson<CheckRecord[]>(c, '/v1/health/state/any');
      const run = async (f: string) => getJson<CheckRecord[]>(c, `/v1/health/state/any?${q(f)}`);
      const key = (k: CheckRecord) => `${k.Node}/${k.CheckID}`;
      const matched = await run('Name matches "^api-[0-9]+$"');
      expectSubset(all, matched, (k) => /^api-[0-9]+$/.test(k.Name), key);
      expect(matched.map((k) => k.Name)).toEqual(['api-1', 'api-22']);
      const notOk = await run('not (Status == passing or Status == warning)');
      expectSubset(all, notOk, (k) => k.Status !== 'passing' && k.Status !== 'warning', key);
      expect(notOk.map((k) => k.CheckID)).toContain('service:web-3');
    });

    test('filters on /v1/agent/services, /v1/catalog/service/{name}, /v1/catalog/nodes, /v1/health/node, /v1/health/checks', async () => {
      const services = await agentServices(c);
      const filteredServices = await agentServices(c, 'Tags contains "v1" and Service == web');
      expect(Object.keys(filteredServices).sort()).toEqual(['web', 'web-3']);
      expectSubset(Object.values(services), Object.values(await agentServices(c, 'Meta.env == prod')), (s) => s.Meta.env === 'prod', (s) => s.ID);
      expectSubset(Object.values(services), Object.values(await agentServices(c, 'Port == 8081')), (s) => s.Port === 8081, (s) => s.ID);

      const cat = await getJson<CatalogServiceNode[]>(c, '/v1/catalog/service/web');
      expectSubset(cat, await getJson(c, `/v1/catalog/service/web?${q('ServiceMeta.env == dev')}`), (s) => s.ServiceMeta.env === 'dev', (s) => s.ServiceID);
      expectSubset(cat, await getJson(c, `/v1/catalog/service/web?${q('"canary" in ServiceTags')}`), (s) => s.ServiceTags.includes('canary'), (s) => s.ServiceID);
      expect((await getJson<CatalogServiceNode[]>(c, `/v1/catalog/service/web?tag=v1&${q('ServicePort == 8080')}`)).map((s) => s.ServiceID)).toEqual(['web']);

      const nodes = await getJson<NodeRecord[]>(c, '/v1/catalog/nodes');
      expectSubset(nodes, await getJson(c, `/v1/catalog/nodes?${q('Meta["rack"] is not empty')}`), (n) => (n.Meta.rack ?? '') !== '', (n) => n.Node);
      expectSubset(nodes, await getJson(c, `/v1/catalog/nodes?${q('Address == "10.0.0.3"')}`), (n) => n.Address === '10.0.0.3', (n) => n.Node);
      expectSubset(nodes, await getJson(c, `/v1/catalog/nodes?${q('Node matches "^node[23]$"')}`), (n) => /^node[23]$/.test(n.Node), (n) => n.Node);

      const nodeChecks = await getJson<CheckRecord[]>(c, '/v1/health/node/node1');
      expectSubset(nodeChecks, await getJson(c, `/v1/health/node/node1?${q('ServiceName == web')}`), (k) => k.ServiceName === 'web', (k) => k.CheckID);
      expectSubset(nodeChecks, await getJson(c, `/v1/health/node/node1?${q('ServiceID == ""')}`), (k) => k.ServiceID === '', (k) => k.CheckID);

      const svcChecks = await getJson<CheckRecord[]>(c, '/v1/health/checks/web');
      expectSubset(svcChecks, await getJson(c, `/v1/health/checks/web?${q('Status == passing')}`), (k) => k.Status === 'passing', (k) => k.CheckID);
      expectSubset(svcChecks, await getJson(c, `/v1/health/checks/web?${q('v2 in ServiceTags')}`), (k) => k.ServiceTags.includes('v2'), (k) => k.CheckID);
    });

    test('a filter parse error → 400 1009 with details.filter, position {line, column, offset}, expected, and bexpr\'s message', async () => {
      const paths = ['/v1/agent/checks', '/v1/agent/services', '/v1/catalog/service/web', '/v1/catalog/nodes', '/v1/health/node/node1',
        '/v1/health/checks/web', '/v1/health/service/web', '/v1/health/state/any'];
      for (const path of paths) {
        const r = await c.get(`${path}?${q('Foo')}`);
        const body = expectInvalid(r, 'filter');
        expect(body.message, path).toBe(`${evaluatorPrefix}1:4 (3): no match found, expected: "!=", ".", "==", "[", [ \\t\\r\\n] or [a-zA-Z0-9_]`);
        expect(body.details.position, path).toEqual({ line: 1, column: 4, offset: 3 });
        expect(Array.isArray(body.details.expected) && body.details.expected.length > 0, `${path}: ${r.text}`).toBe(true);
      }
      const r = await c.get(`/v1/health/service/web?${q('Service.Tags contains "v1" and')}`);
      const body = expectInvalid(r, 'filter');
      expect(body.message.startsWith(`${evaluatorPrefix}1:`), body.message).toBe(true);
      expect(body.details.position).toMatchObject({ line: 1 });
      expect(typeof body.details.position.column).toBe('number');
      expect(typeof body.details.position.offset).toBe('number');
      expect(body.details.expected.length).toBeGreaterThan(0);
    });

    test('bare values with "-", ":" or dotted digits are errors: Node == host-name, Address == 10.0.0.1 → 400 1009', async () => {
      for (const path of ['/v1/health/state/any', '/v1/health/node/node1', '/v1/agent/checks']) {
        const body = expectInvalid(await c.get(`${path}?${q('Node == host-name')}`), 'filter');
        expect(body.message.startsWith(`${evaluatorPrefix}1:`), body.message).toBe(true);
      }
      for (const path of ['/v1/catalog/nodes', '/v1/catalog/service/web']) {
        const body = expectInvalid(await c.get(`${path}?${q('Address == 10.0.0.1')}`), 'filter');
        expect(body.message.startsWith(`${evaluatorPrefix}1:`), body.message).toBe(true);
      }
      // Quoted, the same values are fine.
      expect(await getJson(c, `/v1/catalog/nodes?${q('Address == "10.0.0.1"')}`)).toEqual([]);
      expect(await getJson(c, `/v1/health/state/any?${q('Node == "host-name"')}`)).toEqual([]);
    });

    test('an unknown selector → 400 1009 "Selector [\\"Foo\\"] is not valid"; a wrong operator for the field type → 400 1009', async () => {
      for (const path of ['/v1/agent/checks', '/v1/agent/services', '/v1/health/service/web', '/v1/health/state/any', '/v1/catalog/nodes']) {
        const body = expectInvalid(await c.get(`${path}?${q('Foo == bar')}`), 'filter');
        expect(body.message, path).toContain('Selector ["Foo"] is not valid');
      }
      // Selectors are case-sensitive field names, and non-filterable fields are refused.
      expectInvalid(await c.get(`/v1/agent/checks?${q('status == passing')}`), 'filter');
      expectInvalid(await c.get(`/v1/health/state/any?${q('CreateIndex == 1')}`), 'filter');
      // `is empty` is for collections and maps, not strings (§5 operator table).
      for (const path of ['/v1/agent/checks', '/v1/health/state/any', '/v1/health/checks/web']) {
        const body = expectInvalid(await c.get(`${path}?${q('Notes is empty')}`), 'filter');
        expect(body.message, path).toContain('Invalid match operator "Is Empty" for selector ["Notes"]');
      }
      expectInvalid(await c.get(`/v1/health/service/web?${q('Service.Port contains "80"')}`), 'filter');
      expectInvalid(await c.get(`/v1/health/service/web?${q('Service.Port == abc')}`), 'filter');
    });

    // ------------------------------------------------------------------ blocking
    test('a blocking query on /v1/health/service/{name}?index=N wakes when a check of that service changes status', async () => {
      const first = await c.get('/v1/health/service/web');
      const index = Number(first.headers.get('x-consul-index'));
      expect(index).toBeGreaterThan(0);
      let settled = false;
      const pending = c.get(`/v1/health/service/web?index=${index}&wait=30s`).then((r) => { settled = true; return r; });
      await sleep(300);
      expect(settled, 'nothing changed yet: the query should still be waiting').toBe(false);
      await putEmpty(c, '/v1/agent/check/warn/service:web?note=woken');
      try {
        const r = await pending;
        expect(r.status).toBe(200);
        expect(Number(r.headers.get('x-consul-index'))).toBeGreaterThan(index);
        const web = r.json<HealthEntry[]>().find((e) => e.Service.ID === 'web')!;
        expect(web.Checks.find((k) => k.CheckID === 'service:web')).toMatchObject({ Status: 'warning', Output: 'woken' });
      } finally {
        await putEmpty(c, '/v1/agent/check/pass/service:web');
      }
    });

    test('a blocking query with nothing changing returns the same data and index when wait passes', async () => {
      const first = await c.get('/v1/health/service/web');
      const index = Number(first.headers.get('x-consul-index'));
      const started = Date.now();
      const r = await c.get(`/v1/health/service/web?index=${index}&wait=1s`);
      const elapsed = Date.now() - started;
      expect(r.status).toBe(200);
      expect(Number(r.headers.get('x-consul-index'))).toBe(index);
      expect(r.json()).toEqual(first.json());
      // It did wait (a lower bound on correctness, not a speed claim).
      expect(elapsed).toBeGreaterThanOrEqual(900);
    });

    test('bad ?index / ?wait on a health query → 400 1009', async () => {
      expectInvalid(await c.get('/v1/health/service/web?index=abc'), 'index');
      expectInvalid(await c.get('/v1/health/service/web?index=1&wait=soon'), 'wait');
    });
  });
});

// ------------------------------------------------------------------------------------------------ 6. config file
/** Runs the agent to its exit (a start that must fail); kills it if it is still running at the deadline. */
function runToExit(configPath: string, deadlineMs = 20_000): Promise<{ code: number | null; stderr: string; stdout: string }> {
  const dataDir = tempDataDir();
  const proc = spawn(process.execPath, [
    '--import', tsxLoader, join(repoRoot, 'src/main.ts'),
    '--http-port', '0', '--data-dir', dataDir, '--node-name', 'node1', '--config-file', configPath,
  ], { cwd: repoRoot, stdio: ['ignore', 'pipe', 'pipe'] });
  let stdout = '';
  let stderr = '';
  proc.stdout.on('data', (d: Buffer) => { stdout += d.toString(); });
  proc.stderr.on('data', (d: Buffer) => { stderr += d.toString(); });
  return new Promise((resolve, reject) => {
    const timer = setTimeout(() => {
      proc.kill('SIGKILL');
      reject(new Error(`agent still running after ${deadlineMs} ms (it should have refused the config):\n${stdout}${stderr}`));
    }, deadlineMs);
    proc.once('exit', (code) => {
      clearTimeout(timer);
      rmSync(dataDir, { recursive: true, force: true });
      resolve({ code, stderr, stdout });
    });
  });
}

describe('--config-file definitions', () => {
  let dir: string;
  let agent: Agent;
  let c: Client;

  beforeAll(async () => {
    dir = mkdtempSync(join(tmpdir(), 'roster-health-config-'));
    const config = {
      node_name: 'from-file',
      datacenter: 'dc-file',
      enable_script_checks: true,
      service: { name: 'cfg-web', id: 'cfg-web-1', port: 9000, tags: ['file'], check: { ttl, status: 'passing' } },
      services: [{ name: 'cfg-api', checks: [{ ttl }, { ttl, status: 'warning' }] }],
      check: { id: 'cfg-mem', name: 'cfg mem', ttl },
      checks: [{ name: 'cfg-disk', ttl, status: 'warning', notes: 'from the file' }, { id: 'cfg-web-ttl', name: 'web ttl', service_id: 'cfg-web-1', ttl }],
    };
    writeFileSync(join(dir, 'good.json'), JSON.stringify(config));
    agent = await startAgent({ args: ['--config-file', join(dir, 'good.json')], env: { DOCKER_HOST: `unix://${join(dir, 'no-docker.sock')}` } });
    c = client(agent);
  }, 30_000);

  afterAll(async () => {
    await agent?.stop();
    agent?.cleanup();
    if (dir) rmSync(dir, { recursive: true, force: true });
  });

  test('services and checks of the file are registered at start (agent services and checks)', async () => {
    const services = await agentServices(c);
    expect(services['cfg-web-1']).toMatchObject({ ID: 'cfg-web-1', Service: 'cfg-web', Port: 9000, Tags: ['file'] });
    expect(services['cfg-api']).toMatchObject({ ID: 'cfg-api', Service: 'cfg-api' });
    const checks = await agentChecks(c);
    expect(checks['service:cfg-web-1']).toMatchObject({ Name: "Service 'cfg-web' check", Status: 'passing', ServiceID: 'cfg-web-1', ServiceTags: ['file'], Type: 'ttl' });
    expect(checks['service:cfg-api:1']).toMatchObject({ Status: 'critical', ServiceID: 'cfg-api' });
    expect(checks['service:cfg-api:2']).toMatchObject({ Status: 'warning', ServiceID: 'cfg-api' });
    expect(checks['cfg-mem']).toMatchObject({ Name: 'cfg mem', Status: 'critical', ServiceID: '', Type: 'ttl' });
    expect(checks['cfg-disk']).toMatchObject({ CheckID: 'cfg-disk', Status: 'warning', Notes: 'from the file' });
    expect(checks['cfg-web-ttl']).toMatchObject({ ServiceID: 'cfg-web-1', ServiceName: 'cfg-web' });
    expect((await getJson<HealthEntry[]>(c, '/v1/health/service/cfg-web')).map((e) => e.Service.ID)).toEqual(['cfg-web-1']);
  });

  test('flags override the file (the harness\'s --node-name node1 wins); a file-only datacenter shows in /v1/agent/self', async () => {
    const self = await getJson(c, '/v1/agent/self');
    expect(self.Config).toMatchObject({ NodeName: 'node1', Datacenter: 'dc-file' });
    expect(self.Member.Name).toBe('node1');
    for (const k of Object.values(await agentChecks(c))) expect(k.Node).toBe('node1');
    expect((await getJson<NodeRecord[]>(c, '/v1/catalog/nodes')).map((n) => [n.Node, n.Datacenter])).toEqual([['node1', 'dc-file']]);
    expect((await agentServices(c))['cfg-web-1']!.Datacenter).toBe('dc-file');
    expect(await getJson(c, '/v1/catalog/node/from-file')).toBeNull();
  });

  test('with enable_script_checks, script and container checks register over HTTP (args, docker_container_id, runtime_container_id, shell)', async () => {
    await registerCheck(c, { name: 'cfg-script', args: ['true'], interval: '30s', timeout: '5s', service_id: 'cfg-api' });
    await registerCheck(c, { id: 'cfg-docker', name: 'cfg docker', script_args: ['true'], docker_container_id: 'no-such-container', shell: '/bin/sh', interval: '30s', service_id: 'cfg-api' });
    await registerCheck(c, { ID: 'cfg-runtime', Name: 'cfg runtime', Args: ['true'], runtime_container_id: 'no-such-container', Interval: '30s', ServiceID: 'cfg-api' });
    const checks = await agentChecks(c);
    expect(checks['cfg-script']).toMatchObject({ Type: 'script', Interval: '30s', Timeout: '5s', ServiceID: 'cfg-api' });
    expect(checks['cfg-docker']).toMatchObject({ Type: 'docker', ServiceID: 'cfg-api' });
    expect(checks['cfg-runtime']).toMatchObject({ Type: 'docker' });
  });

  test('a bad definition in the file → exit code 2, stderr names the problem; nothing listens', async () => {
    writeFileSync(join(dir, 'bad-check.json'), JSON.stringify({ checks: [{ name: 'bad-check', ttl: '10s', interval: '10s' }] }));
    writeFileSync(join(dir, 'bad-service.json'), JSON.stringify({ service: { name: 'bad-svc', address: '0.0.0.0' } }));
    writeFileSync(join(dir, 'unknown-key.json'), JSON.stringify({ bogus_setting: true, datacenter: 'dc1' }));
    const [badCheck, badService, unknownKey] = await Promise.all([
      runToExit(join(dir, 'bad-check.json')), runToExit(join(dir, 'bad-service.json')), runToExit(join(dir, 'unknown-key.json')),
    ]);
    expect(badCheck.code, badCheck.stderr).toBe(2);
    // The usage text that follows mentions neither the field names nor the service's fault.
    expect(badCheck.stderr).toMatch(/Interval[^\n]*TTL|TTL[^\n]*Interval/);
    expect(badService.code, badService.stderr).toBe(2);
    expect(badService.stderr).toMatch(/Address/);
    expect(unknownKey.code, unknownKey.stderr).toBe(2);
    expect(unknownKey.stderr).toContain('bogus_setting');
    for (const r of [badCheck, badService, unknownKey]) expect(r.stdout + r.stderr).not.toMatch(/roster listening/);
  }, 30_000);
});
