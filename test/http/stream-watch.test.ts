// Goal: the WebSocket stream on /v1/stream (watch.md §4.4) with real `ws` clients: serving_status, list-then-watch,
// resume and reset, and session invalidations arriving as one batch.
import { describe, expect, test } from 'vitest';
import { client, startAgent, type Agent } from '../support/in-process.ts';
import { type Client, Stream, subscribe, settled, ok, query, refused, registerService, setCheck, kvPut, bulkWrites , streamSuite } from '../support/stream.ts';

let agent: Agent;
let c: Client;

streamSuite(startAgent, (a) => {
  agent = a;
  c = client(a);
});

describe('serving_status (the WebSocket twin of Watch)', () => {
  test('passing → critical → passing gives exactly SERVING, NOT_SERVING, SERVING', async () => {
    await registerService(c, 'ss-a', 'ss-a-1');
    const s = await Stream.open(agent);
    const sub = await subscribe(s, { id: 'w', topic: 'serving_status', key: 'ss-a' });
    expect(sub.keys).toEqual(['ss-a']);
    const from = s.mark;
    await setCheck(c, 'service:ss-a-1', 'fail');
    await s.next(from, (m) => m.id === 'w' && m.type === 'event', 'NOT_SERVING');
    await setCheck(c, 'service:ss-a-1', 'fail', 'still down'); // no change of status: nothing
    await setCheck(c, 'service:ss-a-1', 'pass');
    await registerService(c, 'ss-a', 'ss-a-2'); // a second healthy instance: still SERVING, nothing
    const events = await settled(s, from, 'w');
    const statuses = [...sub.items.map((i) => i.status), ...events.map((m) => m.value.status)];
    expect(statuses).toEqual(['SERVING', 'NOT_SERVING', 'SERVING']);
    expect(events.every((m) => m.type === 'event' && m.op === 'upsert' && m.key === 'ss-a')).toBe(true);
  });

  test('an unknown name is SERVICE_UNKNOWN, then its status once registered; "" is SERVING', async () => {
    const s = await Stream.open(agent);
    const sub = await subscribe(s, { id: 'u', topic: 'serving_status', key: 'ss-later' });
    expect(sub.items).toEqual([{ status: 'SERVICE_UNKNOWN' }]);
    const self = await subscribe(s, { id: 'self', topic: 'serving_status', key: '' });
    expect(self.items).toEqual([{ status: 'SERVING' }]);
    expect(self.keys).toEqual(['']);

    const from = s.mark;
    await registerService(c, 'ss-later', 'ss-later-1', 'critical');
    const first = await s.next(from, (m) => m.id === 'u' && m.type === 'event', 'the first status');
    expect(first.value).toEqual({ status: 'NOT_SERVING' });
    expect(first.index).toBe((await query(c, '/v1/health/service/ss-later')).index);
    const from2 = s.mark;
    await setCheck(c, 'service:ss-later-1', 'pass');
    expect((await s.next(from2, (m) => m.id === 'u' && m.type === 'event', 'SERVING')).value).toEqual({ status: 'SERVING' });
    const from3 = s.mark;
    ok(await c.put('/v1/agent/service/deregister/ss-later-1'), 'deregister');
    expect((await s.next(from3, (m) => m.id === 'u' && m.type === 'event', 'SERVICE_UNKNOWN')).value).toEqual({ status: 'SERVICE_UNKNOWN' });
    expect(s.since(from, 'self')).toEqual([]);
  });
});

describe('list-then-watch, resume and reset (§4.4)', () => {
  test('an X-Consul-Index from an HTTP list resumes with only later changes', async () => {
    await kvPut(c, 'ltw/a', '1');
    await registerService(c, 'ltw-svc', 'ltw-svc-1');
    const kv = await query(c, '/v1/kv/ltw/?recurse');
    const health = await query(c, '/v1/health/service/ltw-svc');
    await kvPut(c, 'elsewhere/ltw', 'a change outside both views');
    const s = await Stream.open(agent);
    const from = s.mark;
    const k = await subscribe(s, { id: 'kv', topic: 'kv_prefix', key: 'ltw/', index: kv.index });
    const h = await subscribe(s, { id: 'h', topic: 'service_health', key: 'ltw-svc', index: health.index });
    expect(k.subscribed).toMatchObject({ type: 'subscribed', id: 'kv', resumed: true, epoch: expect.any(String) });
    expect(k.subscribed.index).toBeGreaterThanOrEqual(kv.index);
    expect(h.subscribed).toMatchObject({ resumed: true });
    expect(await settled(s, from, 'kv')).toEqual([k.subscribed]);
    expect(s.since(from, 'h')).toEqual([h.subscribed]);

    const from2 = s.mark;
    await kvPut(c, 'ltw/b', '2');
    const ev = await s.next(from2, (m) => m.id === 'kv' && m.type === 'event', 'the later change');
    expect(ev).toMatchObject({ op: 'upsert', key: 'ltw/b', index: (await query(c, '/v1/kv/ltw/?recurse')).index });
    expect(ev.index).toBeGreaterThan(kv.index);
    expect(await settled(s, from2, 'kv')).toEqual([ev]);
  });

  test('resume after a gap: one batch with the newest state of each changed item and the deletes, nothing else', async () => {
    await kvPut(c, 'gap/a', 'a0');
    await kvPut(c, 'gap/b', 'b0');
    await kvPut(c, 'gap/c', 'c0');
    const first = await Stream.open(agent);
    const sub = await subscribe(first, { id: 'g', topic: 'kv_prefix', key: 'gap/' });
    const last = sub.end!.index;
    const epoch = sub.subscribed.epoch;
    first.end();

    await kvPut(c, 'gap/a', 'a1');
    await kvPut(c, 'gap/a', 'a2');
    ok(await c.del('/v1/kv/gap/b'), 'delete gap/b');
    await kvPut(c, 'gap/d', 'd0');
    await kvPut(c, 'nogap/x', 'outside the prefix');

    const s = await Stream.open(agent);
    const from = s.mark;
    const resumed = await subscribe(s, { id: 'g', topic: 'kv_prefix', key: 'gap/', index: last, epoch });
    expect(resumed.subscribed).toMatchObject({ resumed: true, epoch });
    const msgs = await settled(s, from, 'g');
    expect(msgs.map((m) => m.type)).toEqual(['subscribed', 'batch']);
    const batch = msgs[1]!;
    const http = await query(c, '/v1/kv/gap/?recurse');
    expect(batch.index).toBeGreaterThanOrEqual(http.index);
    const byKey = Object.fromEntries(batch.events.map((e: any) => [e.key, e]));
    expect(Object.keys(byKey).sort()).toEqual(['gap/a', 'gap/b', 'gap/d']);
    expect(batch.events).toHaveLength(3);
    expect(byKey['gap/a']).toEqual({ op: 'upsert', key: 'gap/a', value: http.body.find((e: any) => e.Key === 'gap/a') });
    expect(Buffer.from(byKey['gap/a'].value.Value, 'base64').toString()).toBe('a2');
    expect(byKey['gap/b']).toEqual({ op: 'delete', key: 'gap/b' });
    expect(byKey['gap/d']).toEqual({ op: 'upsert', key: 'gap/d', value: http.body.find((e: any) => e.Key === 'gap/d') });
  });

  test('resume without a gap: resumed, no replay', async () => {
    await kvPut(c, 'nogap2/a', 'a');
    const first = await Stream.open(agent);
    const sub = await subscribe(first, { id: 'n', topic: 'kv_prefix', key: 'nogap2/' });
    first.end();
    await kvPut(c, 'unrelated/nogap2', 'x');
    const s = await Stream.open(agent);
    const from = s.mark;
    const again = await subscribe(s, { id: 'n', topic: 'kv_prefix', key: 'nogap2/', index: sub.end!.index, epoch: sub.subscribed.epoch });
    expect(again.subscribed).toMatchObject({ resumed: true });
    expect(await settled(s, from, 'n')).toEqual([again.subscribed]);
  });

  test('a wrong epoch gives reset{epoch_changed} and a fresh snapshot', async () => {
    await kvPut(c, 'epoch/a', 'a');
    const s = await Stream.open(agent);
    const sub = await subscribe(s, { id: 'e', topic: 'kv_prefix', key: 'epoch/', index: 1, epoch: 'not-this-server' });
    expect(sub.subscribed).toMatchObject({ resumed: false });
    expect(sub.subscribed.epoch).not.toBe('not-this-server');
    expect(sub.reset).toEqual({ type: 'reset', id: 'e', reason: 'epoch_changed' });
    expect(sub.msgs.map((m) => m.type)).toEqual(['subscribed', 'reset', 'snapshot', 'end_of_snapshot']);
    expect(sub.items).toEqual((await query(c, '/v1/kv/epoch/?recurse')).body);
  });

  test('an index ahead of the server gives reset{index_ahead} and a fresh snapshot, with this epoch or none', async () => {
    await kvPut(c, 'ahead/a', 'a');
    const s = await Stream.open(agent);
    const first = await subscribe(s, { id: 'f0', topic: 'kv_prefix', key: 'ahead/' });
    const epoch = first.subscribed.epoch;
    for (const [id, resume] of [['f', {}], ['g', { epoch }]] as const) {
      const sub = await subscribe(s, { id, topic: 'kv_prefix', key: 'ahead/', index: 1_000_000_000, ...resume });
      expect(sub.subscribed).toMatchObject({ resumed: false, epoch });
      expect(sub.reset).toEqual({ type: 'reset', id, reason: 'index_ahead' });
      expect(sub.msgs.map((m) => m.type)).toEqual(['subscribed', 'reset', 'snapshot', 'end_of_snapshot']);
      expect(sub.items).toEqual((await query(c, '/v1/kv/ahead/?recurse')).body);
    }
  });

  test('an epoch that is not a string is refused bad_request; nothing is subscribed', async () => {
    const s = await Stream.open(agent);
    const first = await subscribe(s, { id: 'h0', topic: 'kv_prefix', key: 'epoch/' });
    for (const epoch of [7, null, true, {}, ['x']]) {
      const got = await refused(s, { id: 'h', topic: 'kv_prefix', key: 'epoch/', index: first.end!.index, epoch });
      expect(got).toMatchObject({ type: 'error', id: 'h', code: 'bad_request', message: expect.stringMatching(/^epoch must be a string/) });
    }
    // The id was never taken: the same subscription with a string epoch resumes.
    const again = await subscribe(s, { id: 'h', topic: 'kv_prefix', key: 'epoch/', index: first.end!.index, epoch: first.subscribed.epoch });
    expect(again.subscribed).toMatchObject({ resumed: true });
  });

  test('an index older than the ring (10000 changes) gives reset{index_too_old} and a fresh snapshot', async () => {
    const s0 = await Stream.open(agent);
    const start = await subscribe(s0, { id: 'r', topic: 'kv_prefix', key: 'ring/' });
    s0.end();
    // 10,100 changes (distinct values: an identical write changes nothing), 32 at a time.
    await bulkWrites(agent, 10_100, 32, (i) => ({ path: `/v1/kv/ring/${i % 100}`, body: `v${i}` }));
    const s = await Stream.open(agent);
    const sub = await subscribe(s, { id: 'r', topic: 'kv_prefix', key: 'ring/', index: start.end!.index, epoch: start.subscribed.epoch });
    expect(sub.subscribed).toMatchObject({ resumed: false, epoch: start.subscribed.epoch });
    expect(sub.reset).toEqual({ type: 'reset', id: 'r', reason: 'index_too_old' });
    expect(sub.msgs.map((m) => m.type).slice(0, 2)).toEqual(['subscribed', 'reset']);
    expect(sub.items).toEqual((await query(c, '/v1/kv/ring/?recurse')).body);
    expect(sub.items).toHaveLength(100);
  }, 30_000);
});

describe('session invalidation arrives as one batch', () => {
  for (const behavior of ['release', 'delete'] as const) {
    test(`destroy of a session holding 3 locks (Behavior ${behavior})`, async () => {
      const prefix = `inv-${behavior}/`;
      const session = await c.session({ Behavior: behavior, LockDelay: '0s' });
      for (const k of ['a', 'b', 'c']) await kvPut(c, `${prefix}${k}`, `value-${k}`, `?acquire=${session}`);
      const s = await Stream.open(agent);
      const sub = await subscribe(s, { id: 'l', topic: 'kv_prefix', key: prefix });
      expect(sub.items.map((e) => e.Session)).toEqual([session, session, session]);

      const from = s.mark;
      ok(await c.put(`/v1/session/destroy/${session}`), 'destroy');
      const msgs = await settled(s, from, 'l');
      expect(msgs.map((m) => m.type)).toEqual(['batch']);
      const batch = msgs[0]!;
      expect(batch.events.map((e: any) => e.key).sort()).toEqual([`${prefix}a`, `${prefix}b`, `${prefix}c`]);
      if (behavior === 'release') {
        const http = await query(c, `/v1/kv/${prefix}?recurse`);
        expect(batch.index).toBe(http.index);
        for (const e of batch.events) {
          expect(e.op).toBe('upsert');
          expect(e.value).not.toHaveProperty('Session');
          expect(e.value).toEqual(http.body.find((x: any) => x.Key === e.key));
        }
      } else {
        const r = await c.get(`/v1/kv/${prefix}?recurse`);
        expect(r.status).toBe(404);
        expect(batch.index).toBe(Number(r.headers.get('x-consul-index')));
        for (const e of batch.events) expect(e).toEqual({ op: 'delete', key: e.key });
      }
    });
  }
});
