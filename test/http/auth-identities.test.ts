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

/** A token with `subject` made with the agent's secret, bypassing the minting checks (a foreign issuer could). */
async function rawToken(subject: string, rules: Rule[]): Promise<string> {
  const { SignJWT } = await import('jose');
  const now = Math.floor(Date.now() / 1000);
  return new SignJWT({ rules }).setProtectedHeader({ alg: 'HS256', typ: 'JWT' }).setIssuer('roster').setSubject(subject)
    .setIssuedAt(now).setExpirationTime(now + 600).sign(new TextEncoder().encode(secret));
}

async function signedSession(agent: Agent): Promise<string> {
  const body = '{"Name":"app1-session","TTL":"60s"}';
  const r = await call(agent.url, 'PUT', `/v1/session/create?${signed('PUT', '/v1/session/create', body)}`, body, { 'content-type': 'application/json' });
  expect(r.status, r.text).toBe(200);
  return r.json().ID;
}

describe('token subjects never name a signed caller', () => {
  test('a token whose subject is app:<appKey> is refused (401/1021): it cannot renew, lock with or destroy the app\'s session', async () => {
    const id = await signedSession(seed);
    const info = await call(seed.url, 'GET', `/v1/session/info/${id}?${signed('GET', `/v1/session/info/${id}`)}`);
    expect(info.json()[0].Owner).toBe('app:app1');
    const impostor = await rawToken('app:app1', lockRules);
    const attempts: [string, string, string | undefined][] = [
      ['PUT', `/v1/session/renew/${id}`, undefined], ['PUT', `/v1/kv/locks/a?acquire=${id}`, 'x'], ['PUT', `/v1/session/destroy/${id}`, undefined],
    ];
    for (const [method, path, body] of attempts) {
      const r = await call(seed.url, method, path, body, bearer(impostor));
      expect(expectError(r, 401, 1021).message).toMatch(/subject must not begin with app:/);
      expect(r.headers.get('www-authenticate')).toMatch(/^Bearer realm="roster", error="invalid_token", error_description="[^"\\]*app:/);
    }
    // Another token with the same rules is refused as before (403), and nothing changed: the app still owns,
    // renews and destroys its session, and the key was never locked.
    expectError(await call(seed.url, 'PUT', `/v1/session/renew/${id}`, undefined, bearer(await tokens.mint({ subject: 'bob', rules: lockRules, ttlSeconds: 600 }))), 403, 1004);
    const lock = await call(seed.url, 'GET', `/v1/kv/locks/a?${signed('GET', '/v1/kv/locks/a')}`);
    expect(lock.status).toBe(404);
    expect((await call(seed.url, 'PUT', `/v1/session/renew/${id}?${signed('PUT', `/v1/session/renew/${id}`)}`)).status).toBe(200);
    expect((await call(seed.url, 'PUT', `/v1/session/destroy/${id}?${signed('PUT', `/v1/session/destroy/${id}`)}`)).text).toBe('true');
  });

  test('the consul dialect refuses such a token as Consul refuses an unknown one: 403 ACL not found', async () => {
    const id = await signedSession(consul);
    const r = await call(consul.url, 'PUT', `/v1/session/renew/${id}`, undefined, bearer(await rawToken('app:app1', lockRules)));
    expect([r.status, r.text]).toEqual([403, 'ACL not found']);
  });

  test('a subject that only looks alike (APP:app1, xapp:app1) is an ordinary token subject, not the app', async () => {
    const id = await signedSession(seed);
    for (const subject of ['APP:app1', 'xapp:app1']) {
      expectError(await call(seed.url, 'PUT', `/v1/session/renew/${id}`, undefined, bearer(await rawToken(subject, lockRules))), 403, 1004);
    }
  });

  test('neither the token CLI nor TokenAuthority mints a token in the app: namespace', async () => {
    const { mintToken, TokenRequestError } = await import('../../src/cli/token.ts');
    const minted = mintToken({ subject: 'app:app1', rules: JSON.stringify(lockRules), configFile }, {});
    await expect(minted).rejects.toBeInstanceOf(TokenRequestError);
    await expect(minted).rejects.toThrow(/--subject must not begin with app:/);
    await expect(tokens.mint({ subject: 'app:app1', rules: lockRules, ttlSeconds: 60 })).rejects.toThrow(/must not begin with app:/);
    const ok = await mintToken({ subject: 'apps', rules: JSON.stringify(lockRules), configFile }, {});
    expect((await call(seed.url, 'GET', '/v1/kv/locks/none', undefined, bearer(ok))).status).toBe(404);
  });
});

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
