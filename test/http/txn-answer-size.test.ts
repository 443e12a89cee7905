// Goal: a small transaction cannot make the agent build a huge answer. `get-tree` repeats a prefix's values
// in the answer once per operation, so a 1 KB body could ask for 64 times the prefix. A started agent
// estimates the answer from the entries before it reads or proposes anything: one longer than any answer
// it can render is refused as a failed operation (409, nothing applied) instead of failing with 500, and
// past `limits.http_answer_bytes_max` of answers in flight one is refused 503/1016 before it is built, a
// write before it is proposed. A transaction within the limits gets its results whole.
import { readFileSync } from 'node:fs';
import { connect } from 'node:net';
import { expect, test } from 'vitest';
import { client } from '../support/agent.ts';
import { useBigPrefixAgent } from '../support/big-prefix.ts';

/** 20 values of 384 KiB: about 10.5 MB of base64 under big/, so 64 get-trees of it pass V8's longest string. */
const keys = 20;
const value = Buffer.alloc(384 * 1024, 3);

// A transaction of ten get-trees (about 105 MB) is let through alone, and refused beside a prefix read in flight.
const big = useBigPrefixAgent({ keys, value, limits: { http_answer_bytes_max: 50_000_000, http_write_idle_timeout: '60s' } });
const held = big.held;

const getTrees = (n: number, extra: object[] = []) => [...extra, ...Array.from({ length: n }, () => ({ KV: { Verb: 'get-tree', Key: 'big/' } }))];

/** User and system CPU of process `pid` so far, in ms (from /proc; clock ticks of 10 ms). */
function cpuMsOf(pid: number): number {
  const fields = readFileSync(`/proc/${pid}/stat`, 'utf8').replace(/^.*\) /, '').split(' ');
  return (Number(fields[11]) + Number(fields[12])) * 10;
}

/** Asks for the prefix (about 10.5 MB) on a raw connection and stops reading once the answer has begun: it stays in flight. */
async function stalledReader(): Promise<void> {
  const { port, hostname } = new URL(big.agent.url);
  const s = connect(Number(port), hostname);
  held.push(s);
  s.on('error', () => {});
  const begun = new Promise<void>((res) => s.once('data', () => { s.pause(); res(); }));
  s.on('connect', () => s.write('GET /v1/kv/big/?recurse HTTP/1.1\r\nHost: localhost\r\n\r\n'));
  await begun;
}

test('a transaction within the limits gets its results whole', async () => {
  const r = await client(big.agent).put('/v1/txn', getTrees(2));
  expect(r.status).toBe(200);
  const results = r.json<{ Results: { KV: { Key: string; Value: string } }[] }>().Results;
  expect(results).toHaveLength(2 * keys);
  for (const { KV } of results) expect(Buffer.from(KV.Value, 'base64').equals(value)).toBe(true);
});

test('a transaction whose answer would be longer than any the big.agent renders fails at that operation, not with 500', async () => {
  const r = await client(big.agent).put('/v1/txn', getTrees(64));
  expect(r.status).toBe(409);
  const body = r.json<{ code: number; details: { errors: { opIndex: number; what: string }[] } }>();
  expect(body.code).toBe(1025);
  expect(body.details.errors).toHaveLength(1);
  expect(body.details.errors[0]!.opIndex).toBeLessThan(64);
  expect(body.details.errors[0]!.what).toMatch(/^results too large: the answer would take about \d+ bytes by this operation/);
  // Nothing was applied by a transaction that also writes.
  const w = await client(big.agent).put('/v1/txn', getTrees(63, [{ KV: { Verb: 'set', Key: 'written/one', Value: 'eA==' } }]));
  expect(w.status).toBe(409);
  expect((await client(big.agent).get('/v1/kv/written/one')).status).toBe(404);
});

test('past the budget a transaction is refused before its answer is built: a burst of a dozen costs less CPU than serving one', async () => {
  const c = client(big.agent);
  const pid = big.agent.proc.pid!;
  let before = cpuMsOf(pid);
  expect((await c.put('/v1/txn', getTrees(10))).status).toBe(200);
  const servingOne = cpuMsOf(pid) - before;
  await stalledReader(); // holds about 10.5 MB of the 50 MB budget
  before = cpuMsOf(pid);
  const burst = await Promise.all(Array.from({ length: 12 }, () => c.put('/v1/txn', getTrees(10))));
  const burstCpu = cpuMsOf(pid) - before;
  expect(burst.map((r) => r.status)).toEqual(Array.from({ length: 12 }, () => 503));
  expect(burst[0]!.json<{ code: number; message: string }>()).toMatchObject({ code: 1016, message: 'too many large answers are being sent; retry shortly' });
  expect(burstCpu, `a burst of 12 refused transactions took ${burstCpu} ms of CPU, serving one ${servingOne} ms`).toBeLessThan(servingOne);
  // A write whose answer does not fit is refused before it is proposed: nothing applied, so retrying is safe.
  const w = await c.put('/v1/txn', getTrees(10, [{ KV: { Verb: 'set', Key: 'written/two', Value: 'eA==' } }]));
  expect(w.status).toBe(503);
  expect((await c.get('/v1/kv/written/two')).status).toBe(404);
});
