// Goal: catalog, status and agent services (consul-compat.md §1.4, §1.6) run once per dialect — through the real
// npm `consul` 2.0.1 client against `--dialect consul` and over raw HTTP against the seed dialect — so the two
// renderings of one behaviour cannot drift apart.
import Consul from 'consul';
import { afterAll, beforeAll, describe, expect, test } from 'vitest';
import { type Client, type Driver, ttl, expectFailure, deregisterUnknown, dialects, consulHealthSuite } from '../support/consul-health.ts';

describe.each(dialects)('%s dialect', (dialect) => {
  let c: Client;
  let k: Consul;
  let d: Driver;
  const removeAll = consulHealthSuite(dialect, (s) => ({ c, k, d } = s));

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
      await expectFailure(dialect, c, k, deregisterUnknown('service', 'as-missing'));
    });
  });

});
