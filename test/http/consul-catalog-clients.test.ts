// Goal: the catalog answers what real Consul clients send it — Go's api package, the npm `consul` client, Patroni —
// as Consul does, in both dialects, through the HTTP API of a started agent: a deregistration carrying empty
// ServiceID/CheckID fields (Go sends them always); `?node-meta=key:value` on every read Consul takes it on; the
// `consul` service, which the consul dialect lists with one instance per Roster node, as Consul per server; a
// catalog service node's ServiceTaggedAddresses; `?tag` compared without case; `filter` on /v1/catalog/services and
// /v1/catalog/node/<node>.
import Consul from 'consul';
import { afterAll, beforeAll, describe, expect, test } from 'vitest';
import { client, expectError, withAgent } from '../support/agent.ts';
import { serviceNodeFieldOrder, serviceNodeFieldOrderTagged } from '../support/health-api.ts';

type Client = ReturnType<typeof client>;
const dialects = ['consul', 'seed'] as const;

async function registerNode(c: Client, body: Record<string, unknown>): Promise<void> {
  const r = await c.put('/v1/catalog/register', body);
  expect(r.status, r.text).toBe(200);
}

async function nodeNames(c: Client): Promise<string[]> {
  const r = await c.get('/v1/catalog/nodes');
  expect(r.status, r.text).toBe(200);
  return r.json<{ Node: string }[]>().map((n) => n.Node);
}

const get = async <T = any>(c: Client, path: string): Promise<T> => {
  const r = await c.get(path);
  expect(r.status, `${path}: ${r.text}`).toBe(200);
  return r.json<T>();
};

describe.each(dialects)('%s dialect', (dialect) => {
  let c: Client;
  let k: Consul;
  let url: string;
  withAgent((a) => {
    url = a.url;
    c = client(a);
    k = new Consul({ host: '127.0.0.1', port: Number(new URL(a.url).port) });
  }, { args: ['--node-meta', 'env:prod', '--node-meta', 'rack:r1', ...(dialect === 'consul' ? ['--dialect', 'consul'] : [])] });
  afterAll(() => (k as any)?.destroy());

  describe('PUT /v1/catalog/deregister', () => {
    test('empty ServiceID and CheckID, as Go\'s api.CatalogDeregistration sends them, deregister the node', async () => {
      await registerNode(c, { Node: 'ext1', Address: '10.0.0.9' });
      expect(await nodeNames(c)).toContain('ext1');
      const r = await c.put('/v1/catalog/deregister', { Node: 'ext1', Datacenter: '', ServiceID: '', CheckID: '' });
      expect(r.status, r.text).toBe(200);
      expect(r.json()).toBe(true);
      expect(await nodeNames(c)).not.toContain('ext1');
    });

    test('an empty ServiceID beside a CheckID deregisters only that check', async () => {
      await registerNode(c, { Node: 'ext2', Address: '10.0.0.10', Checks: [{ CheckID: 'disk', Name: 'disk', Status: 'passing' }, { CheckID: 'mem', Name: 'mem', Status: 'passing' }] });
      const r = await c.put('/v1/catalog/deregister', { Node: 'ext2', ServiceID: '', CheckID: 'disk' });
      expect(r.status, r.text).toBe(200);
      const checks = await c.get('/v1/health/node/ext2');
      expect(checks.json<{ CheckID: string }[]>().map((k) => k.CheckID)).toEqual(['mem']);
      expect(await nodeNames(c)).toContain('ext2');
    });

    test('a ServiceID that names a service is still refused, changing nothing', async () => {
      await registerNode(c, { Node: 'ext3', Address: '10.0.0.11' });
      const r = await c.put('/v1/catalog/deregister', { Node: 'ext3', ServiceID: 'redis1' });
      if (dialect === 'seed') expectError(r, 400, 1009);
      else expect([r.status, r.text]).toEqual([400, 'ServiceID: services are deregistered through /v1/agent/service/deregister']);
      expect(await nodeNames(c)).toContain('ext3');
    });
  });

  describe('?node-meta=key:value', () => {
    const nodes = (q: string) => get<{ Node: string }[]>(c, `/v1/catalog/nodes?${q}`).then((l) => l.map((n) => n.Node));
    let self: { Node: string; Address: string };

    beforeAll(async () => {
      // The agent's node has the meta of its --node-meta flags.
      self = await get(c, '/v1/agent/self').then((s) => ({ Node: s.Config.NodeName, Address: s.Member.Addr }));
      await registerNode(c, { Node: 'nm-dev', Address: '10.0.1.1', NodeMeta: { env: 'dev', url: 'http://a:1' }, Check: { CheckID: 'nm-disk', Name: 'disk', Status: 'passing' } });
      await registerNode(c, { Node: 'nm-flag', Address: '10.0.1.2', NodeMeta: { flag: '' } });
      const r = await c.put('/v1/agent/service/register', { ID: 'nm-web-1', Name: 'nm-web', Tags: ['a'], Check: { TTL: '10m', Status: 'passing' } });
      expect(r.status, r.text).toBe(200);
    });
    afterAll(async () => {
      await c.put('/v1/agent/service/deregister/nm-web-1');
      for (const node of ['nm-dev', 'nm-flag']) await c.put('/v1/catalog/deregister', { Node: node });
    });

    test('/v1/catalog/nodes keeps the nodes whose meta holds every pair', async () => {
      expect(await nodes('node-meta=env:prod')).toEqual([self.Node]);
      expect(await nodes('node-meta=env:prod&node-meta=rack:r1')).toEqual([self.Node]);
      expect(await nodes('node-meta=env:prod&node-meta=rack:r2')).toEqual([]);
      expect(await nodes('node-meta=env:dev')).toEqual(['nm-dev']);
      expect(await nodes('node-meta=env:none')).toEqual([]);
    });

    test('split at the first colon; without one the key is asked with an empty value; never refused', async () => {
      expect(await nodes(`node-meta=${encodeURIComponent('url:http://a:1')}`)).toEqual(['nm-dev']);
      expect(await nodes('node-meta=flag')).toEqual(['nm-flag']);
      expect(await nodes('node-meta=env')).toEqual([]);
      expect(await nodes('node-meta=')).toEqual([]);
      expect(await nodes('node-meta=env:dev&node-meta=env:prod')).toEqual([self.Node]);
    });

    test('/v1/catalog/services lists the services of the matching nodes only', async () => {
      const prod = await get<Record<string, string[]>>(c, '/v1/catalog/services?node-meta=env:prod');
      expect(prod['nm-web']).toEqual(['a']);
      expect(await get(c, '/v1/catalog/services?node-meta=env:dev')).toEqual({});
    });

    test('/v1/catalog/service/<name> and /v1/health/service/<name>: the instances on matching nodes', async () => {
      expect((await get<unknown[]>(c, '/v1/catalog/service/nm-web?node-meta=env:prod')).length).toBe(1);
      expect(await get(c, '/v1/catalog/service/nm-web?node-meta=env:dev')).toEqual([]);
      expect((await get<unknown[]>(c, '/v1/health/service/nm-web?node-meta=env:prod')).length).toBe(1);
      expect(await get(c, '/v1/health/service/nm-web?node-meta=env:dev')).toEqual([]);
    });

    test('/v1/health/checks/<name> and /v1/health/state/<state>: the checks of matching nodes', async () => {
      expect((await get<unknown[]>(c, '/v1/health/checks/nm-web?node-meta=env:prod')).length).toBe(1);
      expect(await get(c, '/v1/health/checks/nm-web?node-meta=env:dev')).toEqual([]);
      const dev = await get<{ Node: string; CheckID: string }[]>(c, '/v1/health/state/any?node-meta=env:dev');
      expect(dev.map((x) => `${x.Node}/${x.CheckID}`)).toEqual(['nm-dev/nm-disk']);
      expect(await get(c, '/v1/health/state/passing?node-meta=env:none')).toEqual([]);
    });

    test.runIf(dialect === 'consul')('the npm client\'s node-meta option is applied', async () => {
      const api = k as any;
      expect((await api.catalog.node.list({ 'node-meta': ['env:prod'] })).map((n: { Node: string }) => n.Node)).toEqual([self.Node]);
      expect(await api.catalog.node.list({ 'node-meta': ['env:none'] })).toEqual([]);
      expect(await api.catalog.service.list({ 'node-meta': ['env:none'] })).toEqual({});
      expect(await api.health.state({ state: 'any', 'node-meta': ['env:none'] })).toEqual([]);
    });
  });

  describe('the consul service', () => {
    let port: number;
    beforeAll(async () => {
      port = Number(new URL(url).port);
      await registerNode(c, { Node: 'cs-external', Address: '10.0.2.1' });
    });
    afterAll(() => c.put('/v1/catalog/deregister', { Node: 'cs-external' }));

    test.runIf(dialect === 'consul')('is listed, and has an instance on the agent\'s node only (a node without Roster has none)', async () => {
      expect((await get<Record<string, string[]>>(c, '/v1/catalog/services')).consul).toEqual([]);
      const nodes = await get<any[]>(c, '/v1/catalog/service/consul');
      expect(nodes.map((n) => [n.Node, n.ServiceID, n.ServiceName, n.ServiceAddress])).toEqual([['node1', 'consul', 'consul', '']]);
      expect(nodes[0].ServicePort).toBe(port);
      expect(nodes[0].Address).toBe((await get<any[]>(c, '/v1/catalog/nodes')).find((n) => n.Node === 'node1').Address);
      const health = await get<any[]>(c, '/v1/health/service/consul?passing');
      expect(health.map((e) => [e.Node.Node, e.Service.ID, e.Service.Port])).toEqual([['node1', 'consul', port]]);
      expect(health[0].Checks.map((k: { CheckID: string; Status: string }) => [k.CheckID, k.Status])).toEqual([['gossipHealth', 'passing']]);
      expect((await get(c, '/v1/catalog/node/node1')).Services.consul).toMatchObject({ ID: 'consul', Service: 'consul', Port: port });
      expect((await get(c, '/v1/catalog/node-services/node1')).Services.map((s: { ID: string }) => s.ID)).toContain('consul');
      expect(await get(c, '/v1/health/checks/consul')).toEqual([]);
      // The agent's own services are those registered with it: Consul's agent does not list `consul` either.
      expect(Object.keys(await get(c, '/v1/agent/services'))).not.toContain('consul');
    });

    test.runIf(dialect === 'seed')('is not part of the seed dialect\'s registry', async () => {
      expect(Object.keys(await get(c, '/v1/catalog/services'))).not.toContain('consul');
      expect(await get(c, '/v1/catalog/service/consul')).toEqual([]);
      expect(await get(c, '/v1/health/service/consul')).toEqual([]);
    });
  });

  test('/v1/catalog/service/<name>: ServiceTaggedAddresses after ServiceAddress when the service has tagged addresses', async () => {
    const tagged = { lan: { Address: '10.0.0.5', Port: 9100 }, wan: { Address: '198.51.100.5', Port: 19100 } };
    for (const body of [{ ID: 'ta1', Name: 'ta', Address: '10.0.0.5', Port: 9100, TaggedAddresses: tagged }, { ID: 'ta2', Name: 'ta', Port: 9101 }]) {
      const r = await c.put('/v1/agent/service/register', body);
      expect(r.status, r.text).toBe(200);
    }
    const [withAddresses, without] = await get<Record<string, unknown>[]>(c, '/v1/catalog/service/ta');
    expect(Object.keys(withAddresses!)).toEqual(serviceNodeFieldOrderTagged);
    expect(withAddresses!.ServiceTaggedAddresses).toEqual(tagged);
    expect(Object.keys(without!)).toEqual(serviceNodeFieldOrder);
    const filtered = await get<{ ServiceID: string }[]>(c, `/v1/catalog/service/ta?filter=${encodeURIComponent('wan in ServiceTaggedAddresses')}`);
    expect(filtered.map((s) => s.ServiceID)).toEqual(['ta1']);
    for (const id of ['ta1', 'ta2']) await c.put(`/v1/agent/service/deregister/${id}`);
  });

  test('?tag matches a tag whatever its case, as Consul compares tags; every ?tag must match', async () => {
    for (const body of [{ ID: 'tc-1', Name: 'tc', Tags: ['Primary', 'v2'], Port: 91 }, { ID: 'tc-2', Name: 'tc', Tags: ['replica'], Port: 92 }]) {
      const r = await c.put('/v1/agent/service/register', body);
      expect(r.status, r.text).toBe(200);
    }
    for (const path of ['/v1/catalog/service/tc', '/v1/health/service/tc']) {
      const ids = async (q: string) => (await get<any[]>(c, `${path}?${q}`)).map((e) => e.ServiceID ?? e.Service.ID);
      expect(await ids('tag=primary')).toEqual(['tc-1']);
      expect(await ids('tag=PRIMARY&tag=V2')).toEqual(['tc-1']);
      expect(await ids('tag=primary&tag=replica')).toEqual([]);
      expect(await ids('tag=Replica')).toEqual(['tc-2']);
    }
    for (const id of ['tc-1', 'tc-2']) await c.put(`/v1/agent/service/deregister/${id}`);
  });

  test('?filter applies on /v1/catalog/services (ServiceNode fields) and /v1/catalog/node/<node> (service fields); a bad one is refused', async () => {
    for (const body of [{ ID: 'fl-1', Name: 'fl-a', Tags: ['x'], Port: 81 }, { ID: 'fl-2', Name: 'fl-b', Port: 82 }]) {
      const r = await c.put('/v1/agent/service/register', body);
      expect(r.status, r.text).toBe(200);
    }
    const q = (f: string) => `filter=${encodeURIComponent(f)}`;
    expect(await get(c, `/v1/catalog/services?${q('ServicePort == 81')}`)).toEqual({ 'fl-a': ['x'] });
    expect(Object.keys(await get(c, `/v1/catalog/services?${q('ServiceName matches "^fl-"')}`))).toEqual(['fl-a', 'fl-b']);
    expect(Object.keys((await get(c, `/v1/catalog/node/node1?${q('Port == 82')}`)).Services)).toEqual(['fl-2']);
    for (const path of ['/v1/catalog/services', '/v1/catalog/node/node1']) {
      const r = await c.get(`${path}?${q('Nope == 1')}`);
      if (dialect === 'seed') expectError(r, 400, 1009);
      else expect(r.status, r.text).toBe(500);
    }
    for (const id of ['fl-1', 'fl-2']) await c.put(`/v1/agent/service/deregister/${id}`);
  });
});
