// Goal: the agent's per-service endpoints Consul clients call — `/v1/agent/service/<id>` (Go's Agent().Service(),
// with its ContentHash and hash-based blocking), `/v1/agent/health/service/id/<id>` and `/name/<name>` (load
// balancers: 200/429/503 and Consul's bodies, `?format=text`) — and `/v1/catalog/node-services/<node>`, in both
// dialects, through the HTTP API of a started agent.
import { beforeAll, describe, expect, test } from 'vitest';
import { client, expectError, withAgent, type HttpResult } from '../support/agent.ts';

type Client = ReturnType<typeof client>;
const dialects = ['consul', 'seed'] as const;
const ttl = '10m';

async function put(c: Client, path: string, body?: unknown): Promise<void> {
  const r = await c.put(path, body);
  expect(r.status, `${path}: ${r.text}`).toBe(200);
}

/** A GET with its time, so a test can tell a blocked answer from an immediate one. */
async function timed(c: Client, path: string, headers?: Record<string, string>): Promise<HttpResult & { ms: number }> {
  const started = Date.now();
  const r = await c.get(path, headers);
  return Object.assign(r, { ms: Date.now() - started });
}

describe.each(dialects)('%s dialect', (dialect) => {
  let c: Client;
  withAgent((a) => { c = client(a); }, { args: dialect === 'consul' ? ['--dialect', 'consul'] : [] });

  beforeAll(async () => {
    await put(c, '/v1/agent/service/register', {
      ID: 'web1', Name: 'web', Tags: ['a'], Meta: { team: 'x' }, Address: '10.0.0.5', Port: 80,
      TaggedAddresses: { lan: { Address: '10.0.0.5', Port: 80 } }, Check: { CheckID: 'web1-ttl', TTL: ttl, Status: 'passing' },
    });
    await put(c, '/v1/agent/service/register', { ID: 'web2', Name: 'web', Port: 81, Check: { CheckID: 'web2-ttl', TTL: ttl, Status: 'passing' } });
  });

  describe('GET /v1/agent/service/<id>', () => {
    test('Consul\'s record, its ContentHash in the body and in X-Consul-ContentHash, no index headers', async () => {
      const r = await c.get('/v1/agent/service/web1');
      expect(r.status, r.text).toBe(200);
      const body = r.json();
      expect(Object.keys(body)).toEqual(['ID', 'Service', 'Tags', 'Meta', 'Port', 'Address', 'TaggedAddresses', 'Weights', 'EnableTagOverride', 'ContentHash', 'Datacenter']);
      expect(body).toMatchObject({
        ID: 'web1', Service: 'web', Tags: ['a'], Meta: { team: 'x' }, Port: 80, Address: '10.0.0.5',
        TaggedAddresses: { lan: { Address: '10.0.0.5', Port: 80 } }, Weights: { Passing: 1, Warning: 1 }, EnableTagOverride: false, Datacenter: 'dc1',
      });
      expect(body.ContentHash).toMatch(/^[0-9a-f]{16}$/);
      expect(r.headers.get('x-consul-contenthash')).toBe(body.ContentHash);
      expect(r.headers.get('x-consul-index')).toBeNull();
      expect((await c.get('/v1/agent/service/web1')).json().ContentHash).toBe(body.ContentHash);
    });

    test('an unknown id is 404', async () => {
      const r = await c.get('/v1/agent/service/nope');
      if (dialect === 'seed') expectError(r, 404, 1006);
      else expect([r.status, r.text]).toEqual([404, 'unknown service ID: nope']);
    });

    test('?hash= waits while the hash is the current one: an unrelated change does not end it, the wait does', async () => {
      const { ContentHash: hash } = (await c.get('/v1/agent/service/web1')).json();
      const pending = timed(c, `/v1/agent/service/web1?hash=${hash}&wait=1500ms`);
      setTimeout(() => void c.put('/v1/agent/service/register', { ID: 'other1', Name: 'other' }), 200);
      const r = await pending;
      expect(r.status, r.text).toBe(200);
      expect(r.ms).toBeGreaterThanOrEqual(1400);
      expect(r.json().ContentHash).toBe(hash);
    });

    test('?hash= answers as soon as the definition changes, with the new record and hash', async () => {
      const { ContentHash: hash } = (await c.get('/v1/agent/service/web2')).json();
      const pending = timed(c, `/v1/agent/service/web2?hash=${hash}&wait=20s`);
      setTimeout(() => void c.put('/v1/agent/service/register', { ID: 'web2', Name: 'web', Port: 81, Tags: ['b'], Check: { CheckID: 'web2-ttl', TTL: ttl } }), 300);
      const r = await pending;
      expect(r.status, r.text).toBe(200);
      expect(r.ms).toBeLessThan(10_000);
      expect(r.json().Tags).toEqual(['b']);
      expect(r.json().ContentHash).not.toBe(hash);
      expect(r.headers.get('x-consul-contenthash')).toBe(r.json().ContentHash);
      // A hash that is not the current one answers at once.
      expect((await timed(c, `/v1/agent/service/web2?hash=${hash}&wait=20s`)).ms).toBeLessThan(5000);
    });
  });

  describe('GET /v1/agent/health/service/id/<id> and /name/<name>', () => {
    const health = (path: string, headers?: Record<string, string>) => c.get(`/v1/agent/health/service/${path}`, headers);

    test('passing is 200 with AggregatedStatus, Service and Checks (the instance\'s checks)', async () => {
      await put(c, '/v1/agent/check/pass/web1-ttl');
      const r = await health('id/web1');
      expect(r.status, r.text).toBe(200);
      const body = r.json();
      expect(Object.keys(body)).toEqual(['AggregatedStatus', 'Service', 'Checks']);
      expect(body.AggregatedStatus).toBe('passing');
      expect(body.Service).toMatchObject({ ID: 'web1', Service: 'web', Port: 80 });
      expect(body.Checks.map((k: { CheckID: string; Status: string }) => [k.CheckID, k.Status])).toEqual([['web1-ttl', 'passing']]);
    });

    test('warning is 429, critical 503, maintenance 503 "maintenance"; ?format=text and Accept: text/plain answer the status alone', async () => {
      await put(c, '/v1/agent/check/warn/web1-ttl');
      let r = await health('id/web1');
      expect([r.status, r.json().AggregatedStatus]).toEqual([429, 'warning']);
      r = await health('id/web1?format=text');
      expect([r.status, r.text, r.headers.get('content-type')]).toEqual([429, 'warning', 'text/plain']);
      await put(c, '/v1/agent/check/fail/web1-ttl');
      r = await health('id/web1', { accept: 'text/plain' });
      expect([r.status, r.text]).toEqual([503, 'critical']);
      await put(c, '/v1/agent/check/pass/web1-ttl');
      await put(c, '/v1/agent/service/maintenance/web1?enable=true');
      r = await health('id/web1?format=text');
      expect([r.status, r.text]).toEqual([503, 'maintenance']);
      await put(c, '/v1/agent/service/maintenance/web1?enable=false');
      expect((await health('id/web1?format=text')).text).toBe('passing');
    });

    test('by name: every instance, the status of the worst (passing < warning < critical)', async () => {
      await put(c, '/v1/agent/check/pass/web1-ttl');
      await put(c, '/v1/agent/check/warn/web2-ttl');
      let r = await health('name/web');
      expect(r.status, r.text).toBe(429);
      expect(r.json().map((e: { Service: { ID: string }; AggregatedStatus: string }) => [e.Service.ID, e.AggregatedStatus])).toEqual([['web1', 'passing'], ['web2', 'warning']]);
      await put(c, '/v1/agent/check/fail/web1-ttl');
      r = await health('name/web?format=text');
      expect([r.status, r.text]).toEqual([503, 'critical']);
      await put(c, '/v1/agent/check/pass/web1-ttl');
      await put(c, '/v1/agent/check/pass/web2-ttl');
      expect((await health('name/web')).status).toBe(200);
    });

    test('an unknown id or name is 404', async () => {
      const id = await health('id/nope');
      const name = await health('name/nope');
      if (dialect === 'seed') {
        expectError(id, 404, 1006);
        expectError(name, 404, 1006);
        return;
      }
      expect([id.status, id.json()]).toEqual([404, { AggregatedStatus: 'critical', Service: null, Checks: null }]);
      expect([name.status, name.json()]).toEqual([404, []]);
      expect((await health('id/nope?format=text')).text).toBe('ServiceId nope not found');
      expect((await health('name/nope?format=text')).text).toBe('ServiceName nope Not Found');
    });
  });

  describe('GET /v1/catalog/node-services/<node>', () => {
    test('the node and its services as a list of NodeService records, with index headers; filter applies', async () => {
      const r = await c.get('/v1/catalog/node-services/node1');
      expect(r.status, r.text).toBe(200);
      expect(Number(r.headers.get('x-consul-index'))).toBeGreaterThan(0);
      const body = r.json();
      expect(Object.keys(body)).toEqual(['Node', 'Services']);
      expect(body.Node).toMatchObject({ Node: 'node1', Datacenter: 'dc1' });
      // The consul dialect shows the `consul` service on every Roster node, as Consul on every server.
      const consul = dialect === 'consul' ? ['consul'] : [];
      expect(body.Services.map((s: { ID: string }) => s.ID)).toEqual([...consul, 'other1', 'web1', 'web2']);
      expect(body.Services[consul.length + 1]).toMatchObject({ ID: 'web1', Service: 'web', Tags: ['a'], Address: '10.0.0.5', Port: 80, Meta: { team: 'x' } });
      expect(Object.keys(body.Services[consul.length + 1]).slice(0, 4)).toEqual(['ID', 'Service', 'Tags', 'Address']);
      const filtered = await c.get(`/v1/catalog/node-services/node1?filter=${encodeURIComponent('Service == web')}`);
      expect(filtered.json().Services.map((s: { ID: string }) => s.ID)).toEqual(['web1', 'web2']);
    });

    test('an unknown node is {"Node": null, "Services": null}', async () => {
      const r = await c.get('/v1/catalog/node-services/no-such-node');
      expect([r.status, r.text]).toEqual([200, '{"Node":null,"Services":null}']);
    });
  });
});
