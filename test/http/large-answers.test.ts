// Goal: clients that ask for large answers and never read them cannot make the agent hold one copy per
// request. A started agent writes an answer of 1 MiB or more as its client reads it, closes the connection
// of a client that has read nothing for `limits.http_write_idle_timeout`, and past
// `limits.http_answer_bytes_max` of such answers in flight refuses the next large one 503/1016 with
// Retry-After (small answers are served throughout), before it renders it. A client that reads gets the
// whole answer.
import { readFileSync } from 'node:fs';
import { connect } from 'node:net';
import { expect, test } from 'vitest';
import { client } from '../support/agent.ts';
import { useBigPrefixAgent } from '../support/big-prefix.ts';

/** 60 values of 500,000 bytes: the prefix's answer is about 40 MB, far more than loopback's socket buffers take. */
const keys = 60;
const value = 'w'.repeat(500_000);

// One such answer fits the budget, two do not.
const big = useBigPrefixAgent({ keys, value, limits: { http_answer_bytes_max: 50_000_000, http_write_idle_timeout: '2s' } });
const held = big.held;

/**
 * Asks for the prefix on a raw connection and stops reading once the answer has begun (resolves then);
 * `resume` reads again, and `closed` resolves with the bytes received when the connection ends.
 */
async function stalledReader(): Promise<{ resume: () => void; closed: Promise<number> }> {
  const { port } = new URL(big.agent.url);
  const s = connect(Number(port), '127.0.0.1');
  held.push(s);
  s.on('error', () => {});
  let received = 0;
  const closed = new Promise<number>((res) => s.once('close', () => res(received)));
  const begun = new Promise<void>((res) => s.once('data', () => { s.pause(); res(); }));
  s.on('data', (d: Buffer) => { received += d.length; });
  s.on('connect', () => s.write('GET /v1/kv/big/?recurse HTTP/1.1\r\nHost: localhost\r\n\r\n'));
  await begun;
  return { resume: () => s.resume(), closed };
}

test('a reading client gets the whole large answer', async () => {
  const r = await client(big.agent).get('/v1/kv/big/?recurse');
  expect(r.status).toBe(200);
  const entries = r.json<{ Key: string; Value: string }[]>();
  expect(entries.map((e) => e.Key)).toEqual(Array.from({ length: keys }, (_, i) => `big/${String(i).padStart(2, '0')}`));
  for (const e of entries) expect(Buffer.from(e.Value, 'base64').toString()).toBe(value);
});

test('a client that stops reading holds its answer only until the idle timeout, and a second large answer meanwhile is refused', async () => {
  const c = client(big.agent);
  const stalled = await stalledReader();
  // Its answer is in flight and cannot finish: the next large one does not fit the budget.
  const refused = await c.get('/v1/kv/big/?recurse');
  expect(refused.status).toBe(503);
  expect(refused.json<{ code: number; message: string }>()).toMatchObject({ code: 1016, message: 'too many large answers are being sent; retry shortly' });
  expect(refused.headers.get('retry-after')).toBe('1');
  // Small answers are served meanwhile.
  expect((await c.get('/v1/kv/big/00')).status).toBe(200);
  // The stalled client reads nothing: after the idle timeout (2 s here) its answer is given up, which frees the budget.
  await expect.poll(async () => (await c.get('/v1/kv/big/?recurse')).status, { timeout: 15_000, interval: 500 }).toBe(200);
  // Its connection was closed with the answer cut short: reading again drains what the sockets held, then ends.
  stalled.resume();
  expect(await stalled.closed).toBeLessThan(40_000_000);
});

/** User and system CPU of process `pid` so far, in ms (from /proc; clock ticks of 10 ms). */
function cpuMsOf(pid: number): number {
  const fields = readFileSync(`/proc/${pid}/stat`, 'utf8').replace(/^.*\) /, '').split(' ');
  return (Number(fields[11]) + Number(fields[12])) * 10;
}

test('past the budget a large answer is refused before it is rendered: a burst of a dozen costs less CPU than serving one', async () => {
  const c = client(big.agent);
  const pid = big.agent.proc.pid!;
  let before = cpuMsOf(pid);
  expect((await c.get('/v1/kv/big/?recurse')).status).toBe(200);
  const servingOne = cpuMsOf(pid) - before;
  const stalled = await stalledReader(); // holds the budget until its idle timeout
  before = cpuMsOf(pid);
  const burst = await Promise.all(Array.from({ length: 12 }, () => c.get('/v1/kv/big/?recurse')));
  const burstCpu = cpuMsOf(pid) - before;
  expect(burst.map((r) => r.status)).toEqual(Array.from({ length: 12 }, () => 503));
  expect(burstCpu, `a burst of 12 refused answers took ${burstCpu} ms of CPU, serving one ${servingOne} ms`).toBeLessThan(servingOne);
  stalled.resume(); // its connection is ended with the others after the tests
});
