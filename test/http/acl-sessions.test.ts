// Goal: with authentication on, a session belongs to the identity that created it — another token, even
// with the same rules, cannot renew, destroy, acquire or release with it (an operator can), and the owner
// survives log replay and snapshot restore; session rules name nodes, never session ids; and KV lists
// leak nothing under a denied prefix: `?keys&separator=` cuts after the ACL filter, and X-Consul-Index
// and blocking queries move only with writes the token may read. All through started agents.
import { writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, test } from 'vitest';
import WebSocket from 'ws';
import { TokenAuthority, type Rule } from '../../src/auth/index.ts';
import { call, expectError, sleep, startAgent, tempDataDir, type Agent, type HttpResult } from '../support/agent.ts';

const secret = 'an-ownership-secret-that-is-long-enough-7';
const tokens = new TokenAuthority({ secret });
const mint = (subject: string, rules: Rule[]) => tokens.mint({ subject, rules, ttlSeconds: 600 });
const bearer = (t: string) => ({ authorization: `Bearer ${t}` });
const index = (r: HttpResult) => Number(r.headers.get('x-consul-index'));

/** Session write on every node and key write under locks/: what a lock client holds. */
const lockRules: Rule[] = [
  { resource: 'session', prefix: '', access: 'write' },
  { resource: 'key', prefix: 'locks/', access: 'write' },
];

let configFile: string;
let seed: Agent;
let consul: Agent;
let alice: string;
let bob: string;
let admin: string;

beforeAll(async () => {
  configFile = join(tempDataDir(), 'agent.json');
  writeFileSync(configFile, JSON.stringify({ auth: { jwt_secret: secret } }));
  [seed, consul] = await Promise.all([
    startAgent({ args: ['--config-file', configFile] }),
    startAgent({ args: ['--config-file', configFile, '--dialect', 'consul'] }),
  ]);
  alice = await mint('alice', lockRules);
  bob = await mint('bob', lockRules);
  admin = await mint('admin', [{ resource: 'key', prefix: '', access: 'write' }, { resource: 'session', prefix: '', access: 'write' }]);
});
afterAll(async () => {
  for (const a of [seed, consul]) { await a?.stop(); a?.cleanup(); }
});

async function createSession(agent: Agent, token: string, body: Record<string, unknown> = {}): Promise<string> {
  const r = await call(agent.url, 'PUT', '/v1/session/create', body, bearer(token));
  expect(r.status, r.text).toBe(200);
  return r.json().ID;
}

async function holder(agent: Agent, key: string): Promise<string | undefined> {
  const r = await call(agent.url, 'GET', `/v1/kv/${key}`, undefined, bearer(admin));
  expect(r.status, r.text).toBe(200);
  return r.json()[0].Session;
}

describe('session owners', () => {
  test('another identity with the same rules cannot renew, destroy, acquire or release with the session', async () => {
    const id = await createSession(seed, alice, { TTL: '60s' });
    expectError(await call(seed.url, 'PUT', `/v1/session/renew/${id}`, undefined, bearer(bob)), 403, 1004);
    expectError(await call(seed.url, 'PUT', `/v1/session/destroy/${id}`, undefined, bearer(bob)), 403, 1004);
    expectError(await call(seed.url, 'PUT', `/v1/kv/locks/a?acquire=${id}`, 'b', bearer(bob)), 403, 1004);
    expectError(await call(seed.url, 'PUT', `/v1/kv/locks/a?acquire=${id}&wait=1s`, 'b', bearer(bob)), 403, 1004);
    // Nothing changed: the session lives and the key was never taken.
    expect((await call(seed.url, 'GET', `/v1/session/info/${id}`, undefined, bearer(alice))).json()).toHaveLength(1);
    expectError(await call(seed.url, 'GET', '/v1/kv/locks/a', undefined, bearer(alice)), 404, 1006);

    // The owner may do all of it.
    expect((await call(seed.url, 'PUT', `/v1/kv/locks/a?acquire=${id}`, 'a', bearer(alice))).text).toBe('true');
    expectError(await call(seed.url, 'PUT', `/v1/kv/locks/a?release=${id}`, undefined, bearer(bob)), 403, 1004);
    expect(await holder(seed, 'locks/a')).toBe(id);
    expect((await call(seed.url, 'PUT', `/v1/session/renew/${id}`, undefined, bearer(alice))).status).toBe(200);
    expect((await call(seed.url, 'PUT', `/v1/kv/locks/a?release=${id}`, undefined, bearer(alice))).text).toBe('true');
    expect((await call(seed.url, 'PUT', `/v1/session/destroy/${id}`, undefined, bearer(alice))).text).toBe('true');
  });

  test('the seed dialect shows the owner; the consul dialect keeps Consul\'s fields and refuses as Consul does', async () => {
    const id = await createSession(seed, alice);
    const [shown] = (await call(seed.url, 'GET', `/v1/session/info/${id}`, undefined, bearer(alice))).json();
    expect(shown.Owner).toBe('alice');
    expect(Object.keys(shown).slice(-3)).toEqual(['Owner', 'CreateIndex', 'ModifyIndex']);

    const cid = await createSession(consul, alice);
    const [plain] = (await call(consul.url, 'GET', `/v1/session/info/${cid}`, undefined, bearer(alice))).json();
    expect(Object.keys(plain)).toEqual(['ID', 'Name', 'Node', 'LockDelay', 'Behavior', 'TTL', 'NodeChecks', 'ServiceChecks', 'CreateIndex', 'ModifyIndex']);
    const refused = await call(consul.url, 'PUT', `/v1/session/renew/${cid}`, undefined, bearer(bob));
    expect([refused.status, refused.text]).toEqual([403, 'Permission denied']);
  });

  test('an operator (operator write on "") may renew, release with and destroy another identity\'s session', async () => {
    const operator = await mint('ops', [{ resource: 'operator', prefix: '', access: 'write' }, ...lockRules]);
    const id = await createSession(seed, alice, { TTL: '60s' });
    expect((await call(seed.url, 'PUT', `/v1/kv/locks/op?acquire=${id}`, 'a', bearer(alice))).text).toBe('true');
    expect((await call(seed.url, 'PUT', `/v1/session/renew/${id}`, undefined, bearer(operator))).status).toBe(200);
    expect((await call(seed.url, 'PUT', `/v1/kv/locks/op?release=${id}`, undefined, bearer(operator))).text).toBe('true');
    expect((await call(seed.url, 'PUT', `/v1/session/destroy/${id}`, undefined, bearer(operator))).text).toBe('true');
    expect((await call(seed.url, 'GET', `/v1/session/info/${id}`, undefined, bearer(alice))).json()).toEqual([]);
  });

  test('an unknown session answers as without authentication; a token with no session write is refused first', async () => {
    const unknown = '00000000-0000-4000-8000-000000000000';
    expectError(await call(seed.url, 'PUT', `/v1/session/renew/${unknown}`, undefined, bearer(alice)), 404, 1006);
    expect((await call(seed.url, 'PUT', `/v1/session/destroy/${unknown}`, undefined, bearer(alice))).text).toBe('true');
    expectError(await call(seed.url, 'PUT', `/v1/kv/locks/u?acquire=${unknown}`, 'x', bearer(alice)), 400, 1007);
    const keysOnly = await mint('k', [{ resource: 'key', prefix: '', access: 'write' }]);
    expectError(await call(seed.url, 'PUT', `/v1/session/renew/${unknown}`, undefined, bearer(keysOnly)), 403, 1004);
    expectError(await call(seed.url, 'PUT', `/v1/session/destroy/${unknown}`, undefined, bearer(keysOnly)), 403, 1004);
  });

  test('the owner survives log replay (SIGKILL) and snapshot restore (SIGTERM)', async () => {
    const agent = await startAgent({ args: ['--config-file', configFile] });
    const dataDir = agent.dataDir;
    let current = agent;
    try {
      const id = await createSession(current, alice);
      for (const restart of ['kill9', 'stop'] as const) {
        await current[restart]();
        current = await startAgent({ dataDir, args: ['--config-file', configFile] });
        expectError(await call(current.url, 'PUT', `/v1/session/renew/${id}`, undefined, bearer(bob)), 403, 1004);
        expect((await call(current.url, 'PUT', `/v1/session/renew/${id}`, undefined, bearer(alice))).status).toBe(200);
      }
    } finally {
      await current.stop();
      agent.cleanup();
    }
  });
});

describe('session rules name nodes', () => {
  // The harness names the agent's node node1.
  test('create needs write on the session\'s node, not on ""', async () => {
    const onNode = await mint('n', [{ resource: 'session', prefix: 'node', access: 'write' }]);
    const elsewhere = await mint('e', [{ resource: 'session', prefix: 'web-', access: 'write' }]);
    const id = await createSession(seed, onNode);
    expectError(await call(seed.url, 'PUT', '/v1/session/create', {}, bearer(elsewhere)), 403, 1004);
    expectError(await call(seed.url, 'PUT', '/v1/session/create', { Node: 'node1' }, bearer(elsewhere)), 403, 1004);
    expect((await call(seed.url, 'PUT', `/v1/session/renew/${id}`, undefined, bearer(onNode))).status).toBe(200);
    expect((await call(seed.url, 'PUT', `/v1/session/destroy/${id}`, undefined, bearer(onNode))).text).toBe('true');
  });

  test('a rule on the session id grants nothing; info and lists show only sessions on readable nodes', async () => {
    const id = await createSession(seed, alice);
    // Same subject, so ownership is not what refuses it: the rule names an id, not a node.
    const byId = await mint('alice', [{ resource: 'session', prefix: id.slice(0, 8), access: 'write' }]);
    // It may not read node1's sessions: the session is unknown to it, as to info.
    expectError(await call(seed.url, 'PUT', `/v1/session/renew/${id}`, undefined, bearer(byId)), 404, 1006);
    expect((await call(seed.url, 'PUT', `/v1/session/destroy/${id}`, undefined, bearer(byId))).text).toBe('true');
    expect((await call(seed.url, 'GET', `/v1/session/info/${id}`, undefined, bearer(byId))).json()).toEqual([]);
    expect((await call(seed.url, 'GET', `/v1/session/info/${id}`, undefined, bearer(alice))).json()).toHaveLength(1);
    // One that may read them but not write them is refused, naming the node.
    const reader = await mint('alice', [{ resource: 'session', prefix: '', access: 'read' }, { resource: 'session', prefix: id.slice(0, 8), access: 'write' }]);
    const refused = await call(seed.url, 'PUT', `/v1/session/renew/${id}`, undefined, bearer(reader));
    expectError(refused, 403, 1004);
    expect(refused.text).toContain('node1');

    const otherNode = await mint('o', [{ resource: 'session', prefix: 'web-', access: 'read' }]);
    expect((await call(seed.url, 'GET', `/v1/session/info/${id}`, undefined, bearer(otherNode))).json()).toEqual([]);
    expect((await call(seed.url, 'GET', '/v1/session/list', undefined, bearer(otherNode))).json()).toEqual([]);
    expectError(await call(seed.url, 'GET', '/v1/session/node/node1', undefined, bearer(otherNode)), 403, 1004);

    const thisNode = await mint('t', [{ resource: 'session', prefix: 'node1', access: 'read' }]);
    expect((await call(seed.url, 'GET', `/v1/session/info/${id}`, undefined, bearer(thisNode))).json()[0].ID).toBe(id);
    expect((await call(seed.url, 'GET', '/v1/session/list', undefined, bearer(thisNode))).json().map((s: { ID: string }) => s.ID)).toContain(id);
    expect((await call(seed.url, 'GET', '/v1/session/node/node1', undefined, bearer(thisNode))).json().map((s: { ID: string }) => s.ID)).toContain(id);
  });
});

describe('a session on a node the token may not read is unknown to renew and destroy', () => {
  test('they answer as for an unknown id, naming no node, and change nothing', async () => {
    const nodeAdmin = await mint('node-admin', [{ resource: 'node', prefix: '', access: 'write' }]);
    expect((await call(seed.url, 'PUT', '/v1/catalog/register', { Node: 'hidden-vault-7', Address: '10.3.3.3' }, bearer(nodeAdmin))).status).toBe(200);
    const id = await createSession(seed, admin, { Node: 'hidden-vault-7', NodeChecks: [], TTL: '60s' });
    const eve = await mint('eve', [{ resource: 'session', prefix: 'web-', access: 'write' }]);
    const unknown = '00000000-0000-4000-8000-00000000000f';
    const renew = await call(seed.url, 'PUT', `/v1/session/renew/${id}`, undefined, bearer(eve));
    expectError(renew, 404, 1006);
    expect(renew.text).not.toContain('hidden-vault');
    const renewUnknown = await call(seed.url, 'PUT', `/v1/session/renew/${unknown}`, undefined, bearer(eve));
    expect(renew.text.replaceAll(id, '<id>')).toBe(renewUnknown.text.replaceAll(unknown, '<id>'));
    const destroy = await call(seed.url, 'PUT', `/v1/session/destroy/${id}`, undefined, bearer(eve));
    expect([destroy.status, destroy.text]).toEqual([200, 'true']);
    const info = await call(seed.url, 'GET', `/v1/session/info/${id}`, undefined, bearer(admin));
    expect(info.json()).toMatchObject([{ ID: id, Node: 'hidden-vault-7' }]);
  });
});

describe('lock queues and session timers', () => {
  test('a session hidden from session/info is unknown to its timer and nameless in a key\'s queue', async () => {
    const holderId = await createSession(seed, alice, { Name: 'holder' });
    const waiterId = await createSession(seed, bob, { Name: 'secret-waiter' });
    expect((await call(seed.url, 'PUT', `/v1/kv/locks/q?acquire=${holderId}`, 'x', bearer(alice))).text).toBe('true');
    // A queued acquire waits for the key; the queue then holds bob's session.
    const waiting = call(seed.url, 'PUT', `/v1/kv/locks/q?acquire=${waiterId}&wait=30s`, 'y', bearer(bob));
    const keyReader = await mint('reader', [{ resource: 'key', prefix: 'locks/', access: 'read' }]);
    let queue: { Waiters: { Session: string; Name: string; Node: string }[] } = { Waiters: [] };
    for (let i = 0; i < 100 && queue.Waiters.length === 0; i++) {
      await sleep(20);
      queue = (await call(seed.url, 'GET', '/v1/lock/queue/locks/q', undefined, bearer(keyReader))).json();
    }
    expect(queue.Waiters).toEqual([{ Session: waiterId, Name: '', Node: '' }]);
    const seer = await mint('seer', [{ resource: 'key', prefix: 'locks/', access: 'read' }, { resource: 'session', prefix: '', access: 'read' }]);
    expect((await call(seed.url, 'GET', '/v1/lock/queue/locks/q', undefined, bearer(seer))).json().Waiters).toEqual([{ Session: waiterId, Name: 'secret-waiter', Node: 'node1' }]);
    // The timer of a session it may not see answers as for an id that does not exist.
    const hidden = await call(seed.url, 'GET', `/v1/session/timer/${waiterId}`, undefined, bearer(keyReader));
    const unknown = await call(seed.url, 'GET', '/v1/session/timer/00000000-0000-0000-0000-000000000000', undefined, bearer(keyReader));
    expectError(hidden, 404, 1006);
    expect(hidden.json().message).toBe(unknown.json().message.replace('00000000-0000-0000-0000-000000000000', waiterId));
    expect((await call(seed.url, 'GET', `/v1/session/timer/${waiterId}`, undefined, bearer(seer))).json().ID).toBe(waiterId);
    // The keys a session holds, with their LockIndex, as far as the token may read them.
    expect((await call(seed.url, 'GET', `/v1/session/timer/${holderId}`, undefined, bearer(seer))).json().Holds).toEqual([{ Key: 'locks/q', LockIndex: 1 }]);
    const elsewhere = await mint('elsewhere', [{ resource: 'key', prefix: 'other/', access: 'read' }, { resource: 'session', prefix: '', access: 'read' }]);
    expect((await call(seed.url, 'GET', `/v1/session/timer/${holderId}`, undefined, bearer(elsewhere))).json().Holds).toEqual([]);
    expect((await call(seed.url, 'PUT', `/v1/kv/locks/q?release=${holderId}`, undefined, bearer(alice))).text).toBe('true');
    expect((await waiting).text).toBe('true');
  });
});

describe('the stream\'s sessions topic', () => {
  /** Subscribes to `sessions` for each key on one stream; resolves with each subscription's first answer. */
  async function subscribe(token: string, keys: string[]): Promise<any[]> {
    const ws = new WebSocket(`ws://127.0.0.1:${new URL(seed.url).port}/v1/stream`, ['registry.stream.v1'], { headers: bearer(token) });
    const msgs: any[] = [];
    ws.on('message', (d) => msgs.push(JSON.parse(d.toString())));
    await new Promise((resolve, reject) => { ws.once('open', resolve); ws.once('error', reject); });
    try {
      keys.forEach((key, i) => ws.send(JSON.stringify({ op: 'subscribe', id: `s${i}`, topic: 'sessions', key })));
      const answers: any[] = [];
      for (let i = 0; i < keys.length; i++) {
        let found: any;
        for (let tries = 0; tries < 500 && found === undefined; tries++) {
          found = msgs.find((m) => m.id === `s${i}` && (m.type === 'end_of_snapshot' || m.type === 'error'));
          if (found === undefined) await sleep(20);
        }
        answers.push({ end: found, items: msgs.filter((m) => m.id === `s${i}` && m.type !== 'end_of_snapshot') });
      }
      return answers;
    } finally {
      ws.close();
    }
  }

  test('every node\'s sessions need read on all of them; the items carry the owner', async () => {
    const id = await createSession(seed, alice);
    const reader = await mint('sr', [{ resource: 'session', prefix: '', access: 'read' }, { resource: 'agent', prefix: '', access: 'read' }]);
    const partial = await mint('sp', [
      { resource: 'session', prefix: '', access: 'read' }, { resource: 'session', prefix: 'node1', access: 'deny' },
      { resource: 'agent', prefix: '', access: 'read' },
    ]);
    const [all] = await subscribe(reader, ['']);
    expect(all.end.type).toBe('end_of_snapshot');
    expect(JSON.stringify(all.items)).toContain(`"Owner":"alice"`);
    expect(JSON.stringify(all.items)).toContain(id);
    const denied = await subscribe(partial, ['', 'node1']);
    for (const d of denied) expect(d.end).toMatchObject({ type: 'error', code: 'forbidden' });
  });
});

describe('KV lists under a denied prefix', () => {
  test('?keys&separator= cuts after the ACL filter: a cut name shows only when a readable key lies under it', async () => {
    for (const k of ['cut/a', 'cut/open/y', 'cut/secret/x', 'deep/inner/k', 'deep/other/z']) {
      expect((await call(seed.url, 'PUT', `/v1/kv/${k}`, 'v', bearer(admin))).text).toBe('true');
    }
    const reader = await mint('r', [
      { resource: 'key', prefix: 'cut/', access: 'read' },
      { resource: 'key', prefix: 'cut/secret/x', access: 'deny' },
      { resource: 'key', prefix: 'deep/inner/k', access: 'read' },
    ]);
    const cut = await call(seed.url, 'GET', '/v1/kv/cut/?keys&separator=/', undefined, bearer(reader));
    expect(cut.json()).toEqual(['cut/a', 'cut/open/']);
    const deep = await call(seed.url, 'GET', '/v1/kv/deep/?keys&separator=/', undefined, bearer(reader));
    expect(deep.json()).toEqual(['deep/inner/']);
  });

  test('X-Consul-Index and blocking queries move only with writes the token may read', async () => {
    for (const k of ['pub/a', 'pub/hidden/x']) await call(seed.url, 'PUT', `/v1/kv/${k}`, 'v', bearer(admin));
    const reader = await mint('r', [
      { resource: 'key', prefix: 'pub/', access: 'read' },
      { resource: 'key', prefix: 'pub/hidden/', access: 'deny' },
    ]);
    const get = (path: string) => call(seed.url, 'GET', path, undefined, bearer(reader));
    // A whole subtree it may read, with nothing in it: its index is not the KV table's either.
    const vacantReader = await mint('v', [{ resource: 'key', prefix: 'vacant/', access: 'read' }]);
    const vacant = () => call(seed.url, 'GET', '/v1/kv/vacant/?recurse', undefined, bearer(vacantReader));
    const vacantBefore = await vacant();
    expect(vacantBefore.status).toBe(404);
    const before = await get('/v1/kv/pub/?recurse');
    const keysBefore = await get('/v1/kv/pub/?keys');
    const missingBefore = await get('/v1/kv/pub/none');
    expect(before.status).toBe(200);
    expect(missingBefore.status).toBe(404);

    await call(seed.url, 'PUT', '/v1/kv/pub/hidden/x', 'changed', bearer(admin));
    await call(seed.url, 'DELETE', '/v1/kv/pub/hidden/x', undefined, bearer(admin));
    await call(seed.url, 'PUT', '/v1/kv/elsewhere/y', 'v', bearer(admin));
    expect(index(await get('/v1/kv/pub/?recurse'))).toBe(index(before));
    expect(index(await get('/v1/kv/pub/?keys'))).toBe(index(keysBefore));
    expect(index(await get('/v1/kv/pub/none'))).toBe(index(missingBefore));
    expect(index(await vacant())).toBe(index(vacantBefore));
    // A token that may read every key sees the table move, as Consul reports it.
    const all = await call(seed.url, 'GET', '/v1/kv/pub/none', undefined, bearer(admin));
    expect(index(all)).toBeGreaterThan(index(missingBefore));

    // A blocking query sleeps through hidden writes and wakes for the first visible one.
    const blocked = get(`/v1/kv/pub/?recurse&index=${index(before)}&wait=30s`);
    await call(seed.url, 'PUT', '/v1/kv/pub/hidden/y', 'v', bearer(admin));
    const visible = await call(seed.url, 'PUT', '/v1/kv/pub/b', 'v', bearer(admin));
    expect(visible.text).toBe('true');
    const woke = await blocked;
    expect(woke.json().map((e: { Key: string }) => e.Key)).toEqual(['pub/a', 'pub/b']);
    expect(index(woke)).toBeGreaterThan(index(before));
  });
});
