// Goal: stream consumers that subscribe to a large KV prefix and never read cannot take the agent's
// memory: against a started agent with small stream budgets, 60 such connections (3 prefix subscriptions
// each over ~14 MB of values in 7,000 keys, ~20 MB as JSON) keep its RSS under the bound its configuration implies (README,
// "Guarantees"), a reading subscriber still gets the whole snapshot, a normal client's lock requests keep
// answering, and once the prefix changes under them the stalled consumers are closed with 4008.
import { afterAll, beforeAll, describe, expect, test } from 'vitest';
import WebSocket from 'ws';
import { call, sleep, startAgent, type Agent } from '../support/agent.ts';
import { agentRssBytes, fillPrefix, openStalledStreams, sampleRss, streamSubprotocol, writeConfigFile, type StalledStream } from '../support/stream-load.ts';

const KiB = 1024;
const MiB = 1024 * KiB;
/** The budgets under test (config file `limits`). */
const limits = {
  stream_buffered_bytes_soft: 64 * KiB,
  stream_buffered_bytes_hard: 256 * KiB,
  stream_held_items_max: 1000,
  stream_snapshot_bytes_max: 4 * MiB,
  stream_max_conns: 64,
  stream_max_conns_per_client: 64,
};
/** ~14 MB of values, ~20 MB as JSON: snapshot frames of many items each (as a prefix of many keys has). */
const valueBytes = 2 * KiB;
const keyCount = 7000;
const stalledCount = 60;
/** Three prefixes over the same data: three views, three snapshots per connection. */
const subscriptions = [{ topic: 'kv_prefix', key: 'big/' }, { topic: 'kv_prefix', key: 'big' }, { topic: 'kv_prefix', key: 'bi' }];

/**
 * The README's bound on what the stream holds: per connection its queue budget, one inbound message
 * (uWS's 64 KiB limit) and one snapshot page in flight (a 64 KiB frame plus one item, a base64 value);
 * plus the agent's snapshot budget.
 */
const pageBytes = 64 * KiB + Math.ceil(valueBytes * 4 / 3) + 256;
const streamBoundBytes = limits.stream_max_conns * (limits.stream_buffered_bytes_hard + 64 * KiB + pageBytes) + limits.stream_snapshot_bytes_max;
/** Garbage the collector has not returned yet (pages rendered and sent): a fixed allowance. */
const gcAllowanceBytes = 128 * MiB;

let agent: Agent;

beforeAll(async () => {
  agent = await startAgent({ args: ['--config-file', writeConfigFile({ limits })] });
  await fillPrefix(agent, 'big/', keyCount, valueBytes, { connections: 16 });
}, 120_000);

afterAll(async () => {
  await agent?.stop();
  agent?.cleanup();
});

/** The roster_stream_connections gauge. */
async function streamConnections(): Promise<number> {
  const text = (await call(agent.url, 'GET', '/v1/agent/metrics?format=prometheus')).text;
  const m = /^roster_stream_connections (\d+)/m.exec(text);
  if (m === null) throw new Error(`no roster_stream_connections in ${text.slice(0, 200)}`);
  return Number(m[1]);
}

/** A reading subscriber: resolves with the items of its snapshot once end_of_snapshot arrives. */
function readSnapshot(key: string): Promise<number> {
  const ws = new WebSocket(`ws://127.0.0.1:${new URL(agent.url).port}/v1/stream`, [streamSubprotocol]);
  return new Promise((resolve, reject) => {
    let items = 0;
    ws.on('open', () => ws.send(JSON.stringify({ op: 'subscribe', id: 'r', topic: 'kv_prefix', key })));
    setTimeout(() => reject(new Error(`reader: ${items} items after 30 s`)), 30_000).unref();
    ws.on('message', (data) => {
      const m = JSON.parse(data.toString());
      if (m.type === 'snapshot') items += m.items.length;
      if (m.type === 'end_of_snapshot') { ws.close(); resolve(items); }
    });
    ws.on('close', (code) => reject(new Error(`reader closed ${code} after ${items} items`)));
    ws.on('unexpected-response', (_req, r) => reject(new Error(`reader refused ${r.statusCode}`)));
    ws.on('error', reject);
  });
}

/** A session takes and gives back a lock `rounds` times; every answer must come (15 s bound on each). */
async function lockRounds(rounds: number): Promise<string[]> {
  const answers: string[] = [];
  const req = async (method: string, path: string, body?: unknown) => {
    const r = await fetch(agent.url + path, { method, body: body === undefined ? undefined : JSON.stringify(body), signal: AbortSignal.timeout(15_000) });
    return `${r.status} ${(await r.text()).trim()}`;
  };
  const created = await fetch(`${agent.url}/v1/session/create`, { method: 'PUT', signal: AbortSignal.timeout(15_000) });
  const session = ((await created.json()) as { ID: string }).ID;
  for (let i = 0; i < rounds; i++) {
    answers.push(await req('PUT', `/v1/kv/normal/lock?acquire=${session}`, `holder ${i}`));
    answers.push(await req('PUT', `/v1/kv/normal/lock?release=${session}`));
  }
  return answers;
}

describe('stalled stream consumers of a large prefix', () => {
  test('RSS stays under the configured bound, others keep being served, the stalled ones are closed with 4008', async () => {
    await sleep(1_000);
    let baseline = 0;
    for (let i = 0; i < 5; i++) { baseline = Math.max(baseline, agentRssBytes(agent)); await sleep(100); }
    const rss = sampleRss(agent);
    let stalled: StalledStream[] = [];
    try {
      stalled = await openStalledStreams(agent, stalledCount, subscriptions);
      // Let the agent write what the budgets allow to the stalled sockets.
      await sleep(2_000);
      expect(await streamConnections()).toBe(stalledCount);
      // A reading subscriber gets the whole prefix while they stall; a normal client's locks answer.
      const [items, answers] = await Promise.all([readSnapshot('big/'), lockRounds(10)]);
      expect(items).toBe(keyCount);
      expect(answers).toEqual(Array.from({ length: 10 }, () => ['200 true', '200 true']).flat());
      // Changes under the prefix are held for each stalled subscription until its budget is spent: 4008.
      await fillPrefix(agent, 'big/', 200, valueBytes, { connections: 4, round: 1 });
      for (let i = 0; i < 100 && (await streamConnections()) > 0; i++) await sleep(100);
      expect(await streamConnections(), agent.output().slice(-3000)).toBe(0);
    } finally {
      const peak = rss.stop();
      const bound = baseline + streamBoundBytes + gcAllowanceBytes;
      console.log(`agent RSS: ${(baseline / MiB).toFixed(0)} MiB before, ${(peak / MiB).toFixed(0)} MiB at most under load; bound ${(bound / MiB).toFixed(0)} MiB`
        + ` (stream ${(streamBoundBytes / MiB).toFixed(1)} MiB + allowance ${gcAllowanceBytes / MiB} MiB)`);
      expect(peak).toBeLessThanOrEqual(bound);
    }
    for (const s of stalled) s.resume();
    const closes = await Promise.all(stalled.map((s) => Promise.race([s.closed, sleep(20_000).then(() => ({ code: 0, reason: 'still open after 20 s' }))])));
    const codes = new Map<string, number>();
    for (const c of closes) codes.set(`${c.code} ${c.reason}`, (codes.get(`${c.code} ${c.reason}`) ?? 0) + 1);
    expect(Object.fromEntries(codes)).toEqual({ '4008 slow consumer': stalledCount });
    expect(agent.proc.exitCode).toBeNull();
    expect((await call(agent.url, 'GET', '/v1/kv/normal/lock')).status).toBe(200);
  }, 120_000);
});
