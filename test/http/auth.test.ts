// Goal: authentication and authorization through a started agent with auth enabled — default deny,
// bearer JWTs (also as X-Consul-Token), rules by resource and prefix, 401 codes with WWW-Authenticate,
// 403 changing nothing, signed requests accepted, tampered (a repeated parameter reordered among them) or
// replayed ones refused, and the token CLI.
import { execFileSync } from 'node:child_process';
import { writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, test } from 'vitest';
import { TokenAuthority, type Rule } from '../../src/auth/index.ts';
import { signRequest } from '../../src/auth/signature.ts';
import { call, expectError, repoRoot, startAgent, tempDataDir, tsxLoader, type Agent } from '../support/agent.ts';

const secret = 'a-test-secret-that-is-long-enough-0123456789';
const appSecret = 'app-secret-1';
let agent: Agent;
let configFile: string;
const tokens = new TokenAuthority({ secret });
const mint = (rules: Rule[], ttlSeconds = 600) => tokens.mint({ subject: 'tester', rules, ttlSeconds });
const bearer = (t: string) => ({ authorization: `Bearer ${t}` });

beforeAll(async () => {
  const dir = tempDataDir();
  configFile = join(dir, 'agent.json');
  writeFileSync(configFile, JSON.stringify({
    auth: { jwt_secret: secret, app_keys: { app1: { secret: appSecret, rules: [{ resource: 'key', prefix: 'signed/', access: 'write' }] } } },
  }));
  agent = await startAgent({ args: ['--config-file', configFile] });
});
afterAll(async () => { await agent?.stop(); agent?.cleanup(); });

describe('bearer tokens', () => {
  test('no credentials: 401 code 1002 with a bare challenge (every 401 carries one, RFC 9110 §15.5.2)', async () => {
    const r = await call(agent.url, 'GET', '/v1/kv/any');
    expectError(r, 401, 1002);
    expect(r.headers.get('www-authenticate')).toBe('Bearer realm="roster"');
  });

  test('an invalid token: 401 code 1021 with WWW-Authenticate; an expired one: 401 code 1005', async () => {
    const bad = await call(agent.url, 'GET', '/v1/kv/any', undefined, bearer('not.a.jwt'));
    expectError(bad, 401, 1021);
    expect(bad.headers.get('www-authenticate')).toMatch(/^Bearer realm="roster", error="invalid_token"/);
    const other = await new TokenAuthority({ secret: 'another-secret-that-is-long-enough-0123456789' }).mint({ subject: 'x', rules: [], ttlSeconds: 60 });
    expectError(await call(agent.url, 'GET', '/v1/kv/any', undefined, bearer(other)), 401, 1021);
    const expired = await mint([{ resource: 'key', prefix: '', access: 'read' }], -60);
    expectError(await call(agent.url, 'GET', '/v1/kv/any', undefined, bearer(expired)), 401, 1005);
  });

  test('rules by resource and prefix: allowed writes work; a token without rights gets 403 and changes nothing', async () => {
    const writer = await mint([{ resource: 'key', prefix: 'team/', access: 'write' }]);
    const reader = await mint([{ resource: 'key', prefix: 'team/', access: 'read' }]);
    expect((await call(agent.url, 'PUT', '/v1/kv/team/a', 'one', bearer(writer))).text).toBe('true');
    const denied = await call(agent.url, 'PUT', '/v1/kv/team/a', 'two', bearer(reader));
    expectError(denied, 403, 1004);
    expectError(await call(agent.url, 'PUT', '/v1/kv/other/a', 'x', bearer(writer)), 403, 1004);
    const read = await call(agent.url, 'GET', '/v1/kv/team/a?raw', undefined, bearer(reader));
    expect([read.status, read.text]).toEqual([200, 'one']);
    expectError(await call(agent.url, 'GET', '/v1/kv/other/a', undefined, bearer(reader)), 403, 1004);
    expectError(await call(agent.url, 'PUT', '/v1/session/create', {}, bearer(writer)), 403, 1004);
  });

  test('X-Consul-Token carries the same token', async () => {
    const writer = await mint([{ resource: 'key', prefix: 'xct/', access: 'write' }]);
    expect((await call(agent.url, 'PUT', '/v1/kv/xct/a', 'v', { 'x-consul-token': writer })).text).toBe('true');
  });
});

describe('signed requests', () => {
  const signed = (method: string, path: string, body: string, nonce: string, params: [string, string][] = []) =>
    signRequest({ method, path, params, body: Buffer.from(body), appKey: 'app1', secret: appSecret, nonce, signMethod: 'HMACSHA256' });

  test('a correctly signed request is accepted; a tampered one and a replayed nonce are refused', async () => {
    const qs = signed('PUT', '/v1/kv/signed/a', 'body-1', 'nonce-1');
    expect((await call(agent.url, 'PUT', `/v1/kv/signed/a?${qs}`, 'body-1')).text).toBe('true');
    const replay = await call(agent.url, 'PUT', `/v1/kv/signed/a?${qs}`, 'body-1');
    expectError(replay, 400, 1023);
    const tampered = await call(agent.url, 'PUT', `/v1/kv/signed/a?${signed('PUT', '/v1/kv/signed/a', 'body-2', 'nonce-2')}`, 'other body');
    expectError(tampered, 400, 1022);
    const read = await call(agent.url, 'GET', `/v1/kv/signed/a?${signed('GET', '/v1/kv/signed/a', '', 'nonce-3', [['raw', 'true']])}`);
    expect([read.status, read.text]).toEqual([200, 'body-1']);
    const unknown = signRequest({ method: 'GET', path: '/v1/kv/signed/a', params: [], body: Buffer.alloc(0), appKey: 'nobody', secret: 'x', nonce: 'n', signMethod: 'MD5' });
    expectError(await call(agent.url, 'GET', `/v1/kv/signed/a?${unknown}`), 401, 1001);
  });

  test('a repeated parameter is signed in the order it is sent, which decides what is served: reordered, the signature fails', async () => {
    const path = '/v1/kv/signed/dup';
    const flagsOf = async (nonce: string) =>
      (await call(agent.url, 'GET', `${path}?${signed('GET', path, '', nonce)}`)).json<{ Flags: number }[]>()[0]!.Flags;
    const meant = signed('PUT', path, 'v', 'nonce-5', [['flags', '1'], ['flags', '2']]);
    expect(meant).toContain('flags=1&flags=2');
    // The first occurrence is used (http-conventions: repeated query parameter), so the order is meaning.
    expectError(await call(agent.url, 'PUT', `${path}?${meant.replace('flags=1&flags=2', 'flags=2&flags=1')}`, 'v'), 400, 1022);
    expect((await call(agent.url, 'PUT', `${path}?${meant}`, 'v')).text).toBe('true');
    expect(await flagsOf('nonce-6')).toBe(1);
    expect((await call(agent.url, 'PUT', `${path}?${signed('PUT', path, 'v', 'nonce-7', [['flags', '2'], ['flags', '1']])}`, 'v')).text).toBe('true');
    expect(await flagsOf('nonce-8')).toBe(2);
  });

  test('a signed caller is held to its rules', async () => {
    expectError(await call(agent.url, 'PUT', `/v1/kv/elsewhere?${signed('PUT', '/v1/kv/elsewhere', 'x', 'nonce-4')}`, 'x'), 403, 1004);
  });
});

describe('token CLI', () => {
  test('npm run token mints a token the agent accepts', async () => {
    const out = execFileSync(process.execPath, ['--import', tsxLoader, join(repoRoot, 'src/cli/token.ts'), '--config-file', configFile,
      '--subject', 'ops', '--rules', JSON.stringify([{ resource: 'key', prefix: 'cli/', access: 'write' }]), '--ttl', '10m'], { encoding: 'utf8' });
    const token = out.trim();
    expect((await call(agent.url, 'PUT', '/v1/kv/cli/a', 'v', bearer(token))).text).toBe('true');
  });
});
