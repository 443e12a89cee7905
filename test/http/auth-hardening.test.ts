// Goal: authentication holds against a hostile or careless client, through started agents. A signed
// request is accepted only when its signature covers every parameter it carries and its timestamp is
// within the window (so a captured one is never accepted again); rate limits count the identity a
// request proved, or else its client address, never a string the client chose; bearer tokens are held to
// a lifetime limit, a clock leeway and the configured audience; a blank Authorization header hides nothing.
import { request } from 'node:http';
import { writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { SignJWT, type JWTPayload } from 'jose';
import { afterAll, beforeAll, describe, expect, test } from 'vitest';
import { TokenAuthority, type Rule } from '../../src/auth/index.ts';
import { canonicalString, signature, signRequest } from '../../src/auth/signature.ts';
import { call, expectError, sleep, startAgent, tempDataDir, type Agent, type HttpResult } from '../support/agent.ts';

const secret = 'a-test-secret-that-is-long-enough-0123456789';
const appSecret = 'app-secret-1';
const allKeys: Rule[] = [{ resource: 'key', prefix: '', access: 'write' }];
const rateLimit = 5;

/** Agent `open`: auth without an audience, a 1h lifetime limit, no rate limit. */
let open: Agent;
/** Agent `limited`: auth with audience `roster-test`, and `rateLimit` requests per 10 minutes per caller. */
let limited: Agent;

function configFile(config: object): string {
  const file = join(tempDataDir(), 'agent.json');
  writeFileSync(file, JSON.stringify(config));
  return file;
}

const appKeys = { app1: { secret: appSecret, rules: [{ resource: 'key', prefix: 'app/', access: 'write' }] } };

beforeAll(async () => {
  [open, limited] = await Promise.all([
    startAgent({ args: ['--config-file', configFile({ auth: { jwt_secret: secret, app_keys: appKeys, max_token_lifetime: '1h', clock_skew: '60s' } })] }),
    startAgent({ args: ['--config-file', configFile({
      auth: { jwt_secret: secret, app_keys: appKeys, audience: 'roster-test' },
      rate_limit: { requests: rateLimit, period: '600s' },
    })] }),
  ]);
}, 60_000);
afterAll(async () => {
  for (const agent of [open, limited]) {
    await agent?.stop();
    agent?.cleanup();
  }
});

const nowSeconds = () => Math.floor(Date.now() / 1000);
const bearer = (t: string) => ({ authorization: `Bearer ${t}` });

/** A token signed with the agent's secret carrying exactly `claims` (iss roster and rules added). */
function rawToken(claims: JWTPayload): Promise<string> {
  return new SignJWT({ iss: 'roster', rules: allKeys, ...claims }).setProtectedHeader({ alg: 'HS256', typ: 'JWT' }).sign(new TextEncoder().encode(secret));
}

/** One HTTP call from a chosen loopback source address, so tests of per-address limits do not share one. */
function callFrom(agent: Agent, localAddress: string, method: string, path: string, headers: Record<string, string> = {}): Promise<HttpResult> {
  const url = new URL(agent.url);
  return new Promise((resolve, reject) => {
    const req = request({ host: url.hostname, port: url.port, localAddress, method, path, headers }, (res) => {
      const chunks: Buffer[] = [];
      res.on('data', (c: Buffer) => chunks.push(c));
      res.on('end', () => {
        const body = Buffer.concat(chunks);
        const h = new Headers();
        for (const [k, v] of Object.entries(res.headers)) if (typeof v === 'string') h.set(k, v);
        const text = body.toString('utf8');
        resolve({ status: res.statusCode ?? 0, headers: h, text, body, json: () => JSON.parse(text) });
      });
    });
    req.on('error', reject);
    req.end();
  });
}

describe('signed requests: every parameter covered, bound to a timestamp', () => {
  let n = 0;
  const sign = (method: string, path: string, body: string, params: [string, string][] = [], timestampSeconds = nowSeconds()) =>
    signRequest({ method, path, params, body: Buffer.from(body), appKey: 'app1', secret: appSecret, nonce: `nonce-${++n}-${Date.now()}`, signMethod: 'HMACSHA256', timestampSeconds });
  const put = async (key: string) => {
    const path = `/v1/kv/${key}`;
    expect((await call(open.url, 'PUT', `${path}?${sign('PUT', path, 'v')}`, 'v')).text).toBe('true');
  };
  const exists = async (key: string) => (await call(open.url, 'GET', `/v1/kv/${key}?${sign('GET', `/v1/kv/${key}`, '')}`)).status === 200;

  test('an empty-valued flag appended to a signed DELETE is refused and deletes nothing', async () => {
    await put('app/x/1');
    await put('app/x/2');
    const path = '/v1/kv/app/x';
    for (const extra of ['&recurse=', '&recurse', '&keys=&recurse=']) {
      const r = await call(open.url, 'DELETE', `${path}?${sign('DELETE', path, '')}${extra}`);
      const body = expectError(r, 400, 1022);
      expect(body.message).toMatch(/empty value.*recurse/);
    }
    expect(await exists('app/x/1')).toBe(true);
    expect(await exists('app/x/2')).toBe(true);
  });

  test('an added parameter with a value breaks the signature; a signed flag works', async () => {
    await put('app/y/1');
    const path = '/v1/kv/app/y';
    expectError(await call(open.url, 'DELETE', `${path}?${sign('DELETE', path, '')}&recurse=true`), 400, 1022);
    expect(await exists('app/y/1')).toBe(true);
    expect((await call(open.url, 'DELETE', `${path}?${sign('DELETE', path, '', [['recurse', 'true']])}`)).text).toBe('true');
    expect(await exists('app/y/1')).toBe(false);
  });

  test('a signed list read answers the list: the signature parameters are no list filters', async () => {
    await put('app/list/1');
    await put('app/list/2');
    const path = '/v1/kv/app/list/';
    const keys = await call(open.url, 'GET', `${path}?${sign('GET', path, '', [['keys', 'true']])}`);
    expect([keys.status, keys.json()]).toEqual([200, ['app/list/1', 'app/list/2']]);
    const entries = await call(open.url, 'GET', `${path}?${sign('GET', path, '', [['recurse', 'true']])}`);
    expect(entries.status).toBe(200);
    expect(entries.json().map((e: { Key: string }) => e.Key)).toEqual(['app/list/1', 'app/list/2']);
  });

  test('a request stamped outside the window is refused (400 code 1023) whatever its nonce, and changes nothing', async () => {
    const path = '/v1/kv/app/stale';
    for (const timestamp of [nowSeconds() - 6 * 60, nowSeconds() - 3600, nowSeconds() + 6 * 60]) {
      const r = await call(open.url, 'PUT', `${path}?${sign('PUT', path, 'v', [], timestamp)}`, 'v');
      expect(expectError(r, 400, 1023).message).toMatch(/timestamp/);
    }
    expect(await exists('app/stale')).toBe(false);
  });

  test('a request stamped before the agent started is stale: a capture cannot be replayed after a restart', async () => {
    const agent = await startAgent({ args: ['--config-file', configFile({ auth: { jwt_secret: secret, app_keys: appKeys } })] });
    try {
      const path = '/v1/kv/app/replayed';
      const captured = `${path}?${sign('PUT', path, 'old')}`;
      expect((await call(agent.url, 'PUT', captured, 'old')).text).toBe('true');
      expectError(await call(agent.url, 'PUT', captured, 'old'), 400, 1023);
      const fresh = `${path}?${sign('PUT', path, 'new')}`;
      expect((await call(agent.url, 'PUT', fresh, 'new')).text).toBe('true');
      // A second later the agent restarts on the same data dir: the capture is older than its memory.
      await sleep(1100);
      await agent.stop();
      const again = await startAgent({ dataDir: agent.dataDir, args: ['--config-file', configFile({ auth: { jwt_secret: secret, app_keys: appKeys } })] });
      try {
        const r = await call(again.url, 'PUT', captured, 'old');
        expect(expectError(r, 400, 1023).message).toMatch(/older than the agent's memory of nonces/);
        const value = await call(again.url, 'GET', `${path}?${sign('GET', path, '', [['raw', 'true']])}`);
        expect(value.text).toBe('new');
        // A request stamped now is accepted as before.
        expect((await call(again.url, 'PUT', `${path}?${sign('PUT', path, 'newer')}`, 'newer')).text).toBe('true');
      } finally {
        await again.stop();
      }
    } finally {
      agent.cleanup();
    }
  }, 60_000);

  test('a request signed without a timestamp is refused (400 code 1008); a bad one is 400 code 1009', async () => {
    const path = '/v1/kv/app/untimed';
    const params: [string, string][] = [['appKey', 'app1'], ['nonce', `untimed-${Date.now()}`], ['signMethod', 'HMACSHA256']];
    const sig = signature('HMACSHA256', appSecret, canonicalString('PUT', path, params, Buffer.from('v')));
    const qs = new URLSearchParams([...params, ['sign', sig]]).toString();
    expect(expectError(await call(open.url, 'PUT', `${path}?${qs}`, 'v'), 400, 1008).message).toMatch(/timestamp/);
    const badTime = new URLSearchParams(sign('PUT', path, 'v'));
    badTime.set('timestamp', 'yesterday');
    expectError(await call(open.url, 'PUT', `${path}?${badTime}`, 'v'), 400, 1009);
    expect(await exists('app/untimed')).toBe(false);
  });

  test('within the window a replay is refused (400 code 1023)', async () => {
    const path = '/v1/kv/app/once';
    const qs = sign('PUT', path, 'v');
    expect((await call(open.url, 'PUT', `${path}?${qs}`, 'v')).text).toBe('true');
    expectError(await call(open.url, 'PUT', `${path}?${qs}`, 'v'), 400, 1023);
  });
});

describe('bearer tokens: lifetime limit, clock leeway, audience', () => {
  test('a token older than max_token_lifetime is refused as expired (1005) though its exp is later', async () => {
    const now = nowSeconds();
    const old = await rawToken({ sub: 'old', iat: now - 2 * 3600, exp: now + 3600 });
    expectError(await call(open.url, 'GET', '/v1/kv/any', undefined, bearer(old)), 401, 1005);
    const recent = await rawToken({ sub: 'recent', iat: now - 1800, exp: now + 30 * 24 * 3600 });
    expect((await call(open.url, 'GET', '/v1/kv/any', undefined, bearer(recent))).status).toBe(404);
  });

  test('iat or nbf in the future beyond the leeway → 1021; within the leeway → accepted', async () => {
    const now = nowSeconds();
    for (const claims of [{ iat: now + 600 }, { iat: now, nbf: now + 600 }]) {
      const t = await rawToken({ sub: 'future', exp: now + 3000, ...claims });
      expectError(await call(open.url, 'GET', '/v1/kv/any', undefined, bearer(t)), 401, 1021);
    }
    const skewed = await rawToken({ sub: 'skewed', iat: now + 30, nbf: now + 30, exp: now + 600 });
    expect((await call(open.url, 'GET', '/v1/kv/any', undefined, bearer(skewed))).status).toBe(404);
  });

  test('a token without exp or iat → 1021', async () => {
    const now = nowSeconds();
    expectError(await call(open.url, 'GET', '/v1/kv/any', undefined, bearer(await rawToken({ sub: 'x', iat: now }))), 401, 1021);
    expectError(await call(open.url, 'GET', '/v1/kv/any', undefined, bearer(await rawToken({ sub: 'x', exp: now + 60 }))), 401, 1021);
  });

  test('no audience configured: a token naming any audience is refused (1021)', async () => {
    const now = nowSeconds();
    for (const aud of ['roster', 'some-other-service', ['a', 'b']]) {
      const t = await rawToken({ sub: 'aud', iat: now, exp: now + 600, aud });
      expectError(await call(open.url, 'GET', '/v1/kv/any', undefined, bearer(t)), 401, 1021);
    }
  });

  test('audience configured: aud must name it (1021 otherwise, also without aud)', async () => {
    const now = nowSeconds();
    const from = '127.0.0.40';
    const ok = await rawToken({ sub: 'aud-ok', iat: now, exp: now + 600, aud: ['other', 'roster-test'] });
    expect((await callFrom(limited, from, 'GET', '/v1/kv/any', bearer(ok))).status).toBe(404);
    for (const [i, claims] of [{ aud: 'other' }, {}].entries()) {
      const t = await rawToken({ sub: `aud-bad-${i}`, iat: now, exp: now + 600, ...claims });
      expectError(await callFrom(limited, from, 'GET', '/v1/kv/any', bearer(t)), 401, 1021);
    }
  });

  test('the token CLI mints for the configured audience and refuses a ttl above the lifetime limit', async () => {
    const { mintToken, TokenRequestError } = await import('../../src/cli/token.ts');
    const file = configFile({ auth: { jwt_secret: secret, audience: 'roster-test', max_token_lifetime: '2h' } });
    const token = await mintToken({ subject: 'cli', rules: JSON.stringify(allKeys), ttl: '10m', configFile: file }, {});
    expect((await callFrom(limited, '127.0.0.41', 'GET', '/v1/kv/any', bearer(token))).status).toBe(404);
    await expect(mintToken({ subject: 'cli', ttl: '3h', configFile: file }, {})).rejects.toBeInstanceOf(TokenRequestError);
  });
});

describe('a blank Authorization header is no header', () => {
  test('an empty or blank Authorization does not hide a valid X-Consul-Token or ?token=', async () => {
    const t = await new TokenAuthority({ secret }).mint({ subject: 'xct', rules: allKeys, ttlSeconds: 600 });
    for (const authorization of ['', ' ', '\t']) {
      const r = await call(open.url, 'PUT', '/v1/kv/blank-auth', 'v', { authorization, 'x-consul-token': t });
      expect([r.status, r.text]).toEqual([200, 'true']);
      const q = await call(open.url, 'GET', `/v1/kv/blank-auth?raw&token=${t}`, undefined, { authorization });
      expect([q.status, q.text]).toEqual([200, 'v']);
    }
    const none = await call(open.url, 'GET', '/v1/kv/blank-auth', undefined, { authorization: '' });
    expectError(none, 401, 1002);
    expect(none.headers.get('www-authenticate')).toBe('Bearer realm="roster"');
  });
});

describe('rate limits count verified identities and client addresses', () => {
  const limitedAfter = async (send: (i: number) => Promise<HttpResult>, expectedBefore: number) => {
    for (let i = 0; i < rateLimit; i++) expect((await send(i)).status).toBe(expectedBefore);
    const over = await send(rateLimit);
    expectError(over, 429, 1022);
    expect(Number(over.headers.get('retry-after'))).toBeGreaterThan(0);
    return over;
  };

  test('a fresh garbage token per request is limited by the client address', async () => {
    await limitedAfter((i) => callFrom(limited, '127.0.0.10', 'GET', '/v1/kv/any', bearer(`garbage-${i}-${Math.random()}`)), 401);
  });

  test('a fresh unknown appKey per request is limited by the client address', async () => {
    await limitedAfter((i) => callFrom(limited, '127.0.0.11', 'GET',
      `/v1/kv/app/a?${signRequest({ method: 'GET', path: '/v1/kv/app/a', params: [], body: Buffer.alloc(0), appKey: `who-${i}`, secret: 'x', nonce: `n${i}`, signMethod: 'MD5' })}`), 401);
  });

  test('a fresh validly signed token per request is limited by its subject', async () => {
    const authority = new TokenAuthority({ secret, audiences: ['roster-test'] });
    const mint = (i: number) => authority.mint({ subject: 'rotating', rules: allKeys, ttlSeconds: 600 + i });
    await limitedAfter(async (i) => callFrom(limited, `127.0.0.${20 + i}`, 'GET', '/v1/kv/any', bearer(await mint(i))), 404);
  });

  test('one token in every spelling and header, from several addresses, shares one limit', async () => {
    const t = await new TokenAuthority({ secret, audiences: ['roster-test'] }).mint({ subject: 'spelled', rules: allKeys, ttlSeconds: 600 });
    const spellings: Record<string, string>[] = [
      { authorization: `Bearer ${t}` }, { authorization: `Bearer   ${t}` }, { authorization: `bearer ${t}  ` },
      { 'x-consul-token': t }, { authorization: '', 'x-consul-token': t }, { authorization: `Bearer ${t}` },
    ];
    const over = await limitedAfter((i) => callFrom(limited, `127.0.0.${30 + i}`, 'GET', '/v1/kv/any', spellings[i]!), 404);
    expect(over.headers.get('x-rate-limit-remaining')).toBe('0');
  });

  test('refusals of what a verified token may do count against the token, not its address', async () => {
    const from = '127.0.0.13';
    const authority = new TokenAuthority({ secret, audiences: ['roster-test'] });
    const t = await authority.mint({ subject: 'refused', rules: allKeys, ttlSeconds: 600 });
    // Session write is not among its rules: each create is 403, counted against the token.
    await limitedAfter(() => callFrom(limited, from, 'PUT', '/v1/session/create', bearer(t)), 403);
    // The address has all its requests left for another caller.
    const other = await authority.mint({ subject: 'bystander', rules: allKeys, ttlSeconds: 600 });
    expect((await callFrom(limited, from, 'GET', '/v1/kv/any', bearer(other))).status).toBe(404);
    expectError(await callFrom(limited, from, 'GET', '/v1/kv/any', bearer(`junk-${Math.random()}`)), 401, 1021);
  });

  test('garbage from an address does not use up a verified caller on it, nor the other way round', async () => {
    const from = '127.0.0.12';
    await limitedAfter((i) => callFrom(limited, from, 'GET', '/v1/kv/any', bearer(`junk-${i}`)), 401);
    const t = await new TokenAuthority({ secret, audiences: ['roster-test'] }).mint({ subject: 'neighbour', rules: allKeys, ttlSeconds: 600 });
    const ok = await callFrom(limited, from, 'GET', '/v1/kv/any', bearer(t));
    expect(ok.status).toBe(404);
    expect(ok.headers.get('x-rate-limit-remaining')).toBe(String(rateLimit - 1));
    // No credentials at all: the address, already used up.
    expectError(await callFrom(limited, from, 'GET', '/v1/kv/any'), 429, 1022);
  });
});

describe('auth settings are checked at start', () => {
  test.each([
    [{ max_token_lifetme: '1h' }, /unknown setting "auth\.max_token_lifetme"/],
    [{ max_token_lifetime: 'forever' }, /auth\.max_token_lifetime/],
    [{ clock_skew: '-5s' }, /auth\.clock_skew/],
    [{ audience: ['', 'x'] }, /auth\.audience/],
    [{ signature_window: '0s' }, /auth\.signature_window/],
  ])('%j stops the start with exit 2 and the reason', async (settings, reason) => {
    const started = startAgent({ args: ['--config-file', configFile({ auth: { jwt_secret: secret, ...settings } })] });
    await expect(started).rejects.toThrow(/exited \(2\)/);
    await expect(started).rejects.toThrow(reason);
  });
});
