// Goal: a reader that stops reading for a while and then reads again gets what watch.md §4.6 promises, through
// the public interface (a real `ws` client against a started agent). Its held events arrive as one batch when
// its socket drains, even when that batch is more than the kernel takes at once (the bytes left behind must
// still go out, not wait for the next bookmark); and a reader closed with 4008 "slow consumer" while paused
// for longer than uWS's ping timeout (16 s at an idleTimeout of 60) still sees 4008, not a cut (1006).
// `held` has a soft limit of 64 KiB, so events are held as soon as the kernel's socket buffers are full, a
// hard limit the held batch stays under, and bookmarks 10 minutes apart, so no bookmark's write moves what a
// drain left behind; `plain` has the default limits, so about 1 MiB waits in uWS when the hard limit is passed.
import type net from 'node:net';
import { afterAll, beforeAll, describe, expect, test } from 'vitest';
import { client, sleep, startAgent, type Agent } from '../support/agent.ts';
import { writeConfigFile } from '../support/stream-load.ts';
import { bulkWrites, type Msg, query, Stream, subscribe } from '../support/stream.ts';

let held: Agent;
let plain: Agent;
let single: Agent;

beforeAll(async () => {
  [held, plain, single] = await Promise.all([
    startAgent({
      args: ['--config-file', writeConfigFile({
        stream_bookmark_interval: '10m',
        limits: { stream_buffered_bytes_soft: 64 * 1024, stream_buffered_bytes_hard: 48 * 1024 * 1024 },
      })],
    }),
    startAgent(),
    startAgent({ args: ['--config-file', writeConfigFile({ limits: { stream_max_conns_per_client: 1 } })] }),
  ]);
}, 60_000);
afterAll(async () => {
  for (const a of [held, plain, single]) { await a?.stop(); a?.cleanup(); }
});

function socketOf(s: Stream): net.Socket {
  return (s.ws as any)._socket as net.Socket;
}

/** The write a value came from: its text up to the colon (the values are `${i}:` and 256 KiB of filler). */
function writeOf(base64: string): string {
  return Buffer.from(base64.slice(0, 16), 'base64').toString().split(':')[0]!;
}

/** The reader's view of a kv_prefix subscription from its events and batches: key → the write its value came from, and the last index. */
function viewOf(msgs: Msg[]): { values: Map<string, string | undefined>; index: number } {
  const values = new Map<string, string | undefined>();
  let index = 0;
  for (const m of msgs) {
    if (m.type !== 'event' && m.type !== 'batch') continue;
    for (const e of m.type === 'batch' ? m.events : [m]) values.set(e.key, e.op === 'delete' ? undefined : writeOf(e.value.Value));
    index = m.index;
  }
  return { values, index };
}

/**
 * A reader of `prefix` that stops reading while 64 items of 256 KiB are written under it (about 21 MB on the
 * wire): the kernel's buffers fill, then about 1 MiB waits in uWS, then the held items pass the 4 MiB budget
 * and the connection is closed with 4008 while the reader does not read.
 */
async function closedWhilePaused(agent: Agent, prefix: string): Promise<Stream> {
  const s = await Stream.open(agent);
  await subscribe(s, { id: 'c', topic: 'kv_prefix', key: prefix });
  socketOf(s).pause();
  const value = Buffer.alloc(256 * 1024, 'c');
  await bulkWrites(agent, 64, 8, (i) => ({ path: `/v1/kv/${prefix}${i}`, body: value }));
  return s;
}

describe('a slow reader that reads again (§4.6)', () => {
  test('its held events arrive as one batch once it reads, however much of it the kernel took at once', async () => {
    const s = await Stream.open(held);
    await subscribe(s, { id: 'h', topic: 'kv_prefix', key: 'held/' });
    const from = s.mark;
    socketOf(s).pause();
    // 40 keys of 256 KiB, three times over (about 40 MB on the wire): the kernel's buffers fill, then every key
    // is held; the batch flushed on drain (about 14 MB) is more than one write to the socket takes.
    const value = Buffer.alloc(256 * 1024, 'h');
    await bulkWrites(held, 120, 8, (i) => ({ path: `/v1/kv/held/k${i % 40}`, body: Buffer.concat([Buffer.from(`${i}:`), value]) }));
    const state = await query(client(held), '/v1/kv/held/?recurse');
    socketOf(s).resume();

    const deadline = Date.now() + 30_000;
    while (viewOf(s.since(from, 'h')).index < state.index && s.closeInfo === undefined && Date.now() < deadline) await sleep(50);
    const got = s.since(from, 'h');
    const view = viewOf(got);
    const seen = `${got.length} messages (${got.filter((m) => m.type === 'batch').length} batches), up to index ${view.index} of ${state.index}, close ${JSON.stringify(s.closeInfo)}`;
    expect(view.index, seen).toBe(state.index);
    expect(got.some((m) => m.type === 'batch'), seen).toBe(true);
    expect(s.closeInfo, seen).toBeUndefined();
    expect(view.values, seen).toEqual(new Map(state.body.map((e: any) => [e.Key, writeOf(e.Value)])));
  }, 90_000);

  test('closed with 4008 while paused past uWS\'s ping timeout, it gets the 4008 once it reads again', async () => {
    // uWS gives a socket it ended 16 s to take what it still buffers, then cuts it.
    const s = await closedWhilePaused(plain, 'closed/');
    await sleep(20_000);
    socketOf(s).resume();
    const closed = await s.closed(30_000);
    expect(closed, `got ${s.msgs.length} messages`).toEqual({ code: 4008, reason: 'slow consumer' });
  }, 120_000);

  test('a reader closed with 4008 keeps its place in its client\'s count until its socket is gone', async () => {
    // One stream per client here: while the closed reader's socket still holds what uWS buffered for it, the
    // same client cannot open another in its stead.
    const s = await closedWhilePaused(single, 'slot/');
    await expect(Stream.open(single)).rejects.toThrow(/429/);
    socketOf(s).resume();
    expect(await s.closed(30_000)).toEqual({ code: 4008, reason: 'slow consumer' });
    let again: Stream | undefined;
    for (let i = 0; i < 50 && again === undefined; i++) again = await Stream.open(single).catch(async () => { await sleep(100); return undefined; });
    expect(again).toBeDefined();
    again!.ws.close();
  }, 120_000);
});
