// Goal: backup and restore are operator rights (Consul's): with authentication on, saving a snapshot needs
// operator read and read on everything a snapshot holds (keys, sessions, nodes, services, checks, with no
// deny rule below), restoring one operator write; a token without them is refused (403) and nothing changes.
import { writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, test } from 'vitest';
import { TokenAuthority, type Rule } from '../../src/auth/index.ts';
import { call, expectError, startAgent, tempDataDir, type Agent } from '../support/agent.ts';

const secret = 'a-test-secret-that-is-long-enough-0123456789';
const tokens = new TokenAuthority({ secret });
const bearer = async (rules: Rule[]) => ({ authorization: `Bearer ${await tokens.mint({ subject: 'tester', rules, ttlSeconds: 600 })}` });
let agent: Agent;

beforeAll(async () => {
  const dir = tempDataDir();
  const configFile = join(dir, 'agent.json');
  writeFileSync(configFile, JSON.stringify({ auth: { jwt_secret: secret } }));
  agent = await startAgent({ args: ['--config-file', configFile] });
}, 60_000);
afterAll(async () => { await agent?.stop(); agent?.cleanup(); });

describe('snapshot ACL', () => {
  test('save needs operator read and read on everything; restore operator write; others are refused and change nothing', async () => {
    const all = await bearer([{ resource: 'key', prefix: '', access: 'write' }, { resource: 'session', prefix: '', access: 'write' }]);
    const readAll: Rule[] = (['operator', 'key', 'session', 'node', 'service', 'check'] as const).map((resource) => ({ resource, prefix: '', access: 'read' }));
    const reader = await bearer(readAll);
    const operatorOnly = await bearer([{ resource: 'operator', prefix: '', access: 'read' }]);
    const fenced = await bearer([...readAll, { resource: 'key', prefix: 'acl/secret', access: 'deny' }]);
    const writer = await bearer([{ resource: 'operator', prefix: '', access: 'write' }]);
    expect((await call(agent.url, 'PUT', '/v1/kv/acl/a', 'one', all)).text).toBe('true');

    expectError(await call(agent.url, 'GET', '/v1/snapshot', undefined, all), 403, 1004);
    // Operator read alone, or a deny rule under the key grant: the snapshot would show keys the token may not read.
    expectError(await call(agent.url, 'GET', '/v1/snapshot', undefined, operatorOnly), 403, 1004);
    expectError(await call(agent.url, 'GET', '/v1/snapshot', undefined, fenced), 403, 1004);
    const saved = await call(agent.url, 'GET', '/v1/snapshot', undefined, reader);
    expect(saved.status, saved.text).toBe(200);

    expect((await call(agent.url, 'PUT', '/v1/kv/acl/a', 'two', all)).text).toBe('true');
    expectError(await call(agent.url, 'PUT', '/v1/snapshot', saved.body, all), 403, 1004);
    expectError(await call(agent.url, 'PUT', '/v1/snapshot', saved.body, reader), 403, 1004);
    expect((await call(agent.url, 'GET', '/v1/kv/acl/a?raw', undefined, all)).text).toBe('two');

    const restored = await call(agent.url, 'PUT', '/v1/snapshot', saved.body, writer);
    expect(restored.status, restored.text).toBe(200);
    expect((await call(agent.url, 'GET', '/v1/kv/acl/a?raw', undefined, all)).text).toBe('one');
  }, 60_000);
});
