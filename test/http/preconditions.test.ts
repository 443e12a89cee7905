// Goal: write preconditions through a started agent (RFC 9110 §13.1.1, §13.1.2; http-conventions "Server
// constraints" and the 412 row): If-Match / If-None-Match on a KV key's PUT and DELETE are judged on the key
// as it is and applied atomically with the write (concurrent writers under one tag: exactly one wins), with
// `?cas=` both must hold; other writes have no representation for If-Match to name (412); the consul dialect
// ignores them as Consul does.
import { describe, expect, test } from 'vitest';
import { call, client, expectError, startAgent, withAgent, type Agent } from '../support/agent.ts';

let agent: Agent;
withAgent((a) => { agent = a; });

const c = () => client(agent);
const put = (key: string, body: string, headers: Record<string, string>, query = '') => call(agent.url, 'PUT', `/v1/kv/${key}${query}`, body, headers);
const del = (key: string, headers: Record<string, string>, query = '') => call(agent.url, 'DELETE', `/v1/kv/${key}${query}`, undefined, headers);
const raw = async (key: string) => { const r = await c().get(`/v1/kv/${key}?raw`); return r.status === 200 ? r.text : undefined; };
const tagOf = async (path: string) => (await c().get(path)).headers.get('etag')!;

describe('KV PUT and DELETE under If-Match / If-None-Match (seed dialect)', () => {
  test('If-None-Match: * creates only: an existing key answers 412 (code 1025) and keeps its value', async () => {
    expect((await put('pre/create', 'first', { 'if-none-match': '*' })).text).toBe('true');
    const refused = expectError(await put('pre/create', 'second', { 'if-none-match': '*' }), 412, 1025);
    expect(refused.details).toEqual({ header: 'If-None-Match', reason: 'exists' });
    expect(await raw('pre/create')).toBe('first');
  });

  test('If-Match applies a PUT only when it names the current JSON or raw ETag; a stale, unknown or weak tag is 412', async () => {
    await c().put('/v1/kv/pre/match', 'v1');
    const jsonTag = await tagOf('/v1/kv/pre/match');
    const rawTag = await tagOf('/v1/kv/pre/match?raw');
    expectError(await put('pre/match', 'x', { 'if-match': '"not-the-etag"' }), 412, 1025);
    expectError(await put('pre/match', 'x', { 'if-match': `W/${jsonTag}` }), 412, 1025);
    expect(await raw('pre/match')).toBe('v1');
    expect((await put('pre/match', 'v2', { 'if-match': `"other", ${jsonTag}` })).text).toBe('true');
    expect(await raw('pre/match')).toBe('v2');
    // Both tags named v1: neither names v2.
    expectError(await put('pre/match', 'x', { 'if-match': jsonTag }), 412, 1025);
    expectError(await put('pre/match', 'x', { 'if-match': rawTag }), 412, 1025);
    expect((await put('pre/match', 'v3', { 'if-match': await tagOf('/v1/kv/pre/match?raw') })).text).toBe('true');
    expect((await put('pre/match', 'v4', { 'if-match': '*' })).text).toBe('true');
    expect(await raw('pre/match')).toBe('v4');
    // If-Match: * needs a current representation: it does not create.
    const missing = expectError(await put('pre/match-missing', 'x', { 'if-match': '*' }), 412, 1025);
    expect(missing.details.reason).toBe('no-representation');
    expect(await raw('pre/match-missing')).toBeUndefined();
    // If-None-Match with a tag: refused while it names the current value, applied once it does not.
    const now = await tagOf('/v1/kv/pre/match');
    expectError(await put('pre/match', 'x', { 'if-none-match': now }), 412, 1025);
    expect((await put('pre/match', 'v5', { 'if-none-match': '"something-else"' })).text).toBe('true');
  });

  test('DELETE: a non-matching If-Match is 412 and deletes nothing; the current tag deletes; If-None-Match: * on a key is 412', async () => {
    await c().put('/v1/kv/pre/del', 'keep');
    expectError(await del('pre/del', { 'if-match': '"not-the-etag"' }), 412, 1025);
    expectError(await del('pre/del', { 'if-none-match': '*' }), 412, 1025);
    expect(await raw('pre/del')).toBe('keep');
    expect((await del('pre/del', { 'if-match': await tagOf('/v1/kv/pre/del') })).text).toBe('true');
    expect(await raw('pre/del')).toBeUndefined();
    expectError(await del('pre/del', { 'if-match': '*' }), 412, 1025);
    expect((await del('pre/del', { 'if-none-match': '*' })).text).toBe('true');
  });

  test('with ?cas= both must hold: the headers are judged first (412), then cas must name the same version (409)', async () => {
    await c().put('/v1/kv/pre/cas', 'a');
    const entry = (await c().get('/v1/kv/pre/cas')).json()[0];
    const tag = await tagOf('/v1/kv/pre/cas');
    expectError(await put('pre/cas', 'x', { 'if-match': tag }, `?cas=${entry.ModifyIndex - 1}`), 409, 1025);
    expectError(await put('pre/cas', 'x', { 'if-match': '"stale"' }, `?cas=${entry.ModifyIndex}`), 412, 1025);
    expectError(await put('pre/cas', 'x', { 'if-none-match': '*' }, '?cas=0'), 412, 1025);
    expectError(await del('pre/cas', { 'if-match': tag }, `?cas=${entry.ModifyIndex + 1}`), 409, 1025);
    expect(await raw('pre/cas')).toBe('a');
    expect((await put('pre/cas', 'b', { 'if-match': tag }, `?cas=${entry.ModifyIndex}`)).text).toBe('true');
    expect((await put('pre/cas-new', 'n', { 'if-none-match': '*' }, '?cas=0')).text).toBe('true');
    expect(await raw('pre/cas')).toBe('b');
  });

  test('a lock step or a recursive delete with preconditions is refused (400, 1009), changing nothing', async () => {
    const s = await c().session();
    await c().put('/v1/kv/pre/lock', 'l');
    expectError(await put('pre/lock', 'x', { 'if-match': '*' }, `?acquire=${s}`), 400, 1009);
    expectError(await del('pre/lock', { 'if-match': '*' }, '?recurse'), 400, 1009);
    const entry = (await c().get('/v1/kv/pre/lock')).json()[0];
    expect(entry.Session).toBeUndefined();
    expect(await raw('pre/lock')).toBe('l');
  });

  test('concurrent writers under one If-Match tag: exactly one applies, every other is 412, the value is the winner\'s', async () => {
    for (const round of [0, 1, 2]) {
      const key = `pre/race-${round}`;
      await c().put(`/v1/kv/${key}`, 'start');
      const tag = await tagOf(`/v1/kv/${key}`);
      const writers = Array.from({ length: 24 }, (_, i) => (i % 4 === 3
        ? del(key, { 'if-match': tag })
        : put(key, `writer-${i}`, { 'if-match': tag })));
      const answers = await Promise.all(writers);
      const won = answers.flatMap((r, i) => (r.status === 200 ? [i] : []));
      expect(won, `round ${round}`).toHaveLength(1);
      for (const r of answers) if (r.status !== 200) expectError(r, 412, 1025);
      expect(await raw(key)).toBe(won[0]! % 4 === 3 ? undefined : `writer-${won[0]}`);
    }
  });

  test('concurrent creators under If-None-Match: *: exactly one creates', async () => {
    const answers = await Promise.all(Array.from({ length: 24 }, (_, i) => put('pre/race-create', `creator-${i}`, { 'if-none-match': '*' })));
    const won = answers.flatMap((r, i) => (r.status === 200 ? [i] : []));
    expect(won).toHaveLength(1);
    expect(await raw('pre/race-create')).toBe(`creator-${won[0]}`);
  });

  test('writes with no representation at their URL: If-Match is 412 before anything is done, If-None-Match does not stop them', async () => {
    const before = (await c().get('/v1/session/list')).json().length;
    expectError(await call(agent.url, 'PUT', '/v1/session/create', {}, { 'if-match': '*' }), 412, 1025);
    expect((await c().get('/v1/session/list')).json()).toHaveLength(before);
    expect((await call(agent.url, 'PUT', '/v1/session/create', {}, { 'if-none-match': '*' })).status).toBe(200);
    expect((await c().get('/v1/session/list')).json()).toHaveLength(before + 1);
  });
});

describe('consul dialect', () => {
  test('If-Match and If-None-Match are ignored on writes, as Consul ignores them', async () => {
    const consul = await startAgent({ args: ['--dialect', 'consul'] });
    try {
      const kv = (method: string, key: string, body: string | undefined, headers: Record<string, string>) => call(consul.url, method, `/v1/kv/${key}`, body, headers);
      await kv('PUT', 'pre/consul', 'one', {});
      const overwritten = await kv('PUT', 'pre/consul', 'two', { 'if-none-match': '*' });
      expect([overwritten.status, overwritten.text]).toEqual([200, 'true']);
      expect((await kv('PUT', 'pre/consul', 'three', { 'if-match': '"not-the-etag"' })).text).toBe('true');
      expect((await kv('GET', 'pre/consul?raw', undefined, {})).text).toBe('three');
      expect((await kv('DELETE', 'pre/consul', undefined, { 'if-match': '"not-the-etag"' })).text).toBe('true');
      expect((await kv('GET', 'pre/consul?raw', undefined, {})).status).toBe(404);
      expect((await call(consul.url, 'PUT', '/v1/session/create', {}, { 'if-match': '*' })).status).toBe(200);
    } finally {
      await consul.stop();
      consul.cleanup();
    }
  });
});
