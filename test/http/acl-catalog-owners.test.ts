// Goal: the catalog's register and deregister ask what the agent endpoints ask of the same change, on a
// started agent with authentication on. Node write covers the node and its own checks; a check in a
// registration or deregistered by id also takes check write on its id, and, when it is a service's, write
// on that service; a node deregistered, or renamed away by a registration that takes its ID, takes write on
// each service it holds. A service the token may not read is not named, and a refused write changes nothing.
import { rmSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, test } from 'vitest';
import { TokenAuthority, type Rule } from '../../src/auth/index.ts';
import { call, startAgent, tempDataDir, type Agent, type HttpResult } from '../support/agent.ts';
import { until } from '../support/until.ts';

const secret = 'a-catalog-owner-secret-that-is-long-enough';
const tokens = new TokenAuthority({ secret });
const bearer = (t: string) => ({ authorization: `Bearer ${t}` });
const everything: Rule[] = (['node', 'service', 'check', 'session', 'key', 'agent'] as const).map((resource) => ({ resource, prefix: '', access: 'write' }));
const mint = (subject: string, rules: Rule[]) => tokens.mint({ subject, rules, ttlSeconds: 600 });

let agent: Agent;
let admin: string;
/** Node write alone. */
let nodeOnly: string;
/** Node and check write, no service rule. */
let nodeChecks: string;
/** Node and check write, service read. */
let nodeChecksRead: string;

const put = (path: string, body: unknown, token: string) => call(agent.url, 'PUT', path, body, bearer(token));
const checks = async (node = 'node1'): Promise<Record<string, { ServiceID: string; Status: string; Name: string }>> =>
  Object.fromEntries(((await call(agent.url, 'GET', `/v1/health/node/${node}`, undefined, bearer(admin))).json() as { CheckID: string; ServiceID: string; Status: string; Name: string }[])
    .map((c) => [c.CheckID, c]));

function expectDenied(r: HttpResult, ...words: string[]): void {
  expect(r.status, r.text).toBe(403);
  expect(r.json()).toMatchObject({ code: 1004 });
  for (const w of words) expect(r.text).toContain(w);
}

beforeAll(async () => {
  const configFile = join(tempDataDir(), 'agent.json');
  writeFileSync(configFile, JSON.stringify({ auth: { jwt_secret: secret } }));
  const sourceDir = tempDataDir();
  const [source, started] = await Promise.all([
    startAgent({ bare: true, dataDir: sourceDir, args: ['--http-port', '0', '--grpc-port', '0', '--data-dir', sourceDir, '--node-name', 'srcnode'] }),
    startAgent({ args: ['--config-file', configFile] }),
  ]);
  agent = started;
  admin = await mint('admin', [...everything, { resource: 'operator', prefix: '', access: 'write' }]);
  // A node that holds a service and is no member here: srcnode, brought by a restore of its own snapshot.
  try {
    expect((await call(source.url, 'PUT', '/v1/agent/service/register', { Name: 'legacy', ID: 'legacy1' })).status).toBe(200);
    const saved = await call(source.url, 'GET', '/v1/snapshot');
    expect(saved.status, saved.text).toBe(200);
    const restored = await put('/v1/snapshot', saved.body, admin);
    expect(restored.status, restored.text).toBe(200);
  } finally {
    await source.stop();
    rmSync(sourceDir, { recursive: true, force: true });
  }
  nodeOnly = await mint('node-only', [{ resource: 'node', prefix: '', access: 'write' }]);
  nodeChecks = await mint('node-checks', [{ resource: 'node', prefix: '', access: 'write' }, { resource: 'check', prefix: '', access: 'write' }]);
  nodeChecksRead = await mint('node-checks-read', [
    { resource: 'node', prefix: '', access: 'write' }, { resource: 'check', prefix: '', access: 'write' }, { resource: 'service', prefix: '', access: 'read' },
  ]);
  for (const [name, id] of [['pay', 'pay1'], ['db', 'db1']]) {
    expect((await put('/v1/agent/service/register', { Name: name, ID: id, Check: { CheckID: `${name}check`, TTL: '600s' } }, admin)).status).toBe(200);
    expect((await put(`/v1/agent/check/pass/${name}check`, undefined, admin)).status).toBe(200);
  }
}, 60_000);
afterAll(async () => { await agent?.stop(); agent?.cleanup(); });

describe('a service\'s check through the catalog takes write on the service', () => {
  test('deregistering it by id: refused to node write, without naming a service the token may not read', async () => {
    const r = await put('/v1/catalog/deregister', { Node: 'node1', CheckID: 'paycheck' }, nodeOnly);
    expectDenied(r, 'check', 'paycheck');
    const hidden = await put('/v1/catalog/deregister', { Node: 'node1', CheckID: 'paycheck' }, nodeChecks);
    expectDenied(hidden, 'paycheck', 'belongs to a service');
    expect(hidden.text).not.toContain('"pay"');
    expectDenied(await put('/v1/catalog/deregister', { Node: 'node1', CheckID: 'paycheck' }, nodeChecksRead), 'service', 'pay');
    expect((await checks()).paycheck).toMatchObject({ ServiceID: 'pay1', Status: 'passing' });
    expect((await put('/v1/agent/check/pass/paycheck', undefined, admin)).status).toBe(200);
  });

  test('replacing it by a registration: refused likewise, the check left as it was', async () => {
    const body = { Node: 'node1', Address: '127.0.0.1', Check: { CheckID: 'dbcheck', Name: 'hijacked', Status: 'critical', Output: 'replaced' } };
    expectDenied(await put('/v1/catalog/register', body, nodeOnly), 'check', 'dbcheck');
    const hidden = await put('/v1/catalog/register', { ...body, Checks: [{ CheckID: 'fine', Name: 'fine', Status: 'passing' }] }, nodeChecks);
    expectDenied(hidden, 'dbcheck', 'belongs to a service');
    expect(hidden.text).not.toContain('"db"');
    expectDenied(await put('/v1/catalog/register', body, nodeChecksRead), 'service', 'db');
    const now = await checks();
    expect(now.dbcheck).toMatchObject({ ServiceID: 'db1', Status: 'passing', Name: expect.not.stringContaining('hijacked') });
    expect(now.fine).toBeUndefined();
  });

  test('with write on the service it is allowed, as at the agent endpoints', async () => {
    const payWriter = await mint('pay-writer', [{ resource: 'node', prefix: '', access: 'write' }, { resource: 'check', prefix: '', access: 'write' }, { resource: 'service', prefix: 'pay', access: 'write' }]);
    expect((await put('/v1/catalog/deregister', { Node: 'node1', CheckID: 'paycheck' }, payWriter)).status).toBe(200);
    expect((await checks()).paycheck).toBeUndefined();
  });
});

describe('a node\'s own checks through the catalog take node write and check write on their ids', () => {
  test('registering and deregistering a node check', async () => {
    const body = { Node: 'ext-1', Address: '10.0.0.9', Check: { CheckID: 'ext-disk', Name: 'disk', Status: 'passing' } };
    expectDenied(await put('/v1/catalog/register', body, nodeOnly), 'check', 'ext-disk');
    expect((await put('/v1/catalog/register', body, nodeChecks)).status).toBe(200);
    expectDenied(await put('/v1/catalog/deregister', { Node: 'ext-1', CheckID: 'ext-disk' }, nodeOnly), 'check', 'ext-disk');
    expect((await put('/v1/catalog/deregister', { Node: 'ext-1', CheckID: 'ext-disk' }, nodeChecks)).status).toBe(200);
    // A node without checks needs node write only.
    expect((await put('/v1/catalog/register', { Node: 'ext-2', Address: '10.0.0.10' }, nodeOnly)).status).toBe(200);
    expect((await put('/v1/catalog/deregister', { Node: 'ext-2' }, nodeOnly)).status).toBe(200);
  });
});

describe('a node that holds services is removed only with write on each of them', () => {
  test('deregistering the agent\'s node: refused to node write, the services stay', async () => {
    const hidden = await put('/v1/catalog/deregister', { Node: 'node1' }, nodeChecks);
    expectDenied(hidden, 'node1', 'a service');
    expect(hidden.text).not.toContain('"db"');
    expectDenied(await put('/v1/catalog/deregister', { Node: 'node1' }, nodeChecksRead), 'service', 'db');
    const services = (await call(agent.url, 'GET', '/v1/agent/services', undefined, bearer(admin))).json() as Record<string, unknown>;
    expect(Object.keys(services).sort()).toEqual(['db1', 'pay1']);
  });

  test('a node of a restored snapshot that holds a service: neither deregistered nor renamed away without write on it', async () => {
    await until('srcnode judged failed', async () => ((await checks('srcnode')).gossipHealth?.Status === 'critical' ? true : undefined), 10_000);
    const id = ((await call(agent.url, 'GET', '/v1/catalog/node/srcnode', undefined, bearer(admin))).json() as { Node: { ID: string } }).Node.ID;
    for (const [path, body] of [
      ['/v1/catalog/deregister', { Node: 'srcnode' }],
      ['/v1/catalog/register', { Node: 'renamed', Address: '10.0.0.11', ID: id }],
    ] as const) {
      const hidden = await put(path, body, nodeChecks);
      expectDenied(hidden, 'srcnode', 'a service');
      expect(hidden.text).not.toContain('legacy');
      expectDenied(await put(path, body, nodeChecksRead), 'service', 'legacy');
      const nodes = ((await call(agent.url, 'GET', '/v1/catalog/nodes', undefined, bearer(admin))).json() as { Node: string }[]).map((n) => n.Node);
      expect(nodes).toContain('srcnode');
      expect(nodes).not.toContain('renamed');
    }
    const legacyWriter = await mint('legacy-writer', [{ resource: 'node', prefix: '', access: 'write' }, { resource: 'service', prefix: 'legacy', access: 'write' }]);
    expect((await put('/v1/catalog/register', { Node: 'renamed', Address: '10.0.0.11', ID: id }, legacyWriter)).status).toBe(200);
    const nodes = ((await call(agent.url, 'GET', '/v1/catalog/nodes', undefined, bearer(admin))).json() as { Node: string }[]).map((n) => n.Node);
    expect(nodes).toContain('renamed');
    expect(nodes).not.toContain('srcnode');
  });
});
