// Goal: ?filter on every health endpoint (consul-compat.md §5) and blocking health queries, on one data set of
// services, checks and nodes, through HTTP.
import { beforeAll, describe, expect, test } from 'vitest';
import { client, sleep, withAgent } from '../support/in-process.ts';
import { type Client, type CheckRecord, type NodeRecord, type HealthEntry, type CatalogServiceNode, evaluatorPrefix, q, getJson, putEmpty, agentChecks, agentServices, expectInvalid, expectSubset, registerDataSet } from '../support/health-api.ts';

describe('catalog, health queries and filters on one data set', () => {
  let c: Client;
  let node1: NodeRecord;

  withAgent((a) => { c = client(a); }, { args: ['--node-meta', 'zone:z1'] });
  beforeAll(async () => { node1 = await registerDataSet(c); });

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
      // With the agent's own meta: a registration changing it would be written back, its gossip check with it.
      const r = await c.put('/v1/catalog/register', { Node: 'node1', ID: node1.ID, Address: node1.Address, NodeMeta: { zone: 'z1' }, Check: { CheckID: 'gossipHealth', Name: gossip.Name, Status, Output } });
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

  test('/v1/health/service/web filter Node.Meta follows node1\'s meta, which the agent keeps as --node-meta sets it (a catalog register changing it is written back)', async () => {
    const zone = q('Node.Meta["zone"] == z1');
    const rack = q('Node.Meta["rack"] is not empty');
    const ids = async (f: string) => (await getJson<HealthEntry[]>(c, `/v1/health/service/web?${f}`)).map((e) => e.Service.ID);
    expect(await ids(zone)).toEqual(['web', 'web-2', 'web-3']);
    expect(await ids(rack)).toEqual([]);
    expect(await ids(q('Node.Meta["zone"] == z2'))).toEqual([]);
    const r = await c.put('/v1/catalog/register', { Node: 'node1', ID: node1.ID, Address: node1.Address, NodeMeta: { rack: 'r1' } });
    expect(r.status, r.text).toBe(200);
    await expect.poll(() => ids(zone)).toEqual(['web', 'web-2', 'web-3']);
    expect(await ids(rack)).toEqual([]);
    const after = await getJson<HealthEntry[]>(c, `/v1/health/service/web?${zone}`);
    expect(after[0]!.Node.Meta).toEqual({ zone: 'z1' });
    expect(after[0]!.Node.ID).toBe(node1.ID);
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

  test('a filter parse error → 400 1009, details {filter: ["Syntax:<bexpr\'s text>"]} naming line:column (offset) and what was expected', async () => {
    const paths = ['/v1/agent/checks', '/v1/agent/services', '/v1/catalog/service/web', '/v1/catalog/nodes', '/v1/health/node/node1',
      '/v1/health/checks/web', '/v1/health/service/web', '/v1/health/state/any'];
    for (const path of paths) {
      const r = await c.get(`${path}?${q('Foo')}`);
      const body = expectInvalid(r, 'filter');
      expect(body.message, path).toBe(`${evaluatorPrefix}1:4 (3): no match found, expected: "!=", ".", "==", "[", [ \\t\\r\\n] or [a-zA-Z0-9_]`);
      // The conventions' 1009 shape: field → ["Rule:text"], the position and the expected tokens in the text.
      expect(body.details, path).toEqual({ filter: [`Syntax:${body.message}`] });
    }
    const r = await c.get(`/v1/health/service/web?${q('Service.Tags contains "v1" and')}`);
    const body = expectInvalid(r, 'filter');
    expect(body.message).toMatch(new RegExp(`^${evaluatorPrefix}1:\\d+ \\(\\d+\\): .*expected: `));
    expect(body.details).toEqual({ filter: [`Syntax:${body.message}`] });
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
