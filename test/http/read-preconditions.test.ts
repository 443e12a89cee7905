// Goal: preconditions of reads through a started agent (RFC 9110 §13.1.1, §13.1.4, §13.2.2): on GET and HEAD
// an If-Match naming none of the answer's tags (strong comparison), or without If-Match an If-Unmodified-Since
// before the last change, answers 412 code 1025 in the seed dialect; they are judged before If-None-Match and
// If-Modified-Since, and only on what would have been a 200; the consul dialect ignores them, as Consul does.
import { describe, expect, test } from 'vitest';
import { call, expectError, startAgent, withAgent, type Agent } from '../support/agent.ts';

let agent: Agent;
withAgent((a) => { agent = a; });

const get = (path: string, headers: Record<string, string> = {}, method = 'GET') => call(agent.url, method, path, undefined, headers);
const longAgo = new Date(0).toUTCString();
const nextHour = () => new Date(Date.now() + 3_600_000).toUTCString();

describe('If-Match on reads (seed dialect)', () => {
  test('the current tag, a list holding it or * answer 200; a stale, unknown or weak tag is 412 with no body on HEAD', async () => {
    await call(agent.url, 'PUT', '/v1/kv/readpre/m', 'v1');
    const stale = (await get('/v1/kv/readpre/m?raw')).headers.get('etag')!;
    await call(agent.url, 'PUT', '/v1/kv/readpre/m', 'v2');
    const current = (await get('/v1/kv/readpre/m?raw')).headers.get('etag')!;
    for (const ifMatch of [current, `"other", ${current}`, '*']) {
      const r = await get('/v1/kv/readpre/m?raw', { 'if-match': ifMatch });
      expect([r.status, r.text], ifMatch).toEqual([200, 'v2']);
    }
    for (const ifMatch of [stale, '"unknown"', `W/${current}`]) {
      const refused = expectError(await get('/v1/kv/readpre/m?raw', { 'if-match': ifMatch }), 412, 1025);
      expect(refused.details, ifMatch).toEqual({ header: 'If-Match', reason: 'not-matched' });
    }
    const head = await get('/v1/kv/readpre/m?raw', { 'if-match': stale }, 'HEAD');
    expect([head.status, head.text]).toEqual([412, '']);
    // A list is judged on its own tag.
    const nodes = await get('/v1/catalog/nodes');
    expect((await get('/v1/catalog/nodes', { 'if-match': nodes.headers.get('etag')! })).status).toBe(200);
    expectError(await get('/v1/catalog/nodes', { 'if-match': stale }), 412, 1025);
  });

  test('judged before If-None-Match, and If-Unmodified-Since is not judged beside it', async () => {
    await call(agent.url, 'PUT', '/v1/kv/readpre/order', 'x');
    const tag = (await get('/v1/kv/readpre/order')).headers.get('etag')!;
    expect((await get('/v1/kv/readpre/order', { 'if-match': tag, 'if-none-match': tag })).status).toBe(304);
    expectError(await get('/v1/kv/readpre/order', { 'if-match': '"stale"', 'if-none-match': tag }), 412, 1025);
    expect((await get('/v1/kv/readpre/order', { 'if-match': tag, 'if-unmodified-since': longAgo })).status).toBe(200);
  });

  test('an answer that is not a 200 is kept: a missing key under If-Match: * is 404', async () => {
    expectError(await get('/v1/kv/readpre/missing', { 'if-match': '*' }), 404, 1006);
  });
});

describe('If-Unmodified-Since on reads (seed dialect)', () => {
  test('a date before the last change is 412; one after it, or a date that does not parse, answers 200', async () => {
    await call(agent.url, 'PUT', '/v1/kv/readpre/ius', 'v');
    const refused = expectError(await get('/v1/kv/readpre/ius', { 'if-unmodified-since': longAgo }), 412, 1025);
    expect(refused.details).toEqual({ header: 'If-Unmodified-Since', reason: 'modified' });
    expect((await get('/v1/kv/readpre/ius', { 'if-unmodified-since': longAgo }, 'HEAD')).status).toBe(412);
    const r = await get('/v1/kv/readpre/ius?raw', { 'if-unmodified-since': nextHour() });
    expect([r.status, r.text]).toEqual([200, 'v']);
    expect((await get('/v1/kv/readpre/ius?raw', { 'if-unmodified-since': 'yesterday' })).status).toBe(200);
  });

  test('the Last-Modified an answer gave, sent back, holds; a date one second before it is 412', async () => {
    await call(agent.url, 'PUT', '/v1/kv/readpre/ius-echo', 'v');
    // Past the first 1.5 s after a change, when Last-Modified may name an earlier second than the change.
    await new Promise((r) => setTimeout(r, 1600));
    const lastModified = (await get('/v1/kv/readpre/ius-echo')).headers.get('last-modified')!;
    expect((await get('/v1/kv/readpre/ius-echo', { 'if-unmodified-since': lastModified })).status).toBe(200);
    const before = new Date(Date.parse(lastModified) - 1000).toUTCString();
    expectError(await get('/v1/kv/readpre/ius-echo', { 'if-unmodified-since': before }), 412, 1025);
  });

  test('judged before If-None-Match: a failed date is 412 even when the tag matches; a held one leaves the 304', async () => {
    await call(agent.url, 'PUT', '/v1/kv/readpre/ius-order', 'v');
    const tag = (await get('/v1/kv/readpre/ius-order')).headers.get('etag')!;
    expectError(await get('/v1/kv/readpre/ius-order', { 'if-unmodified-since': longAgo, 'if-none-match': tag }), 412, 1025);
    expect((await get('/v1/kv/readpre/ius-order', { 'if-unmodified-since': nextHour(), 'if-none-match': tag })).status).toBe(304);
  });
});

describe('consul dialect', () => {
  test('If-Match and If-Unmodified-Since are ignored on reads, as Consul ignores them', async () => {
    const consul = await startAgent({ args: ['--dialect', 'consul'] });
    try {
      await call(consul.url, 'PUT', '/v1/kv/readpre/consul', 'c');
      const cases: Record<string, string>[] = [{ 'if-match': '"not-the-etag"' }, { 'if-unmodified-since': longAgo }];
      for (const headers of cases) {
        const r = await call(consul.url, 'GET', '/v1/kv/readpre/consul?raw', undefined, headers);
        expect([r.status, r.text]).toEqual([200, 'c']);
        expect(r.headers.get('etag')).toMatch(/^"/);
      }
    } finally {
      await consul.stop();
      consul.cleanup();
    }
  });
});
