// Goal: an alias check shows the health of what it watches, and its checks' output, to whoever may read the
// alias; so registering one, on its own or inside a service, takes read on what it watches, as a health read
// of it would: the node (AliasNode, else the agent's) and the service of the AliasService instance. On a
// started agent with authentication on, a token that may not read a service cannot watch it through an
// alias of its own, and the refusal is the same whether the instance exists or not.
import { writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, test } from 'vitest';
import { TokenAuthority, type Rule } from '../../src/auth/index.ts';
import { call, startAgent, tempDataDir, type Agent, type HttpResult } from '../support/agent.ts';

const secret = 'an-alias-acl-secret-that-is-long-enough-42';
const tokens = new TokenAuthority({ secret });
const bearer = (t: string) => ({ authorization: `Bearer ${t}` });
const everything: Rule[] = (['node', 'service', 'check', 'session', 'key', 'agent'] as const).map((resource) => ({ resource, prefix: '', access: 'write' }));
const mint = (subject: string, rules: Rule[]) => tokens.mint({ subject, rules, ttlSeconds: 600 });
/** What a token registering services and checks of its own holds: write on them, read on the agent's node. */
const own: Rule[] = [
  { resource: 'service', prefix: 'web', access: 'write' }, { resource: 'check', prefix: 'eve-', access: 'write' },
  { resource: 'node', prefix: 'node1', access: 'read' },
];

let agent: Agent;
let admin: string;
let eve: string;

const put = (path: string, body: unknown, token: string) => call(agent.url, 'PUT', path, body, bearer(token));
const agentChecks = async () => Object.keys((await call(agent.url, 'GET', '/v1/agent/checks', undefined, bearer(admin))).json() as Record<string, unknown>);

/** 403/1004 that does not name the service behind the id; its message with the id blanked out. */
function refusedUnnamed(r: HttpResult, id: string): string {
  expect(r.status, r.text).toBe(403);
  expect(r.json()).toMatchObject({ code: 1004 });
  expect(r.text).toContain(id);
  expect(r.text).not.toContain('ledger');
  return r.text.replaceAll(id, '<id>');
}

beforeAll(async () => {
  const configFile = join(tempDataDir(), 'agent.json');
  writeFileSync(configFile, JSON.stringify({ auth: { jwt_secret: secret } }));
  agent = await startAgent({ args: ['--config-file', configFile] });
  admin = await mint('admin', everything);
  eve = await mint('eve', own);
  expect((await put('/v1/agent/service/register', { Name: 'ledger', ID: 'db1', Check: { CheckID: 'dbcheck', TTL: '600s' } }, admin)).status).toBe(200);
  expect((await put('/v1/agent/service/register', { Name: 'web-eve', ID: 'web-eve1' }, eve)).status).toBe(200);
}, 60_000);
afterAll(async () => { await agent?.stop(); agent?.cleanup(); });

describe('an alias of a service instance takes read on its service', () => {
  test('refused on its own and inside a service registration, the same for an instance that does not exist', async () => {
    const alone = refusedUnnamed(await put('/v1/agent/check/register', { Name: 'spy', CheckID: 'eve-spy', ServiceID: 'web-eve1', AliasService: 'db1' }, eve), 'db1');
    const missing = refusedUnnamed(await put('/v1/agent/check/register', { Name: 'spy', CheckID: 'eve-spy', ServiceID: 'web-eve1', AliasService: 'no-such' }, eve), 'no-such');
    expect(missing).toBe(alone);
    refusedUnnamed(await put('/v1/agent/service/register', { Name: 'web-spy', ID: 'web-spy1', Check: { CheckID: 'eve-spy2', AliasService: 'db1' } }, eve), 'db1');
    expect((await agentChecks()).filter((id) => id.startsWith('eve-'))).toEqual([]);
  });

  test('allowed with read on the service; a token that may read every service may alias an instance not registered yet', async () => {
    const ledgerReader = await mint('ledger-reader', [...own, { resource: 'service', prefix: 'ledger', access: 'read' }]);
    expect((await put('/v1/agent/check/register', { Name: 'watch', CheckID: 'eve-watch', ServiceID: 'web-eve1', AliasService: 'db1' }, ledgerReader)).status).toBe(200);
    refusedUnnamed(await put('/v1/agent/check/register', { Name: 'later', CheckID: 'eve-later', ServiceID: 'web-eve1', AliasService: 'later1' }, ledgerReader), 'later1');
    const allReader = await mint('all-reader', [...own, { resource: 'service', prefix: '', access: 'read' }]);
    expect((await put('/v1/agent/check/register', { Name: 'later', CheckID: 'eve-later', ServiceID: 'web-eve1', AliasService: 'later1' }, allReader)).status).toBe(200);
    // Its own services are the token's to watch.
    expect((await put('/v1/agent/check/register', { Name: 'self', CheckID: 'eve-self', AliasService: 'web-eve1', ServiceID: 'web-eve1' }, eve)).status).toBe(200);
  });
});

describe('an alias watches a node\'s checks: it takes read on that node', () => {
  test('AliasNode names the node; without it the agent\'s node is watched', async () => {
    const r = await put('/v1/agent/check/register', { Name: 'vault', CheckID: 'eve-vault', ServiceID: 'web-eve1', AliasNode: 'vault-7' }, eve);
    expect(r.status, r.text).toBe(403);
    expect(r.json()).toMatchObject({ code: 1004, details: { resource: 'node', name: 'vault-7', access: 'read' } });
    const nodeReader = await mint('node-reader', [...own, { resource: 'node', prefix: 'vault-', access: 'read' }]);
    expect((await put('/v1/agent/check/register', { Name: 'vault', CheckID: 'eve-vault', ServiceID: 'web-eve1', AliasNode: 'vault-7' }, nodeReader)).status).toBe(200);
    const noNode = await mint('no-node', own.filter((rule) => rule.resource !== 'node'));
    const local = await put('/v1/agent/check/register', { Name: 'self2', CheckID: 'eve-self2', AliasService: 'web-eve1', ServiceID: 'web-eve1' }, noNode);
    expect(local.status, local.text).toBe(403);
    expect(local.json()).toMatchObject({ code: 1004, details: { resource: 'node', name: 'node1', access: 'read' } });
  });
});
