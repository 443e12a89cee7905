// Goal: the identities authentication proves stay apart and its refusals say how to authenticate, through
// started agents (seed and consul dialects, auth on). A token's subject can never be a signed caller's
// `app:<appKey>` (refused at verification and at minting), so a session a signed request created is not
// usable by a token; every seed 401 carries WWW-Authenticate, and the consul dialect's 403s never do;
// a signed request standing for another verb through X-HTTP-Method-Override may sign the request line's
// POST, as the conventions say, or the verb; x-api-version must be a calendar date.
import { writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, test } from 'vitest';
import { TokenAuthority, type Rule } from '../../src/auth/index.ts';
import { signRequest } from '../../src/auth/signature.ts';
import { call, expectError, startAgent, tempDataDir, type Agent } from '../support/agent.ts';

const secret = 'an-identities-secret-that-is-long-enough-42';
const appSecret = 'app-secret-identities';
const lockRules: Rule[] = [{ resource: 'session', prefix: '', access: 'write' }, { resource: 'key', prefix: 'locks/', access: 'write' }];
const appKeys = { app1: { secret: appSecret, rules: lockRules } };
const tokens = new TokenAuthority({ secret });
const bearer = (t: string) => ({ authorization: `Bearer ${t}` });

let configFile: string;
let seed: Agent;
let consul: Agent;

beforeAll(async () => {
  configFile = join(tempDataDir(), 'agent.json');
  writeFileSync(configFile, JSON.stringify({ auth: { jwt_secret: secret, app_keys: appKeys } }));
  [seed, consul] = await Promise.all([
    startAgent({ args: ['--config-file', configFile] }),
    startAgent({ args: ['--config-file', configFile, '--dialect', 'consul'] }),
  ]);
}, 60_000);
afterAll(async () => {
  for (const a of [seed, consul]) { await a?.stop(); a?.cleanup(); }
});

let n = 0;
/** The query string of a request signed by app1 over `method` (the stringA), `path` and `body`. */
const signed = (method: string, path: string, body = '', params: [string, string][] = [], appKey = 'app1') =>
  signRequest({ method, path, params, body: Buffer.from(body), appKey, secret: appSecret, nonce: `id-${++n}-${Date.now()}`, signMethod: 'HMACSHA256' });

describe('every 401 carries a challenge (seed); Consul\'s 403s carry none', () => {
  const realmOnly = 'Bearer realm="roster"';

  test('no credentials, a blank Authorization header, an unknown app key: 401 with WWW-Authenticate', async () => {
    for (const headers of [{}, { authorization: '' }, { authorization: ' ' }] as Record<string, string>[]) {
      const r = await call(seed.url, 'GET', '/v1/kv/locks/x', undefined, headers);
      expectError(r, 401, 1002);
      expect(r.headers.get('www-authenticate')).toBe(realmOnly);
    }
    const unknownKey = `/v1/kv/locks/x?${signed('GET', '/v1/kv/locks/x', '', [], 'nobody')}`;
    for (const headers of [{}, { authorization: 'Bearer junk' }] as Record<string, string>[]) {
      const r = await call(seed.url, 'GET', unknownKey, undefined, headers);
      expectError(r, 401, 1001);
      expect(r.headers.get('www-authenticate')).toBe(realmOnly);
    }
    const junk = await call(seed.url, 'GET', '/v1/kv/locks/x', undefined, { 'x-consul-token': 'junk' });
    expectError(junk, 401, 1021);
    expect(junk.headers.get('www-authenticate')).toMatch(/^Bearer realm="roster", error="invalid_token"/);
    // The stream's plain GET answers the upgrade's verdict, challenge included.
    const stream = await call(seed.url, 'GET', '/v1/stream');
    expectError(stream, 401, 1002);
    expect(stream.headers.get('www-authenticate')).toBe(realmOnly);
  });

  test('the consul dialect answers those 403 with no WWW-Authenticate, as Consul does', async () => {
    const refusals: [string, Record<string, string>, string][] = [
      ['/v1/kv/locks/x', {}, 'ACL not found'],
      ['/v1/kv/locks/x', { authorization: 'Bearer junk' }, 'ACL not found'],
      [`/v1/kv/locks/x?${signed('GET', '/v1/kv/locks/x', '', [], 'nobody')}`, { authorization: 'Bearer junk' }, 'Permission denied'],
    ];
    for (const [path, headers, text] of refusals) {
      const r = await call(consul.url, 'GET', path, undefined, headers);
      expect([r.status, r.text, r.headers.get('www-authenticate')]).toEqual([403, text, null]);
    }
  });
});

describe('a signed request with X-HTTP-Method-Override', () => {
  const override = (verb: string) => ({ 'x-http-method-override': verb });
  const read = async (key: string) => (await call(seed.url, 'GET', `/v1/kv/${key}?${signed('GET', `/v1/kv/${key}`, '', [['raw', 'true']])}`)).text;

  test('may sign the request line\'s POST, as the conventions\' stringA says, or the verb it stands for', async () => {
    const path = '/v1/kv/locks/override';
    const asPost = await call(seed.url, 'POST', `${path}?${signed('POST', path, 'by-post')}`, 'by-post', override('PUT'));
    expect([asPost.status, asPost.text]).toEqual([200, 'true']);
    expect(await read('locks/override')).toBe('by-post');
    const asPut = await call(seed.url, 'POST', `${path}?${signed('PUT', path, 'by-put')}`, 'by-put', override('put'));
    expect([asPut.status, asPut.text]).toEqual([200, 'true']);
    expect(await read('locks/override')).toBe('by-put');
    const deleted = await call(seed.url, 'POST', `${path}?${signed('POST', path)}`, undefined, override('DELETE'));
    expect([deleted.status, deleted.text]).toEqual([200, 'true']);
    expect((await call(seed.url, 'GET', `${path}?${signed('GET', path)}`)).status).toBe(404);
  });

  test('any other method in stringA is refused (400/1022) and changes nothing; without an override POST is no stand-in', async () => {
    const path = '/v1/kv/locks/override-bad';
    const asDelete = await call(seed.url, 'POST', `${path}?${signed('DELETE', path, 'x')}`, 'x', override('PUT'));
    expect(expectError(asDelete, 400, 1022).message).toMatch(/POST and PUT/);
    const plainPut = await call(seed.url, 'PUT', `${path}?${signed('POST', path, 'x')}`, 'x');
    expectError(plainPut, 400, 1022);
    expect((await call(seed.url, 'GET', `${path}?${signed('GET', path)}`)).status).toBe(404);
  });
});

describe('x-api-version is a calendar date', () => {
  test('a real date is echoed; digits that name no day are 400/1009 (seed) and ignored (consul)', async () => {
    const t = await tokens.mint({ subject: 'reader', rules: lockRules, ttlSeconds: 600 });
    for (const version of ['20240229', '19991231', '00010101']) {
      const r = await call(seed.url, 'GET', '/v1/session/list', undefined, { ...bearer(t), 'x-api-version': version });
      expect([r.status, r.headers.get('x-api-version')]).toEqual([200, version]);
    }
    for (const version of ['20241399', '99999999', '00000000', '20230229', '20240431', '20240100', '2024-01-01']) {
      const r = await call(seed.url, 'GET', '/v1/session/list', undefined, { ...bearer(t), 'x-api-version': version });
      expect(expectError(r, 400, 1009).details['x-api-version'], version).toEqual(['Format:must be a calendar date yyyyMMdd']);
      const c = await call(consul.url, 'GET', '/v1/session/list', undefined, { ...bearer(t), 'x-api-version': version });
      expect([c.status, c.headers.get('x-api-version')]).toEqual([200, null]);
    }
  });
});
