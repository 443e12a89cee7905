// Goal: `kv_prefix` views with `lockedOnly` share one set of the keys sessions hold, so their number does
// not multiply the agent's memory by the locked keys (a set of its own per distinct prefix did: 100 views of
// 20,000 held keys took tens of MiB). Views of different prefixes over the same keys stay exact: an acquire
// is an upsert to each, a release a delete to each, a write of a key no session holds reaches none.
import { afterAll, beforeAll, describe, expect, test } from 'vitest';
import type { Socket } from 'node:net';
import WebSocket from 'ws';
import { call, client, sleep, startAgent, type Agent } from '../support/agent.ts';
import { agentRssBytes } from '../support/stream-load.ts';
import { Stream, streamUrl, subprotocol, subscribe, type Client } from '../support/stream.ts';

let agent: Agent;
let c: Client;

beforeAll(async () => {
  agent = await startAgent();
  c = client(agent);
}, 60_000);
afterAll(async () => {
  await agent?.stop();
  agent?.cleanup();
});

/** The roster_stream_subscriptions gauge. */
async function streamSubscriptions(): Promise<number> {
  const text = (await call(agent.url, 'GET', '/v1/agent/metrics?format=prometheus')).text;
  const m = /^roster_stream_subscriptions (\d+)/m.exec(text);
  if (m === null) throw new Error(`no roster_stream_subscriptions in ${text.slice(0, 200)}`);
  return Number(m[1]);
}

/** A connection that sends `subscriptions` and then never reads (its socket paused). */
async function stalledReader(subscriptions: Record<string, unknown>[]): Promise<WebSocket> {
  const ws = new WebSocket(streamUrl(agent), [subprotocol]);
  ws.on('error', () => { /* ended by the test */ });
  await new Promise<void>((res, rej) => { ws.once('open', () => res()); ws.once('unexpected-response', () => rej(new Error('refused'))); });
  subscriptions.forEach((sub, i) => ws.send(JSON.stringify({ op: 'subscribe', id: `s${i}`, ...sub })));
  // ws resumes its socket itself once it has parsed a large message: that must not end the stall.
  const socket = (ws as unknown as { _socket: Socket })._socket;
  socket.resume = () => socket;
  socket.pause();
  return ws;
}

/** `count` keys `<prefix><i>` acquired by `session`, 64 to a transaction. */
async function lockKeys(prefix: string, count: number, session: string): Promise<void> {
  for (let i = 0; i < count; i += 64) {
    const ops = Array.from({ length: Math.min(64, count - i) }, (_, j) => ({ KV: { Verb: 'lock', Key: `${prefix}${i + j}`, Value: Buffer.from('v').toString('base64'), Session: session } }));
    const r = await call(agent.url, 'PUT', '/v1/txn', ops);
    if (r.status !== 200) throw new Error(`txn: ${r.status} ${r.text}`);
  }
}

describe('kv_prefix lockedOnly views', () => {
  test('100 views of distinct prefixes over 20,000 held keys cost the agent a few MiB, not a set each', async () => {
    const base = `locked/${'p'.repeat(100)}/`;
    await lockKeys(base, 20_000, await c.session({ Name: 'many' }));
    const prefixes = (from: number) => Array.from({ length: 50 }, (_, k) => ({ topic: 'kv_prefix', key: base.slice(0, from + k), filter: { lockedOnly: true } }));
    const before = agentRssBytes(agent);
    // Readers that never read: their snapshots wait (a page or so each); the views are made at subscribe.
    const readers = [await stalledReader(prefixes(base.length - 100)), await stalledReader(prefixes(base.length - 50))];
    try {
      for (let polls = 0; await streamSubscriptions() < 100; polls++) {
        if (polls > 300) throw new Error(`only ${await streamSubscriptions()} subscriptions`);
        await sleep(100);
      }
      const grown = agentRssBytes(agent) - before;
      console.log(`agent RSS grew ${(grown / 2 ** 20).toFixed(1)} MiB for 100 lockedOnly views of 20,000 held keys`);
      expect(grown).toBeLessThan(32 * 2 ** 20);
    } finally {
      for (const ws of readers) ws.terminate();
    }
  }, 120_000);

  test('views of two prefixes over the same keys: acquire upserts, release deletes, unlocked writes nothing, to each', async () => {
    const sid = await c.session({ Name: 'two' });
    expect((await c.put(`/v1/kv/two/a/held?acquire=${sid}`, 'x')).text).toBe('true');
    expect((await c.put('/v1/kv/two/a/plain', 'y')).status).toBe(200);
    const s = await Stream.open(agent);
    const outer = await subscribe(s, { id: 'outer', topic: 'kv_prefix', key: 'two/', filter: { lockedOnly: true } });
    const inner = await subscribe(s, { id: 'inner', topic: 'kv_prefix', key: 'two/a/', filter: { lockedOnly: true } });
    expect(outer.keys).toEqual(['two/a/held']);
    expect(inner.keys).toEqual(['two/a/held']);
    const from = s.mark;
    expect((await c.put('/v1/kv/two/a/plain', 'z')).status).toBe(200);
    expect((await c.put(`/v1/kv/two/a/next?acquire=${sid}`, 'x')).text).toBe('true');
    expect((await c.put(`/v1/kv/two/a/held?release=${sid}`)).text).toBe('true');
    for (const id of ['outer', 'inner']) {
      await s.next(from, (m) => m.id === id && m.op === 'delete' && m.key === 'two/a/held', `the release on ${id}`);
      const events = s.since(from, id).map((m) => ({ op: m.op, key: m.key }));
      expect(events).toEqual([{ op: 'upsert', key: 'two/a/next' }, { op: 'delete', key: 'two/a/held' }]);
    }
    // A view left by its last subscriber and taken again is still exact: the next release reaches it.
    s.send({ op: 'unsubscribe', id: 'inner' });
    await s.next(from, (m) => m.type === 'unsubscribed', 'unsubscribed');
    expect((await c.put(`/v1/kv/two/a/held?acquire=${sid}`, 'x')).text).toBe('true');
    const again = await subscribe(s, { id: 'inner', topic: 'kv_prefix', key: 'two/a/', filter: { lockedOnly: true } });
    expect(again.keys).toEqual(['two/a/held', 'two/a/next']);
    const later = s.mark;
    expect((await c.put(`/v1/kv/two/a/next?release=${sid}`)).text).toBe('true');
    expect(await s.next(later, (m) => m.id === 'inner' && m.type === 'event', 'the release')).toMatchObject({ op: 'delete', key: 'two/a/next' });
    s.end();
  });
});
