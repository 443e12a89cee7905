// Goal (resource exhaustion): one agent under three kinds of hostile load — thousands of blocking queries
// woken together, stream subscribers that never read a large snapshot, and a full disk — while a normal
// client on its own address keeps taking a lock (acquire, write, release) through its session. Every request
// of the normal client is answered (a status, within its timeout; 503 is an answer while the disk is full),
// the agent never dies, and every write the normal client saw acknowledged is read back after a restart.
// Hostile clients connect from other loopback addresses (127.0.0.x), so the per-client caps that refuse
// them do not also fall on the normal client.
import net from 'node:net';
import { join } from 'node:path';
import { afterAll, describe, expect, test } from 'vitest';
import { call, sleep, startAgent, type Agent } from '../support/agent.ts';
import { mountSmallDisk, type SmallDisk } from '../support/disk.ts';
import { agentRssBytes, fillPrefix, openStalledStreams, sampleRss, type StalledStream } from '../support/stream-load.ts';

/** How long the normal client waits for one answer before it counts the request as unanswered. */
const answerTimeoutMs = 10_000;

interface NormalStats {
  requests: number;
  unanswered: string[];
  statuses: Map<number, number>;
  /** Values the agent acknowledged (200) under `exhaustion/ack/<n>`. */
  acknowledged: Map<string, string>;
  lockHolds: number;
}

async function answered(base: string, method: string, path: string, stats: NormalStats, body?: string): Promise<{ status: number; text: string } | undefined> {
  stats.requests++;
  try {
    const headers = body?.startsWith('{') ? { 'content-type': 'application/json' } : undefined;
    const res = await fetch(base + path, { method, body, headers, signal: AbortSignal.timeout(answerTimeoutMs) });
    const text = await res.text();
    stats.statuses.set(res.status, (stats.statuses.get(res.status) ?? 0) + 1);
    return { status: res.status, text };
  } catch (e) {
    stats.unanswered.push(`${method} ${path}: ${(e as Error).message}`);
    return undefined;
  }
}

/**
 * The normal client: one session, then rounds of acquire → write a unique key → release on one lock key,
 * until `stop()` is called. A round whose session is gone creates a new one.
 */
function normalClient(agent: Agent, tag: string) {
  const stats: NormalStats = { requests: 0, unanswered: [], statuses: new Map(), acknowledged: new Map(), lockHolds: 0 };
  let running = true;
  const done = (async () => {
    let sid: string | undefined;
    for (let n = 0; running; n++) {
      if (sid === undefined) {
        const r = await answered(agent.url, 'PUT', '/v1/session/create', stats, JSON.stringify({ Name: `normal-${tag}`, TTL: '30s', LockDelay: '0s' }));
        if (r?.status === 200) sid = (JSON.parse(r.text) as { ID: string }).ID;
        else { await sleep(100); continue; }
      }
      const acq = await answered(agent.url, 'PUT', `/v1/kv/exhaustion/lock?acquire=${sid}`, stats, `${tag}-${n}`);
      if (acq?.status === 200) {
        stats.lockHolds++;
        const key = `exhaustion/ack/${tag}-${n}`;
        const w = await answered(agent.url, 'PUT', `/v1/kv/${key}`, stats, `value-${tag}-${n}`);
        if (w?.status === 200) stats.acknowledged.set(key, `value-${tag}-${n}`);
        await answered(agent.url, 'PUT', `/v1/kv/exhaustion/lock?release=${sid}`, stats);
      } else if (acq?.status === 404 || (acq?.status === 400 && /session/i.test(acq.text))) {
        sid = undefined;
      } else {
        await sleep(50);
      }
    }
  })();
  return { stats, stop: async () => { running = false; await done; return stats; } };
}

function report(name: string, s: NormalStats): void {
  const statuses = [...s.statuses].map(([k, v]) => `${k}×${v}`).join(' ');
  console.log(`[faults] ${name}: normal client ${s.requests} requests (${statuses}), ${s.lockHolds} lock holds, ${s.acknowledged.size} writes acknowledged, ${s.unanswered.length} unanswered`);
}

/** Restarts the agent on its data dir and reads back every acknowledged write; returns the new agent. */
async function expectAcknowledgedAfterRestart(agent: Agent, acknowledged: Map<string, string>): Promise<Agent> {
  expect(await agent.stop()).toBe(0);
  agent = await startAgent({ dataDir: agent.dataDir });
  agents.push(agent);
  const r = await call(agent.url, 'GET', '/v1/kv/exhaustion/ack/?recurse');
  expect(r.status).toBe(200);
  const stored = new Map((r.json<{ Key: string; Value: string }[]>()).map((e) => [e.Key, Buffer.from(e.Value, 'base64').toString()]));
  const lost = [...acknowledged].filter(([k, v]) => stored.get(k) !== v).map(([k]) => k);
  expect(lost).toEqual([]);
  return agent;
}

const agents: Agent[] = [];
const disks: SmallDisk[] = [];
afterAll(async () => {
  for (const a of agents) await a.stop();
  for (const a of agents) a.cleanup();
  for (const d of disks) d.unmount();
});

describe('many blocking queries', () => {
  /** Hostile addresses × blocking queries each: 2,000 parked queries, woken together by every write. */
  const hostileAddresses = 10;
  const queriesPerAddress = 200;

  test('thousands of parked blocking queries woken together do not starve a normal client', async () => {
    const agent = await startAgent();
    agents.push(agent);
    const port = Number(new URL(agent.url).port);
    const index = Number((await call(agent.url, 'PUT', '/v1/kv/exhaustion/watched', 'v0')).headers.get('x-consul-index') ?? '0');
    const sockets: net.Socket[] = [];
    let answers = 0;
    /** One keep-alive connection per query: each answer is read for its index and the query asked again. */
    const park = (address: string) => {
      const s = net.connect({ host: '127.0.0.1', port, localAddress: address });
      const ask = (at: string) => s.write(`GET /v1/kv/exhaustion/watched?index=${at}&wait=60s HTTP/1.1\r\nHost: localhost\r\n\r\n`);
      s.on('error', () => { /* refused by a per-client cap, or cut at the end */ });
      s.on('data', (d: Buffer) => {
        answers++;
        const next = /x-consul-index: (\d+)/i.exec(d.toString('latin1'))?.[1];
        if (next !== undefined && !s.destroyed) ask(next);
      });
      ask(String(index));
      sockets.push(s);
    };
    const normal = normalClient(agent, 'blocking');
    try {
      for (let a = 0; a < hostileAddresses; a++) for (let q = 0; q < queriesPerAddress; q++) park(`127.0.0.${10 + a}`);
      const deadline = Date.now() + 20_000;
      for (let n = 1; Date.now() < deadline; n++) {
        await call(agent.url, 'PUT', '/v1/kv/exhaustion/watched', `v${n}`);
        await sleep(500);
      }
    } finally {
      const stats = await normal.stop();
      for (const s of sockets) s.destroy();
      report('blocking queries', stats);
      console.log(`[faults] blocking queries: ${sockets.length} parked, ${answers} answer chunks received by them`);
      expect(stats.unanswered).toEqual([]);
      expect(stats.lockHolds).toBeGreaterThan(10);
      expect(answers).toBeGreaterThan(0);
      await expectAcknowledgedAfterRestart(agent, stats.acknowledged);
    }
  }, 120_000);
});

describe('a full disk', () => {
  test('writes answer 503 while the disk is full and succeed again once it is freed; the normal client is always answered', async (ctx) => {
    const mounted = mountSmallDisk(32 * 1024);
    if (typeof mounted === 'string') return ctx.skip(`the disk-full scenario needs a tmpfs: ${mounted}`);
    disks.push(mounted);
    let agent = await startAgent({ dataDir: join(mounted.dir, 'data') });
    agents.push(agent);
    const normal = normalClient(agent, 'disk');
    let holdsBeforeFull = 0;
    let holdsWhileFull = 0;
    try {
      await sleep(3_000);
      holdsBeforeFull = normal.stats.lockHolds;
      mounted.fill();
      const fullAt = normal.stats.lockHolds;
      await sleep(5_000);
      holdsWhileFull = normal.stats.lockHolds - fullAt;
      mounted.free();
      await sleep(5_000);
    } finally {
      mounted.free();
      const stats = await normal.stop();
      report('full disk', stats);
      console.log(`[faults] full disk: ${holdsBeforeFull} lock holds before the disk filled, ${holdsWhileFull} while it was full, ${stats.lockHolds - holdsBeforeFull - holdsWhileFull} after it was freed`);
      expect(stats.unanswered).toEqual([]);
      // The statuses are answers: 200, a refused acquire, or 503 (the log cannot write); never another 5xx.
      expect([...stats.statuses.keys()].filter((s) => s >= 500 && s !== 503)).toEqual([]);
      expect(stats.statuses.get(503) ?? 0).toBeGreaterThan(0);
      expect(holdsBeforeFull).toBeGreaterThan(0);
      expect(stats.lockHolds - holdsBeforeFull - holdsWhileFull).toBeGreaterThan(0);
      agent = await expectAcknowledgedAfterRestart(agent, stats.acknowledged);
    }
  }, 120_000);
});

describe('hostile stream subscribers', () => {
  const MiB = 1024 * 1024;
  /** The README's bound with the default limits: 256 × (4 MiB + 64 KiB + one page of ~0.75 MiB) + 64 MiB. */
  const streamBoundBytes = 256 * (4 * MiB + 64 * 1024 + 0.75 * MiB) + 64 * MiB;
  /** Garbage the collector has not returned yet. */
  const gcAllowanceBytes = 256 * MiB;

  test('64 connections × 3 prefix subscriptions over ~20 MB that never read: RSS stays under the documented bound; the normal client is always answered', async () => {
    const agent = await startAgent();
    agents.push(agent);
    await fillPrefix(agent, 'big/', 7000, 2048, { connections: 16 });
    await sleep(1_000);
    const baseline = agentRssBytes(agent);
    const rss = sampleRss(agent);
    const normal = normalClient(agent, 'stream');
    let stalled: StalledStream[] = [];
    let closedByAgent = 0;
    try {
      stalled = await openStalledStreams(agent, 64, [{ topic: 'kv_prefix', key: 'big/' }, { topic: 'kv_prefix', key: 'big' }, { topic: 'kv_prefix', key: 'bi' }]);
      // Changes under the prefix pile up behind the stalled readers, several rounds of them.
      for (let round = 1; round <= 3; round++) {
        await fillPrefix(agent, 'big/', 1000, 2048, { connections: 4, round });
        await sleep(2_000);
      }
    } finally {
      const stats = await normal.stop();
      const peak = rss.stop();
      const closes = await Promise.all(stalled.map((s) => Promise.race([s.closed, sleep(100).then(() => undefined)])));
      closedByAgent = closes.filter((c) => c?.code === 4008).length;
      for (const s of stalled) s.ws.terminate();
      report('stream subscribers', stats);
      console.log(`[faults] stream subscribers: ${stalled.length} stalled connections, ${closedByAgent} closed with 4008; agent RSS ${(baseline / MiB).toFixed(0)} MiB before, ${(peak / MiB).toFixed(0)} MiB at most, bound ${((baseline + streamBoundBytes + gcAllowanceBytes) / MiB).toFixed(0)} MiB`);
      expect(agent.proc.exitCode).toBeNull();
      expect(stats.unanswered).toEqual([]);
      expect(stats.lockHolds).toBeGreaterThan(10);
      expect(peak).toBeLessThanOrEqual(baseline + streamBoundBytes + gcAllowanceBytes);
      await expectAcknowledgedAfterRestart(agent, stats.acknowledged);
    }
  }, 180_000);
});
