// Goal: with authentication on, the writes that name their node, service or check are judged on that
// name, on a started agent: a deny rule under a broader write grant protects a node from catalog register
// and deregister (and from a rename that takes its ID), a service name from registration (and from a
// registration over an instance of that name, from deregistration under any id, and from a check bound
// to it or moved off it), a check id from registration; a grant on a prefix alone is enough for names
// under it. A refused write changes nothing.
// Catalog, health and agent lists leave out what such a deny rule covers, and the stream's
// checks_in_state is refused to that token.
import { writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, test } from 'vitest';
import { TokenAuthority, type Rule } from '../../src/auth/index.ts';
import WebSocket from 'ws';
import { call, sleep, startAgent, tempDataDir, type Agent } from '../support/agent.ts';

const secret = 'a-catalog-acl-secret-that-is-long-enough-1';
const tokens = new TokenAuthority({ secret });
const bearer = (t: string) => ({ authorization: `Bearer ${t}` });
const everything: Rule[] = (['node', 'service', 'check', 'session', 'key', 'agent'] as const).map((resource) => ({ resource, prefix: '', access: 'write' }));

let agent: Agent;
let admin: string;
let fenced: string;
let narrow: string;
let reader: string;

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
  reader = await tokens.mint({
    subject: 'reader', ttlSeconds: 600, rules: [...everything.map((r) => ({ ...r, access: 'read' as const })), { resource: 'service', prefix: 'web', access: 'write' }],
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

function expectUnknown(r: { status: number; text: string }, what: string): void {
  expect(r.status, r.text).toBe(404);
  expect(JSON.parse(r.text)).toMatchObject({ code: 1006, message: `unknown ${what}` });
}

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
    // Same id, another name: it would replace the db instance. A token that may not read db is not told
    // the name behind the id; one that may read it is.
    const hidden = await put('/v1/agent/service/register', { Name: 'web', ID: 'db-2' }, fenced);
    expectDenied(hidden, 'service ID', 'db-2');
    expect(hidden.text).not.toContain('"db"');
    expectDenied(await put('/v1/agent/service/register', { Name: 'web', ID: 'db-2' }, reader), 'service', '"db"');
    expect(Object.keys(await get('/v1/agent/services'))).toEqual(['db-2']);
    expect((await put('/v1/agent/service/register', { Name: 'web', ID: 'web-1' }, narrow)).status).toBe(200);
  });

  test('a service is deregistered only by a token that may write its name, whatever its id', async () => {
    expect((await put('/v1/agent/service/register', { Name: 'db', ID: 'x-9' }, admin)).status).toBe(200);
    // The token may not read db: it is told what an unknown id is told, not the name behind the id.
    expectUnknown(await put('/v1/agent/service/deregister/x-9', undefined, fenced), 'service ID "x-9"');
    expectDenied(await put('/v1/agent/service/deregister/x-9', undefined, reader), 'service', 'db');
    expect(Object.keys(await get('/v1/agent/services'))).toContain('x-9');
    expect((await put('/v1/agent/service/register', { Name: 'web', ID: 'db-9' }, admin)).status).toBe(200);
    expect((await put('/v1/agent/service/deregister/db-9', undefined, fenced)).status).toBe(200);
    expect(Object.keys(await get('/v1/agent/services'))).not.toContain('db-9');
  });

  test('a check cannot be bound to, or moved off, a service the token may not write', async () => {
    expect((await put('/v1/agent/service/register', { Name: 'db', ID: 'db-c' }, admin)).status).toBe(200);
    expect((await put('/v1/agent/service/register', { Name: 'web', ID: 'web-c' }, admin)).status).toBe(200);
    expectUnknown(await put('/v1/agent/check/register', { Name: 'app-db', TTL: '30s', ServiceID: 'db-c' }, fenced), 'service ID "db-c"');
    expect(Object.keys(await get('/v1/agent/checks'))).not.toContain('app-db');
    expect((await put('/v1/agent/check/register', { Name: 'app-db2', TTL: '30s', ServiceID: 'db-c' }, admin)).status).toBe(200);
    // Re-registered for web, it would leave db's health: refused too.
    const moved = await put('/v1/agent/check/register', { Name: 'app-db2', TTL: '30s', ServiceID: 'web-c' }, fenced);
    expectDenied(moved, 'service', 'app-db2');
    expect(moved.text).not.toContain('"db');
    expect((await get('/v1/agent/checks'))['app-db2']).toMatchObject({ ServiceID: 'db-c' });
    expect((await put('/v1/agent/check/register', { Name: 'app-web', TTL: '30s', ServiceID: 'web-c' }, fenced)).status).toBe(200);
  });

  test('a denied check id cannot be registered', async () => {
    expectDenied(await put('/v1/agent/check/register', { Name: 'sys-load', TTL: '30s' }, fenced), 'check', 'sys-load');
    expect(Object.keys(await get('/v1/agent/checks'))).not.toContain('sys-load');
    // A check of no service is the node's: node write on the agent's node too (Consul's node:write).
    expectDenied(await put('/v1/agent/check/register', { Name: 'app-load', TTL: '30s' }, narrow), 'node', 'node1');
    expect((await put('/v1/agent/check/register', { Name: 'app-load', TTL: '30s' }, fenced)).status).toBe(200);
    expectDenied(await put('/v1/agent/check/register', { Name: 'other-load', TTL: '30s' }, narrow), 'check', 'other-load');
  });
});

describe('a check\'s status is its owner\'s: changing it takes write on the service or node it decides', () => {
  let webOnly: string;
  let checksOnly: string;
  beforeAll(async () => {
    webOnly = await tokens.mint({ subject: 'web-only', ttlSeconds: 600, rules: [{ resource: 'service', prefix: 'web', access: 'write' }] });
    checksOnly = await tokens.mint({ subject: 'checks-only', ttlSeconds: 600, rules: [{ resource: 'check', prefix: '', access: 'write' }] });
    expect((await put('/v1/agent/service/register', { Name: 'db', ID: 'db-own', Check: { CheckID: 'db-own-ttl', TTL: '60s' } }, admin)).status).toBe(200);
    expect((await put('/v1/agent/check/pass/db-own-ttl', undefined, admin)).status).toBe(200);
  });

  test('nobody registers a check of the agent\'s own gossip check id, inside a service or on its own', async () => {
    for (const id of ['gossipHealth', 'serfHealth']) {
      for (const [path, body] of [
        ['/v1/agent/service/register', { Name: 'web-g', Check: { CheckID: id, TTL: '3s' } }],
        ['/v1/agent/check/register', { ID: id, Name: 'mine', TTL: '3s' }],
      ] as const) {
        const r = await put(path, body, admin);
        expect(r.status, r.text).toBe(400);
        expect(JSON.parse(r.text)).toMatchObject({ code: 1009, message: `check ID "${id}" is the agent's own node check; give the check another ID` });
      }
    }
    expect((await get('/v1/agent/services'))['web-g']).toBeUndefined();
    // The node's sessions still bind its gossip check, passing.
    const session = await put('/v1/session/create', { TTL: '30s' }, admin);
    expect(session.status, session.text).toBe(200);
    expect((await get('/v1/health/node/node1') as { CheckID: string; Status: string }[]).find((c) => c.CheckID === 'gossipHealth')).toMatchObject({ Status: 'passing' });
  });

  test('a service registration cannot take over another service\'s check', async () => {
    const r = await put('/v1/agent/service/register', { Name: 'web7', Check: { CheckID: 'db-own-ttl', TTL: '3s' } }, webOnly);
    expectDenied(r, 'service', 'db-own-ttl');
    expect(r.text).not.toContain('"db"');
    expect((await get('/v1/agent/checks'))['db-own-ttl']).toMatchObject({ ServiceID: 'db-own', Status: 'passing' });
    expect((await get('/v1/agent/services'))['web7']).toBeUndefined();
  });

  test('check write alone neither updates nor removes a service\'s or the node\'s check', async () => {
    for (const path of ['/v1/agent/check/fail/db-own-ttl', '/v1/agent/check/deregister/db-own-ttl']) {
      expectUnknown(await put(path, undefined, checksOnly), 'check ID "db-own-ttl"');
    }
    expectUnknown(await put('/v1/agent/check/update/db-own-ttl', { Status: 'critical' }, checksOnly), 'check ID "db-own-ttl"');
    // With db readable, the refusal names it.
    const dbReader = await tokens.mint({ subject: 'db-reader', ttlSeconds: 600, rules: [{ resource: 'check', prefix: '', access: 'write' }, { resource: 'service', prefix: 'db', access: 'read' }] });
    expectDenied(await put('/v1/agent/check/fail/db-own-ttl', undefined, dbReader), 'service', 'db');
    expect((await get('/v1/agent/checks'))['db-own-ttl']).toMatchObject({ Status: 'passing' });
    expect((await put('/v1/agent/check/register', { ID: 'node-ttl', Name: 'node-ttl', TTL: '60s' }, admin)).status).toBe(200);
    expectDenied(await put('/v1/agent/check/pass/node-ttl', undefined, checksOnly), 'node', 'node1');
    expectDenied(await put('/v1/agent/check/deregister/node-ttl', undefined, checksOnly), 'node', 'node1');
    expect((await put('/v1/agent/check/pass/node-ttl', undefined, admin)).status).toBe(200);
  });
});

async function firstAnswer(token: string, topic: string, key: string): Promise<{ type: string; code?: string }> {
  const ws = new WebSocket(`ws://127.0.0.1:${new URL(agent.url).port}/v1/stream`, ['registry.stream.v1'], { headers: bearer(token) });
  const msgs: { id?: string; type: string; code?: string }[] = [];
  ws.on('message', (d) => msgs.push(JSON.parse(d.toString())));
  await new Promise((resolve, reject) => { ws.once('open', resolve); ws.once('error', reject); });
  try {
    ws.send(JSON.stringify({ op: 'subscribe', id: 's0', topic, key }));
    for (let tries = 0; tries < 500; tries++) {
      const end = msgs.find((m) => m.id === 's0' && (m.type === 'end_of_snapshot' || m.type === 'error'));
      if (end !== undefined) return end;
      await sleep(20);
    }
    throw new Error('no answer to the subscription');
  } finally { ws.close(); }
}

describe('lists hold only what the token may read', () => {
  beforeAll(async () => {
    for (const node of ['prot-list', 'open-list']) {
      expect((await put('/v1/catalog/register', { Node: node, Address: '10.1.0.1', Check: { CheckID: 'disk', Name: 'disk', Status: 'passing' } }, admin)).status).toBe(200);
    }
    for (const [name, id] of [['db-list', 'dbl-1'], ['web-list', 'wl-1']]) {
      const r = await put('/v1/agent/service/register', { Name: name, ID: id, Checks: [{ CheckID: `${id}-ttl`, Name: 'ttl', TTL: '60s' }] }, admin);
      expect(r.status, r.text).toBe(200);
    }
    for (const name of ['sys-disk', 'app-disk']) expect((await put('/v1/agent/check/register', { Name: name, TTL: '60s' }, admin)).status).toBe(200);
  });

  const read = async (path: string, token: string) => {
    const r = await call(agent.url, 'GET', path, undefined, bearer(token));
    expect(r.status, r.text).toBe(200);
    return r.text;
  };

  test.each([
    ['/v1/catalog/nodes', '"prot-list"', '"open-list"'],
    ['/v1/catalog/services', '"db-list"', '"web-list"'],
    ['/v1/catalog/node/node1', '"dbl-1"', '"wl-1"'],
    ['/v1/catalog/node-services/node1', '"dbl-1"', '"wl-1"'],
    ['/v1/health/state/any', '"prot-list"', '"open-list"'],
    ['/v1/health/state/any', '"db-list"', '"web-list"'],
    ['/v1/health/node/node1', '"dbl-1-ttl"', '"wl-1-ttl"'],
    ['/v1/agent/services', '"dbl-1"', '"wl-1"'],
    ['/v1/agent/checks', '"sys-disk"', '"app-disk"'],
  ])('%s leaves out %s, denied to the token, and keeps %s', async (path, hidden, shown) => {
    expect(await read(path, admin)).toContain(hidden);
    const fencedView = await read(path, fenced);
    expect(fencedView).not.toContain(hidden);
    expect(fencedView).toContain(shown);
  });

  test('one of the agent\'s services by id is unknown to a token that may not read its name; by name it is refused', async () => {
    for (const path of ['/v1/agent/service/dbl-1', '/v1/agent/health/service/id/dbl-1']) {
      expect([200, 503], path).toContain((await call(agent.url, 'GET', path, undefined, bearer(admin))).status);
      expectUnknown(await call(agent.url, 'GET', path, undefined, bearer(fenced)), 'service ID "dbl-1"');
    }
    expectDenied(await call(agent.url, 'GET', '/v1/agent/health/service/name/db-list', undefined, bearer(fenced)), 'service', 'db-list');
    expect((await call(agent.url, 'GET', '/v1/agent/service/wl-1', undefined, bearer(fenced))).status).toBe(200);
  });

  test('a service instance on a node the token may not read is left out of the service\'s lists', async () => {
    // Instances live on this agent's node only; the node rule is shown with a token denied this agent's node.
    const noSelf = await tokens.mint({ subject: 'noself', ttlSeconds: 600, rules: [...everything, { resource: 'node', prefix: 'node1', access: 'deny' }] });
    for (const path of ['/v1/catalog/service/web-list', '/v1/health/service/web-list', '/v1/health/checks/web-list']) {
      expect(await read(path, admin)).toContain('"node1"');
      expect(JSON.parse(await read(path, noSelf))).toEqual([]);
    }
  });

  test('the agent\'s health of a service shows the checks of its node only to a token that may read the node; its status counts them', async () => {
    expect((await put('/v1/agent/service/register', { Name: 'pub-web', ID: 'pub-web-1', Check: { CheckID: 'pub-ttl', TTL: '60s' } }, admin)).status).toBe(200);
    expect((await put('/v1/agent/check/pass/pub-ttl', undefined, admin)).status).toBe(200);
    expect((await put('/v1/agent/check/register', { CheckID: 'node-secret', Name: 'node secret', TTL: '60s', Notes: 'secret notes' }, admin)).status).toBe(200);
    try {
      expect((await put('/v1/agent/check/warn/node-secret?note=secret-output', undefined, admin)).status).toBe(200);
      const serviceOnly = await tokens.mint({ subject: 'service-only', ttlSeconds: 600, rules: [{ resource: 'service', prefix: 'pub-', access: 'read' }] });
      for (const path of ['/v1/agent/health/service/id/pub-web-1', '/v1/agent/health/service/name/pub-web']) {
        const full = await call(agent.url, 'GET', path, undefined, bearer(admin));
        expect(full.text).toContain('"node-secret"');
        expect(full.text).toContain('secret-output');
        const narrowed = await call(agent.url, 'GET', path, undefined, bearer(serviceOnly));
        for (const secret of ['node-secret', 'node secret', 'secret notes', 'secret-output', 'node1']) expect(narrowed.text, path).not.toContain(secret);
        // The node's checks are not shown, yet the status is the instance's real health (not passing).
        expect(narrowed.status, path).toBe(full.status);
        expect(narrowed.status, path).not.toBe(200);
        const bodies = [narrowed.json()].flat() as { AggregatedStatus: string; Service: { ID: string }; Checks: unknown[] }[];
        expect(bodies.map((b) => [b.Service.ID, b.AggregatedStatus, b.Checks])).toEqual(([full.json()].flat() as { AggregatedStatus: string }[])
          .map((b) => ['pub-web-1', b.AggregatedStatus, []]));
        const text = await call(agent.url, 'GET', `${path}?format=text`, undefined, bearer(serviceOnly));
        expect([text.status, text.text]).toEqual([full.status, bodies[0]!.AggregatedStatus]);
      }
    } finally {
      expect((await put('/v1/agent/check/deregister/node-secret', undefined, admin)).status).toBe(200);
      expect((await put('/v1/agent/service/deregister/pub-web-1', undefined, admin)).status).toBe(200);
    }
  });

  test('the stream\'s checks_in_state needs read on every node and service; node_checks on the node and every service', async () => {
    expect(await firstAnswer(admin, 'checks_in_state', 'any')).toMatchObject({ type: 'end_of_snapshot' });
    expect(await firstAnswer(fenced, 'checks_in_state', 'any')).toMatchObject({ type: 'error', code: 'forbidden' });
    expect(await firstAnswer(admin, 'node_checks', 'node1')).toMatchObject({ type: 'end_of_snapshot' });
    expect(await firstAnswer(fenced, 'node_checks', 'node1')).toMatchObject({ type: 'error', code: 'forbidden' });
  });
});
