// Goal: a resumed subscription (watch.md §4.4) gets what a subscriber that stayed connected was sent for the
// same changes, against started agents with real `ws` clients: with auth on, nothing of a service the
// token is denied (no delete of its instance or check, which a live subscriber never saw); without auth, no
// repeat of an unchanged serving status, no delete of an instance that came and went since the index, and
// still the delete of one the client held. A resume whose view was built after the index (list-then-watch)
// cannot tell which other services' items the client held: it is reset rather than sent their deletes.
import { afterAll, afterEach, beforeAll, describe, expect, test } from 'vitest';
import { TokenAuthority, type Rule } from '../../src/auth/index.ts';
import { call, client, startAgent, type Agent } from '../support/agent.ts';
import { opened, ok, query, settled, Stream, subprotocol, subscribe, type Msg } from '../support/stream.ts';
import { writeConfigFile } from '../support/stream-load.ts';

const secret = 'a-stream-resume-views-secret-long-enough';
const tokens = new TokenAuthority({ secret });
const mint = (rules: Rule[]) => tokens.mint({ subject: 'resume-views', rules, ttlSeconds: 600 });
const bearer = (token: string) => [subprotocol, `bearer.${Buffer.from(token).toString('base64url')}`];

let open: Agent;
let secured: Agent;

beforeAll(async () => {
  [open, secured] = await Promise.all([
    startAgent({ args: ['--config-file', writeConfigFile({ stream_bookmark_interval: '1s' })] }),
    startAgent({ args: ['--config-file', writeConfigFile({ stream_bookmark_interval: '1s', auth: { jwt_secret: secret } })] }),
  ]);
});
afterAll(async () => {
  for (const a of [open, secured]) { await a?.stop(); a?.cleanup(); }
});
afterEach(() => {
  for (const s of [...opened]) s.end();
});

/** The item events of messages (events, and the events of batches), as [op, key]. */
function events(msgs: Msg[]): [string, string][] {
  return msgs.flatMap((m) => (m.type === 'batch' ? m.events : m.type === 'event' ? [m] : [])).map((e: Msg) => [e.op, e.key]);
}

/** Net effect per key of events in order (what a client applying them ends up changing), sorted. */
function net(list: [string, string][], heldBefore: Set<string>): [string, string][] {
  const last = new Map<string, string>();
  for (const [op, key] of list) last.set(key, op);
  return [...last].filter(([key, op]) => op === 'upsert' || heldBefore.has(key)).map(([key, op]) => [op, key] as [string, string]).sort();
}

describe('with auth on: a resume shows nothing a live subscriber of the same view was not sent', () => {
  test('a change of a denied service only: the live and the resumed subscriber get nothing of it', async () => {
    const admin = { authorization: `Bearer ${await mint([
      { resource: 'service', prefix: '', access: 'write' }, { resource: 'node', prefix: '', access: 'write' },
      { resource: 'agent', prefix: '', access: 'write' }, { resource: 'check', prefix: '', access: 'write' },
    ])}` };
    const reader = await mint([
      { resource: 'service', prefix: 'stable', access: 'read' }, { resource: 'service', prefix: 'topsecret', access: 'deny' },
      { resource: 'node', prefix: '', access: 'read' },
    ]);
    const put = async (path: string, body?: unknown) => ok(await call(secured.url, 'PUT', path, body, admin), `PUT ${path}`);
    await put('/v1/agent/service/register', { Name: 'stable', ID: 'stable1', Check: { TTL: '10m', Status: 'passing' } });
    await put('/v1/agent/service/register', { Name: 'topsecret', ID: 'topsecret-db-prod-7', Check: { TTL: '10m' } });
    const asReader = { authorization: `Bearer ${reader}` };
    const listed = Number((await call(secured.url, 'GET', '/v1/health/service/stable?passing', undefined, asReader)).headers.get('x-consul-index'));

    const live = await Stream.open(secured, bearer(reader));
    const h = await subscribe(live, { id: 'h', topic: 'service_health', key: 'stable' });
    const c = await subscribe(live, { id: 'c', topic: 'service_checks', key: 'stable' });
    const index = Math.max(h.end!.index, c.end!.index);
    const epoch = h.subscribed.epoch;
    const from = live.mark;
    await put('/v1/agent/check/pass/service:topsecret-db-prod-7');
    await put('/v1/agent/check/fail/service:topsecret-db-prod-7');
    expect(await settled(live, from, 'h')).toEqual([]);
    expect(live.since(from, 'c')).toEqual([]);

    const again = await Stream.open(secured, bearer(reader));
    const mark = again.mark;
    for (const id of ['h', 'c']) {
      const r = await subscribe(again, { id, topic: id === 'h' ? 'service_health' : 'service_checks', key: 'stable', index, epoch });
      expect(r.subscribed).toMatchObject({ resumed: true });
    }
    const got = [...await settled(again, mark, 'h'), ...again.since(mark, 'c')];
    expect(got.map((m) => m.type)).toEqual(['subscribed', 'subscribed']);
    expect(again.raw.join('\n')).not.toContain('topsecret');

    // A view built after the index (an HTTP list's index) cannot tell which instances the client held: a reset and a snapshot.
    const ltw = await subscribe(again, { id: 'p', topic: 'service_health', key: 'stable', filter: { passingOnly: true }, index: listed, epoch });
    expect(ltw.reset).toEqual({ type: 'reset', id: 'p', reason: 'index_too_old' });
    expect(ltw.keys).toEqual(['node1/stable1']);
    expect(again.raw.join('\n')).not.toContain('topsecret');
    expect((await call(secured.url, 'GET', '/v1/health/service/topsecret', undefined, asReader)).status).toBe(403);
  });
});

describe('without auth: a resume replays exactly what the view sent', () => {
  const c = () => client(open);
  const register = async (name: string, id: string, status = 'passing') =>
    ok(await c().put('/v1/agent/service/register', { Name: name, ID: id, Port: 8080, Check: { TTL: '10m', Status: status } }), `register ${id}`);

  test('serving_status: another service changing is no repeat of an unchanged status', async () => {
    await register('rv-steady', 'rv-steady-1');
    await register('rv-other', 'rv-other-1');
    const live = await Stream.open(open);
    const sub = await subscribe(live, { id: 's', topic: 'serving_status', key: 'rv-steady' });
    const from = live.mark;
    ok(await c().put('/v1/agent/check/fail/service:rv-other-1'), 'fail other');
    ok(await c().put('/v1/agent/check/pass/service:rv-other-1'), 'pass other');
    expect(await settled(live, from, 's')).toEqual([]);

    const again = await Stream.open(open);
    const mark = again.mark;
    const r = await subscribe(again, { id: 's', topic: 'serving_status', key: 'rv-steady', index: sub.end!.index, epoch: sub.subscribed.epoch });
    expect(r.subscribed).toMatchObject({ resumed: true });
    expect((await settled(again, mark, 's')).map((m) => m.type)).toEqual(['subscribed']);
  });

  test('service_health: an instance that came and went is not replayed, one held at the index is deleted, as the live view had it', async () => {
    await register('rv-web', 'rv-web-1');
    await register('rv-web', 'rv-web-2');
    await register('rv-db', 'rv-db-1');
    const live = await Stream.open(open);
    const sub = await subscribe(live, { id: 'w', topic: 'service_health', key: 'rv-web' });
    const held = new Set(sub.keys);
    const from = live.mark;
    await register('rv-web', 'rv-web-3');
    ok(await c().put('/v1/agent/service/deregister/rv-web-3'), 'deregister rv-web-3');
    ok(await c().put('/v1/agent/service/deregister/rv-web-2'), 'deregister rv-web-2');
    ok(await c().put('/v1/agent/check/fail/service:rv-web-1'), 'fail rv-web-1');
    ok(await c().put('/v1/agent/check/fail/service:rv-db-1'), 'fail rv-db-1');
    ok(await c().put('/v1/agent/service/deregister/rv-db-1'), 'deregister rv-db-1');
    const liveEvents = events(await settled(live, from, 'w'));
    expect(liveEvents.some(([, key]) => key.endsWith('/rv-web-3'))).toBe(true);

    const again = await Stream.open(open);
    const mark = again.mark;
    const r = await subscribe(again, { id: 'w', topic: 'service_health', key: 'rv-web', index: sub.end!.index, epoch: sub.subscribed.epoch });
    expect(r.subscribed).toMatchObject({ resumed: true });
    const replayed = events(await settled(again, mark, 'w'));
    expect(replayed.sort()).toEqual([['delete', 'node1/rv-web-2'], ['upsert', 'node1/rv-web-1']]);
    expect(replayed.sort()).toEqual(net(liveEvents, held));
    const http = await query(c(), '/v1/health/service/rv-web');
    expect(http.body.map((e: any) => e.Service.ID)).toEqual(['rv-web-1']);
  });
});
