// Goal: catalog and health queries (consul-compat.md §1.5, §1.6; registry.md health rows) on one data set of
// services, checks and nodes, through HTTP.
import { beforeAll, describe, expect, test } from 'vitest';
import { client, withAgent } from '../support/in-process.ts';
import { type Client, type CheckRecord, type NodeRecord, type HealthEntry, type AgentService, type CatalogServiceNode, checkFieldOrder, serviceNodeFieldOrder, nodeFieldOrder, ttl, byCheckId, getJson, putEmpty, registerCheck, expectInvalid, registerDataSet } from '../support/health-api.ts';

describe('catalog, health queries and filters on one data set', () => {
  let c: Client;
  let node1: NodeRecord;

  withAgent((a) => { c = client(a); });
  beforeAll(async () => { node1 = await registerDataSet(c); });

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
});
