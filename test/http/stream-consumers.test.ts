// Goal: the WebSocket stream on /v1/stream (watch.md §4.2, §4.5–4.7) against a really started agent with real `ws`
// clients: slow consumers closed with 4008, bookmarks, unsubscribe, errors, and close codes across SIGTERM and a
// restart over the same data dir.
import { writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { describe, expect, test } from 'vitest';
import { client, sleep, startAgent, type Agent } from '../support/agent.ts';
import { type Client, type Msg, Stream, subscribe, refused, settled, query, kvPut, bulkWrites , opened, streamSuite } from '../support/stream.ts';

let agent: Agent;
let c: Client;
let configDir: string;

streamSuite(startAgent, (a, dir) => {
  agent = a;
  c = client(a);
  configDir = dir;
});

describe('slow consumers (§4.6)', () => {
  /** Index order of what a reader got before it was closed: never backwards per subscription. */
  function expectIncreasing(msgs: Msg[]): void {
    let last = 0;
    for (const m of msgs) {
      if (m.type !== 'event' && m.type !== 'batch') continue;
      expect(m.index, `index went backwards: ${JSON.stringify({ type: m.type, index: m.index })}`).toBeGreaterThan(last);
      last = m.index;
    }
  }

  test('a stalled reader of large values is closed with 4008 "slow consumer"', async () => {
    const s = await Stream.open(agent);
    await subscribe(s, { id: 'slow', topic: 'kv_prefix', key: 'slow/' });
    const socket = (s.ws as any)._socket as import('node:net').Socket;
    socket.pause();
    const value = Buffer.alloc(64 * 1024, 'v');
    await bulkWrites(agent, 300, 8, (i) => ({ path: `/v1/kv/slow/${i}`, body: Buffer.concat([Buffer.from(`${i}:`), value]) }));
    socket.resume();
    const closed = await s.closed(10_000);
    const got = s.since(0, 'slow');
    expectIncreasing(got);
    const seen = `${closed === undefined ? 'still open after 10 s' : `closed ${closed.code}`}; got ${got.length} messages, ${got.filter((m) => m.type === 'batch').length} batches`;
    expect(closed, seen).toEqual({ code: 4008, reason: 'slow consumer' });
  }, 30_000);

  test('a stalled reader holding more than limits.stream_held_items_max items is closed with 4008 "slow consumer"', async () => {
    // Its own agent with a low soft limit (events are held as soon as 64 KiB wait in uWS, whatever the
    // kernel's socket buffers absorbed), a hard byte limit the writes below stay under, and 1000 items.
    const file = join(configDir, 'held.json');
    writeFileSync(file, JSON.stringify({ limits: { stream_buffered_bytes_soft: 64 * 1024, stream_buffered_bytes_hard: 7 * 1024 * 1024, stream_held_items_max: 1000 } }));
    const own = await startAgent({ args: ['--config-file', file] });
    try {
      const s = await Stream.open(own);
      await subscribe(s, { id: 'many', topic: 'kv_prefix', key: 'many/' });
      const socket = (s.ws as any)._socket as import('node:net').Socket;
      socket.pause();
      const value = Buffer.alloc(64 * 1024, 'v');
      // About 6.3 MB, past the soft limit unless the kernel took nearly all of it; then 1,050 distinct small items.
      await bulkWrites(own, 96, 8, (i) => ({ path: `/v1/kv/many/big${i}`, body: value }));
      await bulkWrites(own, 1_050, 32, (i) => ({ path: `/v1/kv/many/s${i}`, body: `v${i}` }));
      socket.resume();
      const closed = await s.closed(10_000);
      expectIncreasing(s.since(0, 'many'));
      expect(closed).toEqual({ code: 4008, reason: 'slow consumer' });
    } finally {
      await own.stop();
      own.cleanup();
    }
  }, 30_000);

  /** 300 values of 64 KiB (about 26 MB of snapshot, over uWS's 8 MiB maxBackpressure), written once. */
  let bigSnapshotWritten = false;
  async function writeBigSnapshot(): Promise<void> {
    if (bigSnapshotWritten) return;
    const value = Buffer.alloc(64 * 1024, 's');
    await bulkWrites(agent, 300, 8, (i) => ({ path: `/v1/kv/bigsnap/${i}`, body: value }));
    bigSnapshotWritten = true;
  }

  /** How a big snapshot ended on `s`: "<n> items" at end_of_snapshot, or the close and how far it got. */
  async function snapshotOutcome(s: Stream, timeoutMs: number): Promise<string> {
    const deadline = Date.now() + timeoutMs;
    while (s.closeInfo === undefined && !s.msgs.some((m) => m.type === 'end_of_snapshot') && Date.now() < deadline) await sleep(20);
    const items = s.msgs.filter((m) => m.type === 'snapshot').reduce((n, m) => n + m.items.length, 0);
    if (s.closeInfo !== undefined) return `closed ${s.closeInfo.code} after ${items} items`;
    return s.msgs.some((m) => m.type === 'end_of_snapshot') ? `${items} items` : `no end_of_snapshot after ${items} items`;
  }

  test('a snapshot larger than the backpressure limit reaches a reading client whole', async () => {
    await writeBigSnapshot();
    const outcomes: string[] = [];
    for (let attempt = 0; attempt < 3; attempt++) {
      const s = await Stream.open(agent);
      s.send({ op: 'subscribe', id: 'b', topic: 'kv_prefix', key: 'bigsnap/' });
      outcomes.push(await snapshotOutcome(s, 10_000));
      s.end();
    }
    expect(outcomes).toEqual(['300 items', '300 items', '300 items']);
  }, 60_000);

  test('a reader paused during a big snapshot gets it whole, in order, then the change made meanwhile', async () => {
    await writeBigSnapshot();
    const s = await Stream.open(agent);
    const socket = (s.ws as any)._socket as import('node:net').Socket;
    socket.pause();
    s.send({ op: 'subscribe', id: 'p', topic: 'kv_prefix', key: 'bigsnap/' });
    await sleep(300);
    await kvPut(c, 'bigsnap/0', 'changed while the snapshot waited');
    await sleep(200);
    socket.resume();
    expect(await snapshotOutcome(s, 15_000)).toBe('300 items');
    const change = await s.next(0, (m) => m.id === 'p' && (m.type === 'event' || m.type === 'batch'), 'the change after the snapshot', 10_000);
    const msgs = s.since(0, 'p');
    const types = msgs.map((m) => m.type);
    expect(types[0]).toBe('subscribed');
    expect(types.indexOf('end_of_snapshot')).toBe(types.lastIndexOf('snapshot') + 1);
    expect(types.lastIndexOf('snapshot')).toBeLessThan(msgs.indexOf(change));
    expect(msgs.filter((m) => m.type === 'snapshot').slice(0, -1).every((m) => m.more === true)).toBe(true);
    expect(msgs.filter((m) => m.type === 'snapshot').at(-1)!.more).toBe(false);
    const events = change.type === 'batch' ? change.events : [change];
    expect(events.map((e: any) => e.key)).toEqual(['bigsnap/0']);
    expect(Buffer.from(events[0].value.Value, 'base64').toString()).toBe('changed while the snapshot waited');
    expect(change.index).toBeGreaterThan(msgs[0]!.index);
    expect(change.index).toBe((await query(c, '/v1/kv/bigsnap/0')).index);
    expect(s.closeInfo).toBeUndefined();
  }, 60_000);
});

describe('bookmarks, unsubscribe, errors (§4.2, §4.5, §4.7)', () => {
  test('a bookmark follows silence (stream_bookmark_interval 1s) and carries the current index', async () => {
    const s = await Stream.open(agent);
    const sub = await subscribe(s, { id: 'bm', topic: 'kv_prefix', key: 'bm/' });
    const first = await s.next(0, (m) => m.type === 'bookmark', 'a bookmark');
    expect(Object.keys(first).sort()).toEqual(['index', 'type']);
    expect(first.index).toBeGreaterThanOrEqual(sub.subscribed.index);
    const from = s.mark;
    await kvPut(c, 'bm/a', 'x');
    const ev = await s.next(from, (m) => m.id === 'bm' && m.type === 'event', 'the event');
    const next = await s.next(from, (m) => m.type === 'bookmark', 'the next bookmark');
    expect(next.index).toBeGreaterThanOrEqual(ev.index);
    expect(s.msgs.indexOf(next)).toBeGreaterThan(s.msgs.indexOf(ev));
  });

  test('unsubscribe answers unsubscribed and stops the events of that subscription only', async () => {
    const s = await Stream.open(agent);
    await subscribe(s, { id: 'gone', topic: 'kv_prefix', key: 'unsub/' });
    await subscribe(s, { id: 'kept', topic: 'kv_prefix', key: 'unsub/' });
    const from = s.mark;
    s.send({ op: 'unsubscribe', id: 'gone' });
    expect(await s.next(from, (m) => m.id === 'gone', 'unsubscribed')).toEqual({ type: 'unsubscribed', id: 'gone' });
    await kvPut(c, 'unsub/a', 'x');
    await s.next(from, (m) => m.id === 'kept' && m.type === 'event', 'the event of the kept subscription');
    expect(await settled(s, from, 'gone')).toEqual([{ type: 'unsubscribed', id: 'gone' }]);
  });

  test('refusals: unknown_topic, bad_key, already_subscribed, too_many_subscriptions; the connection stays usable', async () => {
    const s = await Stream.open(agent);
    expect(await refused(s, { id: 't', topic: 'no_such_topic', key: 'x' })).toMatchObject({ type: 'error', id: 't', code: 'unknown_topic', message: expect.any(String) });
    expect(await refused(s, { id: 'k', topic: 'checks_in_state', key: 'bogus' })).toMatchObject({ type: 'error', id: 'k', code: 'bad_key', message: expect.any(String) });
    await subscribe(s, { id: 'dup', topic: 'kv_prefix', key: 'errs/' });
    expect(await refused(s, { id: 'dup', topic: 'kv_prefix', key: 'errs/' })).toMatchObject({ type: 'error', id: 'dup', code: 'already_subscribed' });
    for (let i = 1; i < 64; i++) await subscribe(s, { id: `n${i}`, topic: 'kv_prefix', key: `errs/${i}/` });
    expect(await refused(s, { id: 'n64', topic: 'kv_prefix', key: 'errs/64/' })).toMatchObject({ type: 'error', id: 'n64', code: 'too_many_subscriptions' });
    expect(s.closeInfo).toBeUndefined();
    const from = s.mark;
    await kvPut(c, 'errs/x', 'still delivered');
    expect(await s.next(from, (m) => m.id === 'dup' && m.type === 'event', 'an event on the first subscription')).toMatchObject({ key: 'errs/x' });
  });

  test('a field of the wrong type, or a filter the topic does not take, is refused bad_request naming it; nothing is subscribed', async () => {
    await kvPut(c, 'typed/unlocked', 'x');
    const s = await Stream.open(agent);
    const kv = { topic: 'kv_prefix', key: 'typed/' };
    const cases: [Record<string, unknown>, RegExp][] = [
      [{ ...kv, topic: ['kv_prefix'] }, /^topic must be a string/],
      [{ ...kv, topic: 7 }, /^topic must be a string/],
      [{ ...kv, filter: [] }, /^filter must be an object/],
      [{ ...kv, filter: null }, /^filter must be an object/],
      [{ ...kv, filter: 'lockedOnly' }, /^filter must be an object/],
      [{ ...kv, filter: { lockedOnly: 'yes' } }, /^filter\.lockedOnly must be true or false/],
      [{ ...kv, filter: { lockedOnly: 1 } }, /^filter\.lockedOnly must be true or false/],
      [{ ...kv, filter: { lockedOnyl: true } }, /^filter\.lockedOnyl is not a filter of kv_prefix \(it takes lockedOnly\)/],
      [{ ...kv, filter: { passingOnly: true } }, /^filter\.passingOnly is not a filter of kv_prefix/],
      [{ topic: 'service_health', key: 'web', filter: { passingOnly: 'true' } }, /^filter\.passingOnly must be true or false/],
      [{ topic: 'sessions', key: '', filter: { lockedOnly: true } }, /^filter\.lockedOnly is not a filter of sessions \(it takes none\)/],
    ];
    for (const [req, message] of cases) {
      expect(await refused(s, { id: 'typed', ...req }), JSON.stringify(req)).toMatchObject({ type: 'error', id: 'typed', code: 'bad_request', message: expect.stringMatching(message) });
    }
    // An unknown topic is named as such whatever its filter.
    expect(await refused(s, { id: 'typed', topic: 'kv_prefx', key: 'typed/', filter: { lockedOnly: true } })).toMatchObject({ code: 'unknown_topic' });
    // The id was never taken; the filters as documented work: no session holds the key, so only the unfiltered view shows it.
    expect((await subscribe(s, { id: 'typed', ...kv, filter: { lockedOnly: true } })).items).toEqual([]);
    expect((await subscribe(s, { id: 'all', ...kv, filter: { lockedOnly: false } })).items.map((e) => e.Key)).toEqual(['typed/unlocked']);
    expect((await subscribe(s, { id: 'none', ...kv, filter: {} })).items.map((e) => e.Key)).toEqual(['typed/unlocked']);
  });

  test('a field a subscribe does not have is refused bad_request naming it, misspellings of its own fields too; nothing is subscribed', async () => {
    await kvPut(c, 'unknown/locked-or-not', 'x');
    const s = await Stream.open(agent);
    const kv = { topic: 'kv_prefix', key: 'unknown/' };
    const cases: [Record<string, unknown>, string][] = [
      [{ ...kv, filters: { lockedOnly: true } }, 'filters'], [{ ...kv, Index: 1 }, 'Index'], [{ ...kv, idx: 0 }, 'idx'],
      [{ ...kv, Topic: 'kv_prefix' }, 'Topic'], [{ ...kv, token: 'secret' }, 'token'],
    ];
    for (const [req, name] of cases) {
      expect(await refused(s, { id: 'extra', ...req }), name).toMatchObject({
        type: 'error', id: 'extra', code: 'bad_request', message: `unknown field "${name}": a subscribe takes op, id, topic, key, index, epoch, filter`,
      });
    }
    // A misspelt id is named rather than taken for a missing one.
    const from = s.mark;
    s.send({ op: 'subscribe', ID: 'extra', ...kv });
    expect(await s.next(from, (m) => m.type === 'error', 'the refusal')).toMatchObject({ id: null, code: 'bad_request', message: expect.stringMatching(/^unknown field "ID"/) });
    // Nothing was subscribed under the id: it is free, and the fields as documented work.
    expect((await subscribe(s, { id: 'extra', ...kv, filter: { lockedOnly: true }, index: 0 })).items).toEqual([]);
  });

  for (const [what, text] of [['bad JSON', '{not json'], ['a JSON array', '[1,2]'], ['an unknown op', '{"op":"frobnicate","id":"x"}']] as const) {
    test(`${what} closes the connection with 1008`, async () => {
      const s = await Stream.open(agent);
      s.send(text);
      expect((await s.closed())?.code).toBe(1008);
    });
  }
});

describe('shutdown and restart', () => {
  test('SIGTERM closes every client with 1001; after a restart an old epoch resets and an old index is too old', async () => {
    const own = await startAgent();
    const oc = client(own);
    let restarted: Agent | undefined;
    try {
      await kvPut(oc, 'down/a', 'a');
      const a = await Stream.open(own);
      const b = await Stream.open(own);
      const sub = await subscribe(a, { id: 'a', topic: 'kv_prefix', key: 'down/' });
      await subscribe(b, { id: 'b', topic: 'serving_status', key: '' });
      await kvPut(oc, 'down/b', 'b'); // the restarted node's history starts after this
      expect(await own.stop()).toBe(0);
      expect((await a.closed())?.code).toBe(1001);
      expect((await b.closed())?.code).toBe(1001);
      // "" may turn NOT_SERVING on the way down, never anything else.
      for (const m of b.since(0, 'b').filter((x) => x.type === 'event')) expect(m.value).toEqual({ status: 'NOT_SERVING' });

      restarted = await startAgent({ dataDir: own.dataDir });
      const s = await Stream.open(restarted);
      const old = await subscribe(s, { id: 'old', topic: 'kv_prefix', key: 'down/', index: sub.end!.index, epoch: sub.subscribed.epoch });
      expect(old.reset).toEqual({ type: 'reset', id: 'old', reason: 'epoch_changed' });
      expect(old.subscribed.epoch).not.toBe(sub.subscribed.epoch);
      expect(old.items).toEqual((await query(client(restarted), '/v1/kv/down/?recurse')).body);
      const noEpoch = await subscribe(s, { id: 'noepoch', topic: 'kv_prefix', key: 'down/', index: sub.end!.index });
      expect(noEpoch.reset).toEqual({ type: 'reset', id: 'noepoch', reason: 'index_too_old' });
      expect(noEpoch.items).toHaveLength(2);
    } finally {
      for (const s of [...opened]) s.end();
      if (restarted !== undefined) await restarted.stop();
      await own.stop();
      own.cleanup();
    }
  }, 40_000);
});
