// Goal: the house HTTP conventions served so far, through a started agent — ETag and 304, HEAD,
// X-HTTP-Method-Override, x-api-version echoed (and refused when malformed), unknown major versions,
// a trailing slash naming the same resource, OPTIONS listing the methods.
import { request } from 'undici';
import { describe, expect, test } from 'vitest';
import { call, client, expectError, sleep, startAgent, withAgent, type Agent } from '../support/in-process.ts';

let agent: Agent;
withAgent((a) => { agent = a; });

describe('caching', () => {
  test('GET answers carry an ETag; If-None-Match with it answers 304 without a body; a change gives a new tag', async () => {
    const c = client(agent);
    await c.put('/v1/kv/etag/a', 'one');
    const first = await c.get('/v1/kv/etag/a');
    const tag = first.headers.get('etag');
    expect(tag).toMatch(/^"[A-Za-z0-9_-]+"$/);
    const again = await c.get('/v1/kv/etag/a', { 'if-none-match': tag! });
    expect(again.status).toBe(304);
    expect(again.text).toBe('');
    expect(again.headers.get('etag')).toBe(tag);
    expect((await c.get('/v1/kv/etag/a', { 'if-none-match': '"other", ' + tag })).status).toBe(304);
    expect((await c.get('/v1/kv/etag/a', { 'if-none-match': '"other"' })).status).toBe(200);
    await c.put('/v1/kv/etag/a', 'two');
    const changed = await c.get('/v1/kv/etag/a', { 'if-none-match': tag! });
    expect(changed.status).toBe(200);
    expect(changed.headers.get('etag')).not.toBe(tag);
  });

  test('Last-Modified with If-Modified-Since in all three HTTP date formats', async () => {
    const c = client(agent);
    await c.put('/v1/kv/lm/a', 'x');
    const first = await c.get('/v1/kv/lm/a');
    const last = first.headers.get('last-modified')!;
    expect(new Date(last).toUTCString()).toBe(last);
    // If-Modified-Since is compared with the write's own time (ms): a date from the next second is after it.
    await sleep(1000 - (Date.now() % 1000) + 10);
    const t = new Date(Date.now() - (Date.now() % 1000));
    const since = t.toUTCString();
    const day = ['Sunday', 'Monday', 'Tuesday', 'Wednesday', 'Thursday', 'Friday', 'Saturday'][t.getUTCDay()]!;
    const mon = t.toUTCString().slice(8, 11);
    const hms = t.toISOString().slice(11, 19);
    const dd = String(t.getUTCDate()).padStart(2, '0');
    const rfc850 = `${day}, ${dd}-${mon}-${String(t.getUTCFullYear()).slice(2)} ${hms} GMT`;
    const asctime = `${day.slice(0, 3)} ${mon} ${String(t.getUTCDate()).padStart(2, ' ')} ${hms} ${t.getUTCFullYear()}`;
    for (const date of [since, rfc850, asctime]) expect((await c.get('/v1/kv/lm/a', { 'if-modified-since': date })).status, date).toBe(304);
    const earlier = new Date(t.getTime() - 60_000).toUTCString();
    expect((await c.get('/v1/kv/lm/a', { 'if-modified-since': earlier })).status).toBe(200);
    expect((await c.get('/v1/kv/lm/a', { 'if-modified-since': 'yesterday' })).status).toBe(200);
  });

  test('a key read again answers the same body and tag; every change of the entry, lock steps included, a new one', async () => {
    const c = client(agent);
    const s = await c.session();
    const seen = new Map<string, string>();
    const read = async (step: string): Promise<{ text: string; tag: string }> => {
      const r = await c.get('/v1/kv/etag/steps');
      const again = await c.get('/v1/kv/etag/steps');
      expect(again.text, step).toBe(r.text);
      expect(again.headers.get('etag'), step).toBe(r.headers.get('etag'));
      const tag = r.headers.get('etag')!;
      // A tag names one body: never two different bodies under one tag, never one body with two tags.
      for (const [text, known] of seen) expect(known === tag, step).toBe(text === r.text);
      seen.set(r.text, tag);
      return { text: r.text, tag };
    };
    await c.put('/v1/kv/etag/steps', 'same');
    let before = await read('written');
    for (const [step, path] of [
      ['acquired with the same value', `/v1/kv/etag/steps?acquire=${s}`],
      ['released with the same value', `/v1/kv/etag/steps?release=${s}`],
      ['written again with other flags', '/v1/kv/etag/steps?flags=7'],
    ] as const) {
      expect((await c.put(path, 'same')).text, step).toBe('true');
      const after = await read(step);
      expect(after.text, step).not.toBe(before.text);
      const stale = await c.get('/v1/kv/etag/steps', { 'if-none-match': before.tag });
      expect(stale.status, step).toBe(200);
      expect(stale.text, step).toBe(after.text);
      before = after;
    }
    await c.del('/v1/kv/etag/steps');
    await c.put('/v1/kv/etag/steps', 'same');
    expect((await read('deleted and written again')).text).not.toBe(before.text);
  });

  test('API answers say Cache-Control: no-cache, so no cache serves them by heuristic freshness; the dashboard\'s files keep their own', async () => {
    const c = client(agent);
    await c.put('/v1/kv/cc/a', 'x');
    for (const path of ['/v1/kv/cc/a', '/v1/kv/cc/a?raw', '/v1/kv/cc?recurse', '/v1/catalog/nodes', '/v1/health/state/any', '/v1/agent/self', '/v1/status/leader']) {
      const r = await c.get(path);
      expect([r.status, r.headers.get('cache-control')], path).toEqual([200, 'no-cache']);
    }
    const tag = (await c.get('/v1/catalog/nodes')).headers.get('etag')!;
    const revalidated = await c.get('/v1/catalog/nodes', { 'if-none-match': tag });
    expect([revalidated.status, revalidated.headers.get('cache-control')]).toEqual([304, 'no-cache']);
    // The page sets its own (revalidated too): said once, not twice.
    const page = await c.get('/ui/');
    if (page.status === 200) expect(page.headers.get('cache-control')).toBe('no-cache');
  });

  test('errors and writes carry no ETag', async () => {
    const c = client(agent);
    expect((await c.get('/v1/kv/etag/missing')).headers.get('etag')).toBeNull();
    expect((await c.put('/v1/kv/etag/w', 'x')).headers.get('etag')).toBeNull();
  });
});

describe('methods', () => {
  test('HEAD answers the GET headers with no body', async () => {
    const c = client(agent);
    await c.put('/v1/kv/head/a', 'hello');
    const get = await c.get('/v1/kv/head/a');
    const head = await request(`${agent.url}/v1/kv/head/a`, { method: 'HEAD' });
    expect(head.statusCode).toBe(200);
    expect(head.headers['content-length']).toBe(String(get.body.length));
    expect(head.headers['x-consul-index']).toBe(get.headers.get('x-consul-index'));
    expect(head.headers.etag).toBe(get.headers.get('etag'));
    expect((await head.body.arrayBuffer()).byteLength).toBe(0);
  });

  test('POST with X-HTTP-Method-Override stands for PUT and DELETE', async () => {
    const put = await call(agent.url, 'POST', '/v1/kv/override/a', 'via-post', { 'x-http-method-override': 'PUT' });
    expect([put.status, put.text]).toEqual([200, 'true']);
    const got = await client(agent).get('/v1/kv/override/a?raw');
    expect(got.text).toBe('via-post');
    const del = await call(agent.url, 'POST', '/v1/kv/override/a', undefined, { 'x-http-method-override': 'delete' });
    expect(del.status).toBe(200);
    expect((await client(agent).get('/v1/kv/override/a')).status).toBe(404);
  });

  test('a plain POST is still 405 with Allow; OPTIONS lists the methods', async () => {
    const post = await call(agent.url, 'POST', '/v1/kv/override/b', 'x');
    expectError(post, 405, 1022);
    expect(post.headers.get('allow')).toBe('OPTIONS,GET,PUT,DELETE');
    const options = await call(agent.url, 'OPTIONS', '/v1/session/list');
    expect(options.status).toBe(200);
    expect(options.headers.get('allow')).toBe('OPTIONS,GET');
  });
});

describe('versions and paths', () => {
  test('x-api-version is accepted and echoed; a malformed one is refused', async () => {
    const ok = await client(agent).get('/v1/session/list', { 'x-api-version': '20261122' });
    expect(ok.status).toBe(200);
    expect(ok.headers.get('x-api-version')).toBe('20261122');
    const bad = await client(agent).get('/v1/session/list', { 'x-api-version': 'v2' });
    expect(expectError(bad, 400, 1009).details['x-api-version']).toBeDefined();
  });

  test('an unknown major version is 404', async () => {
    expectError(await client(agent).get('/v2/session/list'), 404, 1006);
  });

  test('a trailing / names the same resource (outside KV keys, where / is data)', async () => {
    const c = client(agent);
    const plain = await c.get('/v1/session/list');
    const slash = await c.get('/v1/session/list/');
    expect(slash.status).toBe(200);
    expect(slash.json()).toEqual(plain.json());
    await c.put('/v1/kv/slash/k', 'no-slash');
    expect((await c.get('/v1/kv/slash/k/')).status).toBe(404);
  });
});

describe('TLS', () => {
  test('with --tls-cert and --tls-key the API is served over HTTPS', async () => {
    const { readFileSync } = await import('node:fs');
    const { join } = await import('node:path');
    const { Agent: Dispatcher } = await import('undici');
    const fixtures = join(import.meta.dirname, '../probes/fixtures');
    const secure = await startAgent({ args: ['--tls-cert', join(fixtures, 'localhost-cert.pem'), '--tls-key', join(fixtures, 'localhost-key.pem')] });
    try {
      expect(secure.url).toMatch(/^https:\/\//);
      const dispatcher = new Dispatcher({ connect: { ca: readFileSync(join(fixtures, 'localhost-cert.pem')), servername: 'localhost' } });
      const r = await request(`${secure.url}/v1/status/leader`, { dispatcher });
      expect(r.statusCode).toBe(200);
      expect(typeof (await r.body.json())).toBe('string');
      await dispatcher.close();
    } finally {
      await secure.stop();
      secure.cleanup();
    }
  });
});
