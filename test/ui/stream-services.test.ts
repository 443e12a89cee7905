// Goal: the stream subject the dashboard lists services with — `service_health` with the key "" — against
// real agents and a `ws` client: a snapshot of every service's health entries in the HTTP shape, ordered
// by service name, node and service id; live upserts for a registration, a check change and a node check
// (every service of that node), a delete for a deregistration; and, with authentication on, only a token
// that may read every service may subscribe to it.
import { describe, expect, test } from 'vitest';
import WebSocket from 'ws';
import { TokenAuthority } from '../../src/auth/index.ts';
import { client, type Agent, withAgent } from '../support/agent.ts';

type Msg = Record<string, any> & { type: string };

/** Bound of every wait; generous because the machine's two cores are shared with other test runs. */
const waitMs = 10_000;

/** A `ws` connection that keeps every message; `until` waits (bounded) for one that matches. */
async function open(agent: Agent, token?: string): Promise<{ ws: WebSocket; msgs: Msg[]; until(match: (m: Msg) => boolean, what: string): Promise<Msg> }> {
  const port = new URL(agent.url).port;
  const ws = new WebSocket(`ws://127.0.0.1:${port}/v1/stream`, ['registry.stream.v1'], token === undefined ? {} : { headers: { Authorization: `Bearer ${token}` } });
  const msgs: Msg[] = [];
  ws.on('message', (d) => msgs.push(JSON.parse(d.toString()) as Msg));
  let closed = 'open';
  ws.on('close', (code, reason) => { closed = `closed ${code} ${reason.toString()}`; });
  await new Promise<void>((res, rej) => {
    ws.once('open', () => res());
    ws.once('error', rej);
  });
  const until = async (match: (m: Msg) => boolean, what: string): Promise<Msg> => {
    const deadline = Date.now() + waitMs;
    for (;;) {
      const found = msgs.find(match);
      if (found !== undefined) return found;
      if (closed !== 'open' || Date.now() > deadline) {
        throw new Error(`no ${what} ${closed !== 'open' ? 'before the connection ' + closed : `within ${waitMs} ms`}; got ${JSON.stringify(msgs).slice(0, 2000)}; agent output:\n${agent.output().slice(-2000)}`);
      }
      await new Promise((r) => setTimeout(r, 20));
    }
  };
  return { ws, msgs, until };
}

describe('service_health with the "" subject', () => {
  let agent: Agent;
  let c: ReturnType<typeof client>;

  withAgent((a) => {
    agent = a;
    c = client(a);
  });

  test('snapshot of every service in the HTTP shape and order, then upserts and deletes as things change', async () => {
    for (const [name, id] of [['web', 'web-2'], ['api', 'api-1'], ['web', 'web-1']] as const) {
      expect((await c.put('/v1/agent/service/register', { Name: name, ID: id, Check: { TTL: '10m' } })).status).toBe(200);
    }
    const s = await open(agent);
    try {
      s.ws.send(JSON.stringify({ op: 'subscribe', id: 'all', topic: 'service_health', key: '' }));
      const end = await s.until((m) => m.type === 'end_of_snapshot', 'end_of_snapshot');
      const snapshot = s.msgs.find((m) => m.type === 'snapshot')!;
      expect(snapshot.keys).toEqual(['node1/api-1', 'node1/web-1', 'node1/web-2']);
      const web = (await c.get('/v1/health/service/web')).json();
      const api = (await c.get('/v1/health/service/api')).json();
      expect(snapshot.items).toEqual([...api, ...web]);
      expect(end.index).toBe(snapshot.index);

      expect((await c.put('/v1/agent/service/register', { Name: 'db', ID: 'db-1' })).status).toBe(200);
      const added = await s.until((m) => m.type === 'event' && m.key === 'node1/db-1', 'the new service');
      expect(added).toMatchObject({ op: 'upsert', value: (await c.get('/v1/health/service/db')).json()[0] });

      expect((await c.put('/v1/agent/check/fail/service:web-1?note=down')).status).toBe(200);
      const failed = await s.until((m) => m.type === 'event' && m.key === 'node1/web-1' && m.value?.Checks?.some((k: any) => k.Status === 'critical'), 'web-1 critical');
      expect(failed.op).toBe('upsert');

      // A node-level check touches every service of the node: one batch at one index.
      expect((await c.put('/v1/agent/check/register', { Name: 'load', CheckID: 'load', TTL: '10m' })).status).toBe(200);
      const batch = await s.until((m) => m.type === 'batch' && m.events.some((e: any) => e.value?.Checks?.some((k: any) => k.CheckID === 'load')), 'the node check batch');
      expect(batch.events.map((e: any) => e.key).sort()).toEqual(['node1/api-1', 'node1/db-1', 'node1/web-1', 'node1/web-2']);

      expect((await c.put('/v1/agent/service/deregister/web-2')).status).toBe(200);
      await s.until((m) => m.type === 'event' && m.op === 'delete' && m.key === 'node1/web-2', 'the delete of web-2');
    } finally {
      s.ws.terminate();
    }
  });

  test('kv_prefix with lockedOnly: only held keys; an acquire is an upsert, a release a delete, unlocked writes nothing', async () => {
    const sid = await c.session({ Name: 'holder' });
    expect((await c.put(`/v1/kv/locks/a?acquire=${sid}`, 'x')).text).toBe('true');
    expect((await c.put('/v1/kv/locks/plain', 'y')).status).toBe(200);
    const s = await open(agent);
    try {
      s.ws.send(JSON.stringify({ op: 'subscribe', id: 'locks', topic: 'kv_prefix', key: '', filter: { lockedOnly: true } }));
      s.ws.send(JSON.stringify({ op: 'subscribe', id: 'every', topic: 'kv_prefix', key: 'locks/' }));
      await s.until((m) => m.type === 'end_of_snapshot' && m.id === 'locks', 'the locks snapshot');
      await s.until((m) => m.type === 'end_of_snapshot' && m.id === 'every', 'the plain snapshot');
      const snapshot = s.msgs.find((m) => m.type === 'snapshot' && m.id === 'locks')!;
      expect(snapshot.keys).toEqual(['locks/a']);
      expect(snapshot.items[0]).toMatchObject({ Key: 'locks/a', Session: sid, LockIndex: 1 });
      // The unfiltered view of the same keys has both: the filter, not the prefix, left one out.
      expect(s.msgs.find((m) => m.type === 'snapshot' && m.id === 'every')!.keys).toEqual(['locks/a', 'locks/plain']);

      expect((await c.put('/v1/kv/locks/plain', 'z')).status).toBe(200);
      expect((await c.put(`/v1/kv/locks/b?acquire=${sid}`, 'x')).text).toBe('true');
      const acquired = await s.until((m) => m.id === 'locks' && m.type === 'event' && m.key === 'locks/b', 'the acquire');
      expect(acquired).toMatchObject({ op: 'upsert', value: { Session: sid } });
      expect((await c.put(`/v1/kv/locks/a?release=${sid}`)).text).toBe('true');
      await s.until((m) => m.id === 'locks' && m.type === 'event' && m.key === 'locks/a' && m.op === 'delete', 'the release as a delete');
      // The plain write reached the unfiltered view but never the locks view.
      await s.until((m) => m.id === 'every' && m.type === 'event' && m.key === 'locks/plain', 'the plain write on the unfiltered view');
      expect(s.msgs.filter((m) => m.id === 'locks' && m.key === 'locks/plain')).toEqual([]);
    } finally {
      s.ws.terminate();
    }
  });
});

/** The first answer to one service_health subscription over a connection opened with `token`. */
async function answer(agent: Agent, token: string, key: string): Promise<Msg> {
  const s = await open(agent, token);
  try {
    s.ws.send(JSON.stringify({ op: 'subscribe', id: 'x', topic: 'service_health', key }));
    return await s.until((m) => m.id === 'x', 'an answer');
  } finally {
    s.ws.terminate();
  }
}

describe('with authentication', () => {
  const secret = 'a-stream-subject-test-secret-long-enough-0123';
  let agent: Agent;

  withAgent((a) => { agent = a; }, { env: { ROSTER_AUTH_SECRET: secret } });

  test('needs read on every service: a token limited to one service is refused, one for all is not', async () => {
    const authority = new TokenAuthority({ secret });
    const nodes = { resource: 'node', prefix: '', access: 'read' } as const;
    const one = await authority.mint({ subject: 'one', rules: [{ resource: 'service', prefix: 'web', access: 'read' }, nodes], ttlSeconds: 600 });
    const all = await authority.mint({ subject: 'all', rules: [{ resource: 'service', prefix: '', access: 'read' }, nodes], ttlSeconds: 600 });
    expect(await answer(agent, one, '')).toMatchObject({ type: 'error', code: 'forbidden' });
    expect(await answer(agent, one, 'web')).toMatchObject({ type: 'subscribed' });
    expect(await answer(agent, all, '')).toMatchObject({ type: 'subscribed' });
  });

  test('needs read on every node too, since instances name their nodes', async () => {
    const authority = new TokenAuthority({ secret });
    const noNodes = await authority.mint({ subject: 'nn', rules: [{ resource: 'service', prefix: '', access: 'read' }], ttlSeconds: 600 });
    const fenced = await authority.mint({
      subject: 'fn', ttlSeconds: 600,
      rules: [{ resource: 'service', prefix: '', access: 'read' }, { resource: 'node', prefix: '', access: 'read' }, { resource: 'node', prefix: 'db', access: 'deny' }],
    });
    for (const token of [noNodes, fenced]) expect(await answer(agent, token, 'web')).toMatchObject({ type: 'error', code: 'forbidden' });
  });

  test('every authenticated connection stays open to answer (the upgrade after the token check is not corked)', async () => {
    // uWebSockets.js 20.x closes (1006) about 1 in 15 sockets upgraded after an await inside cork(); the
    // stream upgrades outside cork. 75 in a row must all answer.
    const all = await new TokenAuthority({ secret }).mint({
      subject: 'all', rules: [{ resource: 'service', prefix: '', access: 'read' }, { resource: 'node', prefix: '', access: 'read' }], ttlSeconds: 600,
    });
    const answers: string[] = [];
    for (let i = 0; i < 75; i++) answers.push((await answer(agent, all, 'web')).type);
    expect(answers.filter((t) => t !== 'subscribed')).toEqual([]);
  });
});
