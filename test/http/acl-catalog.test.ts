// Goal: with authentication on, the writes that name their node, service or check in the body are judged
// on that name, on a started agent: a deny rule under a broader write grant protects a node from catalog
// register and deregister (and from a rename that takes its ID), a service name from registration (and
// from a registration over an instance of that name), a check id from registration; a grant on a prefix
// alone is enough for names under it. A refused write changes nothing.
import { writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, test } from 'vitest';
import { TokenAuthority, type Rule } from '../../src/auth/index.ts';
import { call, startAgent, tempDataDir, type Agent } from '../support/agent.ts';

const secret = 'a-catalog-acl-secret-that-is-long-enough-1';
const tokens = new TokenAuthority({ secret });
const bearer = (t: string) => ({ authorization: `Bearer ${t}` });
const everything: Rule[] = (['node', 'service', 'check', 'session', 'key'] as const).map((resource) => ({ resource, prefix: '', access: 'write' }));

let agent: Agent;
let admin: string;
let fenced: string;
let narrow: string;

beforeAll(async () => {
  const configFile = join(tempDataDir(), 'agent.json');
  writeFileSync(configFile, JSON.stringify({ auth: { jwt_secret: secret } }));
  agent = await startAgent({ args: ['--config-file', configFile] });
  admin = await tokens.mint({ subject: 'admin', rules: everything, ttlSeconds: 600 });
  fenced = await tokens.mint({
    subject: 'fenced', ttlSeconds: 600, rules: [
      ...everything,
      { resource: 'node', prefix: 'prot', access: 'deny' },
      { resource: 'service', prefix: 'db', access: 'deny' },
      { resource: 'check', prefix: 'sys', access: 'deny' },
    ],
  });
  narrow = await tokens.mint({
    subject: 'narrow', ttlSeconds: 600, rules: [
      { resource: 'node', prefix: 'free-', access: 'write' },
      { resource: 'service', prefix: 'web', access: 'write' },
      { resource: 'check', prefix: 'app-', access: 'write' },
    ],
  });
});
afterAll(async () => { await agent?.stop(); agent?.cleanup(); });

const put = (path: string, body: unknown, token: string) => call(agent.url, 'PUT', path, body, bearer(token));
const get = async (path: string) => (await call(agent.url, 'GET', path, undefined, bearer(admin))).json();
const nodeNames = async () => ((await get('/v1/catalog/nodes')) as { Node: string }[]).map((n) => n.Node);

function expectDenied(r: { status: number; text: string }, resource: string, name: string): void {
  expect(r.status, r.text).toBe(403);
  expect(JSON.parse(r.text)).toMatchObject({ code: 1004 });
  expect(r.text).toContain(resource);
  expect(r.text).toContain(name);
}

describe('catalog writes are judged on the node they name', () => {
  test('a denied node cannot be registered, overwritten or deregistered under a broader grant', async () => {
    expectDenied(await put('/v1/catalog/register', { Node: 'prot-1', Address: '10.0.0.1' }, fenced), 'node', 'prot-1');
    expect(await nodeNames()).not.toContain('prot-1');
    expect((await put('/v1/catalog/register', { Node: 'prot-1', Address: '10.0.0.1' }, admin)).status).toBe(200);
    expectDenied(await put('/v1/catalog/register', { Node: 'prot-1', Address: '10.6.6.6' }, fenced), 'node', 'prot-1');
    expectDenied(await put('/v1/catalog/deregister', { Node: 'prot-1' }, fenced), 'node', 'prot-1');
    expect(await get('/v1/catalog/node/prot-1')).toMatchObject({ Node: { Address: '10.0.0.1' } });
    expect((await put('/v1/catalog/register', { Node: 'open-1', Address: '10.0.0.2' }, fenced)).status).toBe(200);
  });

  test('a rename that would take the ID of a node the caller may not write is refused', async () => {
    const id = '44444444-2222-3333-4444-555555555555';
    expect((await put('/v1/catalog/register', { Node: 'prot-2', Address: '10.0.0.3', ID: id }, admin)).status).toBe(200);
    expectDenied(await put('/v1/catalog/register', { Node: 'open-2', Address: '10.0.0.3', ID: id }, fenced), 'node', 'prot-2');
    expect(await nodeNames()).toEqual(expect.arrayContaining(['prot-2']));
    expect(await nodeNames()).not.toContain('open-2');
  });

  test('a grant on a prefix alone is enough for a node under it', async () => {
    expect((await put('/v1/catalog/register', { Node: 'free-3', Address: '10.0.0.4' }, narrow)).status).toBe(200);
    expectDenied(await put('/v1/catalog/register', { Node: 'other-3', Address: '10.0.0.4' }, narrow), 'node', 'other-3');
  });
});

describe('agent registrations are judged on the service or check they name', () => {
  test('a denied service name cannot be registered, nor registered over', async () => {
    expectDenied(await put('/v1/agent/service/register', { Name: 'db', ID: 'db-1' }, fenced), 'service', 'db');
    expect((await put('/v1/agent/service/register', { Name: 'db', ID: 'db-2' }, admin)).status).toBe(200);
    // Same id, another name: it would replace the db instance.
    expectDenied(await put('/v1/agent/service/register', { Name: 'web', ID: 'db-2' }, fenced), 'service', 'db');
    expect(Object.keys(await get('/v1/agent/services'))).toEqual(['db-2']);
    expect((await put('/v1/agent/service/register', { Name: 'web', ID: 'web-1' }, narrow)).status).toBe(200);
  });

  test('a denied check id cannot be registered', async () => {
    expectDenied(await put('/v1/agent/check/register', { Name: 'sys-load', TTL: '30s' }, fenced), 'check', 'sys-load');
    expect(Object.keys(await get('/v1/agent/checks'))).not.toContain('sys-load');
    expect((await put('/v1/agent/check/register', { Name: 'app-load', TTL: '30s' }, narrow)).status).toBe(200);
    expectDenied(await put('/v1/agent/check/register', { Name: 'other-load', TTL: '30s' }, narrow), 'check', 'other-load');
  });
});
