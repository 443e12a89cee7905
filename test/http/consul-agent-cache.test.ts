// Goal: `?cached` (Consul's agent caching) through the HTTP API of a started agent, in both dialects. The reads
// Consul's agent caches — /v1/health/service/<name>, /v1/catalog/service/<name>, /v1/catalog/services,
// /v1/catalog/datacenters — answer `X-Cache: HIT` and `Age: 0` (every node answers from its own state, which the
// log keeps current) with the same body and index as without it; the flag is tested by presence, as Consul's;
// other reads take it and say nothing; `?cached` with a blocking `?index` still blocks until the service changes
// or the wait ends; `?cached` with `?consistent` and a malformed Cache-Control max-age or stale-if-error are 400,
// with Consul's texts in the consul dialect.
import { describe, expect, test } from 'vitest';
import { client, expectError, withAgent } from '../support/agent.ts';

type Client = ReturnType<typeof client>;
const dialects = ['consul', 'seed'] as const;
const cachedReads = ['/v1/health/service/ac-web', '/v1/catalog/service/ac-web', '/v1/catalog/services', '/v1/catalog/datacenters'];
const otherReads = ['/v1/catalog/nodes', '/v1/health/checks/ac-web', '/v1/health/state/any', '/v1/kv/?recurse', '/v1/session/list'];

const withQuery = (path: string, q: string) => `${path}${path.includes('?') ? '&' : '?'}${q}`;

async function put(c: Client, path: string, body?: unknown): Promise<void> {
  const r = await c.put(path, body);
  expect(r.status, `${path}: ${r.text}`).toBe(200);
}

describe.each(dialects)('%s dialect', (dialect) => {
  let c: Client;
  withAgent(async (a) => {
    c = client(a);
    await put(c, '/v1/agent/service/register', { ID: 'ac-web-1', Name: 'ac-web', Tags: ['v1'], Check: { TTL: '10m', Status: 'passing' } });
    await put(c, '/v1/kv/ac/key', 'v');
  }, { args: dialect === 'consul' ? ['--dialect', 'consul'] : [] });

  const expectRefused = (r: { status: number; text: string; json<T>(): T }, consulText: string) => {
    if (dialect === 'seed') expectError(r as never, 400, 1009);
    else expect([r.status, r.text]).toEqual([400, consulText]);
  };

  test.each(cachedReads)('%s?cached: X-Cache HIT and Age 0, the same body and index as without it', async (path) => {
    const plain = await c.get(path);
    expect(plain.status, plain.text).toBe(200);
    expect([plain.headers.get('x-cache'), plain.headers.get('age')]).toEqual([null, null]);
    for (const q of ['cached', 'cached=', 'cached=false']) {
      const r = await c.get(withQuery(path, q));
      expect(r.status, `${q}: ${r.text}`).toBe(200);
      expect([q, r.headers.get('x-cache'), r.headers.get('age')]).toEqual([q, 'HIT', '0']);
      expect(r.text).toBe(plain.text);
      expect(r.headers.get('x-consul-index')).toBe(plain.headers.get('x-consul-index'));
    }
  });

  test.each(otherReads)('%s takes ?cached and answers as without it, without X-Cache', async (path) => {
    const plain = await c.get(path);
    const r = await c.get(withQuery(path, 'cached'));
    expect([r.status, r.text]).toEqual([plain.status, plain.text]);
    expect([r.headers.get('x-cache'), r.headers.get('age')]).toEqual([null, null]);
  });

  test('?cached with a blocking ?index waits for the service to change, or for the wait', async () => {
    const path = '/v1/health/service/ac-web';
    const before = Number((await c.get(path)).headers.get('x-consul-index'));
    let started = Date.now();
    const idle = await c.get(`${path}?cached&index=${before}&wait=800ms`);
    expect(Date.now() - started).toBeGreaterThanOrEqual(750);
    expect([idle.status, idle.headers.get('x-consul-index'), idle.headers.get('x-cache')]).toEqual([200, String(before), 'HIT']);
    started = Date.now();
    const pending = c.get(`${path}?cached&index=${before}&wait=20s`);
    setTimeout(() => void put(c, '/v1/agent/service/register', { ID: 'ac-web-2', Name: 'ac-web' }), 300);
    const woken = await pending;
    expect(Date.now() - started).toBeLessThan(10_000);
    expect(woken.status, woken.text).toBe(200);
    expect(Number(woken.headers.get('x-consul-index'))).toBeGreaterThan(before);
    expect(woken.json<{ Service: { ID: string } }[]>().map((e) => e.Service.ID)).toEqual(['ac-web-1', 'ac-web-2']);
    expect([woken.headers.get('x-cache'), woken.headers.get('age')]).toEqual(['HIT', '0']);
    await put(c, '/v1/agent/service/deregister/ac-web-2');
  });

  test('?cached with ?consistent is refused on every read that takes the query options', async () => {
    for (const path of [...cachedReads.slice(0, 3), ...otherReads]) {
      expectRefused(await c.get(withQuery(path, 'cached&consistent')), 'Cannot specify ?cached with ?consistent, conflicting semantics.');
    }
    // ?stale with ?cached is fine, as in Consul.
    expect((await c.get('/v1/health/service/ac-web?cached&stale')).headers.get('x-cache')).toBe('HIT');
  });

  test('Cache-Control: max-age and stale-if-error must be whole seconds; other directives are left alone', async () => {
    for (const value of ['max-age=abc', 'no-cache, max-age=', 'stale-if-error=1.5', 'Max-Age=99999999999999999999']) {
      for (const path of ['/v1/health/service/ac-web?cached', '/v1/catalog/nodes']) {
        expectRefused(await c.get(path, { 'cache-control': value }), 'Invalid Cache-Control header.');
      }
    }
    for (const value of ['max-age=0', 'max-age=30, stale-if-error=-1', 'no-cache', 'must-revalidate', 'max-age = x']) {
      const r = await c.get('/v1/health/service/ac-web?cached', { 'cache-control': value });
      expect([value, r.status, r.headers.get('x-cache')]).toEqual([value, 200, 'HIT']);
    }
  });
});
