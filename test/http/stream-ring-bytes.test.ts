// Goal: the change ring a stream resumes from is bounded by the bytes of the names it holds, not only by its
// count of changes. Transactions that set and then delete 64 keys of ~7.8 KB names leave the state almost
// empty but hold half a megabyte of names each in the ring; a few dozen of them pass its byte budget
// (32 MiB), far below its 10,000 changes. A resume from before them is then reset (index_too_old) and gets a
// snapshot of what is there now; a resume from a recent index still replays what changed since.
import { afterAll, beforeAll, describe, expect, test } from 'vitest';
import { call, client, startAgent, type Agent } from '../support/agent.ts';
import { opened, ok, query, Stream, subscribe } from '../support/stream.ts';

/** Names of this length make each 64-key transaction hold about 0.5 MB of names in the ring. */
const nameChars = 7_800;
const keysPerTxn = 64;
/** Set-and-delete rounds: 2 × 40 × 64 × 7,800 chars ≈ 40 MB of names, past the 32 MiB budget. */
const rounds = 40;

let agent: Agent;

beforeAll(async () => {
  agent = await startAgent();
});

afterAll(async () => {
  for (const s of [...opened]) s.end();
  await agent.stop();
  agent.cleanup();
});

/** One transaction over the 64 long keys of `round`: all set, or all deleted. */
async function txn(round: number, verb: 'set' | 'delete'): Promise<void> {
  const ops = Array.from({ length: keysPerTxn }, (_, j) => ({
    KV: { Verb: verb, Key: `ring/${round}/${j}/${'x'.repeat(nameChars)}`, ...(verb === 'set' ? { Value: 'eA==' } : {}) },
  }));
  ok(await call(agent.url, 'PUT', '/v1/txn', ops), `txn ${verb} ${round}`);
}

describe('the stream change ring under transactions of long, deleted keys', () => {
  test('a resume from before tens of megabytes of names is reset as too old; a recent one still replays', async () => {
    const c = client(agent);
    ok(await call(agent.url, 'PUT', '/v1/kv/ring/first', 'one'), 'first write');
    const s = await Stream.open(agent);
    const first = await subscribe(s, { id: 'first', topic: 'kv_prefix', key: 'ring/first' });
    const before = first.end!.index as number;
    for (let round = 0; round < rounds; round++) {
      await txn(round, 'set');
      await txn(round, 'delete');
    }
    ok(await call(agent.url, 'PUT', '/v1/kv/ring/marker', 'm'), 'marker');
    const recent = (await query(c, '/v1/kv/ring/marker')).index;
    ok(await call(agent.url, 'PUT', '/v1/kv/ring/first', 'two'), 'last write');

    const again = await Stream.open(agent);
    const old = await subscribe(again, { id: 'old', topic: 'kv_prefix', key: 'ring/first', index: before, epoch: first.subscribed.epoch });
    expect(old.reset).toEqual({ type: 'reset', id: 'old', reason: 'index_too_old' });
    expect(old.items).toEqual((await query(c, '/v1/kv/ring/first?recurse')).body);

    const from = again.mark;
    const fresh = await subscribe(again, { id: 'fresh', topic: 'kv_prefix', key: 'ring/', index: recent, epoch: first.subscribed.epoch });
    expect(fresh.subscribed).toMatchObject({ resumed: true });
    // What changed since is replayed: one event (several would come as one batch).
    const replay = await again.next(from, (m) => m.id === 'fresh' && (m.type === 'event' || m.type === 'batch'), 'the replay of the last write');
    const events = replay.type === 'batch' ? replay.events as { op: string; key: string }[] : [replay];
    expect(events.map((e) => [e.op, e.key])).toEqual([['upsert', 'ring/first']]);
  });
});
