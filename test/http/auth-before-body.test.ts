// Goal: with authentication on, a request is judged on its credentials before its body is read, through a
// started agent: one without credentials, or with a bearer token that fails, that declares a body gets its
// 401 (with WWW-Authenticate) at once and its connection closed, though the body never comes (the agent
// waits 30 s for a body here); a signed request, whose signature covers its body, is still judged with it;
// a valid token's write, and what the route table answers before authentication (404), are as they were.
import net from 'node:net';
import { writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, test } from 'vitest';
import { TokenAuthority } from '../../src/auth/index.ts';
import { signRequest } from '../../src/auth/signature.ts';
import { call, startAgent, tempDataDir, type Agent } from '../support/agent.ts';

const secret = 'an-auth-before-body-secret-long-enough-42';
const appSecret = 'app-secret-before-body';
const tokens = new TokenAuthority({ secret });

let seed: Agent;
let consul: Agent;

beforeAll(async () => {
  const file = join(tempDataDir(), 'agent.json');
  writeFileSync(file, JSON.stringify({
    auth: { jwt_secret: secret, app_keys: { app1: { secret: appSecret, rules: [{ resource: 'key', prefix: 'app/', access: 'write' }] } } },
    limits: { request_body_timeout: '30s' },
  }));
  [seed, consul] = await Promise.all([startAgent({ args: ['--config-file', file] }), startAgent({ args: ['--config-file', file, '--dialect', 'consul'] })]);
});
afterAll(async () => {
  for (const a of [seed, consul]) { await a?.stop(); a?.cleanup(); }
});

interface Answer { status: number; head: string; body: string; ms: number; closed: boolean }

/** Sends `text` on a new connection and reads one answer (its head and Content-Length body), within `ms`. */
function exchange(agent: Agent, text: string, ms = 5_000): Promise<Answer | undefined> {
  return new Promise((resolve) => {
    const started = Date.now();
    const s = net.connect(Number(new URL(agent.url).port), '127.0.0.1', () => s.write(text));
    let got = Buffer.alloc(0);
    let answer: Answer | undefined;
    const done = () => { clearTimeout(timer); s.destroy(); resolve(answer); };
    let timer = setTimeout(done, ms);
    s.on('data', (d: Buffer) => {
      got = Buffer.concat([got, d]);
      const end = got.indexOf('\r\n\r\n');
      if (end < 0 || answer !== undefined) return;
      const head = got.subarray(0, end).toString('latin1');
      const length = Number(/\r\ncontent-length: *(\d+)/i.exec(head)?.[1] ?? 0);
      if (got.length < end + 4 + length) return;
      answer = { status: Number(head.split(' ')[1]), head, body: got.subarray(end + 4, end + 4 + length).toString(), ms: Date.now() - started, closed: false };
      // The answer is complete: whether the agent closes the connection after it is seen within a second.
      clearTimeout(timer);
      timer = setTimeout(done, 1_000);
    });
    s.on('close', () => { if (answer !== undefined) answer.closed = true; done(); });
    s.on('error', () => { /* seen as a close */ });
  });
}

const put = (path: string, headers: string) => `PUT ${path} HTTP/1.1\r\nHost: localhost\r\n${headers}`;

describe('refused on its credentials before its body (seed dialect)', () => {
  test.each([
    ['no credentials, a declared length', 'Content-Length: 100\r\n', 1002],
    ['no credentials, a chunked body', 'Transfer-Encoding: chunked\r\n', 1002],
    ['a token that is no JWT', 'Authorization: Bearer x.y.z\r\nContent-Length: 100\r\n', 1021],
    ['a token in X-Consul-Token signed with another secret', `X-Consul-Token: ${'e30.e30.c2ln'}\r\nContent-Length: 100\r\n`, 1021],
  ])('%s: 401 at once, with WWW-Authenticate, the connection closed, though no body byte came', async (_what, headers, code) => {
    const a = await exchange(seed, `${put('/v1/kv/app/x', headers)}\r\n`);
    expect(a, 'no answer within 5 s').toBeDefined();
    expect(a!.status).toBe(401);
    expect(JSON.parse(a!.body)).toMatchObject({ code });
    expect(a!.head).toMatch(/\r\nwww-authenticate: Bearer/i);
    expect(a!.ms).toBeLessThan(3_000);
    expect(a!.closed).toBe(true);
  });

  test('an expired token: 401 (1005) at once', async () => {
    const expired = await tokens.mint({ subject: 'late', rules: [{ resource: 'key', prefix: '', access: 'write' }], ttlSeconds: -120 });
    const a = await exchange(seed, `${put('/v1/kv/app/x', `Authorization: Bearer ${expired}\r\nContent-Length: 100\r\n`)}\r\n`);
    expect(a?.status).toBe(401);
    expect(JSON.parse(a!.body)).toMatchObject({ code: 1005 });
  });

  test('nothing was written; a valid token\'s write with its body, and a signed one, are served as before', async () => {
    const token = await tokens.mint({ subject: 'writer', rules: [{ resource: 'key', prefix: '', access: 'write' }], ttlSeconds: 600 });
    const auth = { authorization: `Bearer ${token}` };
    expect((await call(seed.url, 'GET', '/v1/kv/app/x', undefined, auth)).status).toBe(404);
    expect((await call(seed.url, 'PUT', '/v1/kv/app/x', 'by-token', auth)).text).toBe('true');
    const path = '/v1/kv/app/signed';
    const signed = (body: string, nonce: string) => signRequest({ method: 'PUT', path, params: [], body: Buffer.from(body), appKey: 'app1', secret: appSecret, signMethod: 'HMACSHA256', nonce });
    expect((await call(seed.url, 'PUT', `${path}?${signed('by-app', 'n-1')}`, 'by-app')).text).toBe('true');
    // The signature covers the body: another body fails it, judged once the body is in.
    const forged = await call(seed.url, 'PUT', `${path}?${signed('by-app', 'n-2')}`, 'other');
    expect(forged.status).toBe(400);
    expect(forged.json()).toMatchObject({ message: expect.stringMatching(/signature does not match/) });
    expect((await call(seed.url, 'GET', `${path}?raw`, undefined, auth)).text).toBe('by-app');
  });

  test('the route table still answers first: a path no route serves is 404 once its body is in, not 401', async () => {
    const a = await exchange(seed, `${put('/v1/nowhere', 'Content-Length: 2\r\n')}\r\nhi`);
    expect(a?.status).toBe(404);
  });
});

test('the consul dialect refuses at once too, in its own words (403 ACL not found)', async () => {
  const a = await exchange(consul, `${put('/v1/kv/app/x', 'Content-Length: 100\r\n')}\r\n`);
  expect(a?.status).toBe(403);
  expect(a?.body).toBe('ACL not found');
  expect(a!.ms).toBeLessThan(3_000);
});
