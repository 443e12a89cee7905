// Goal: the JetStream stream is compacted safely, and only on a nats-server that replays a purge safely after a
// crash (2.10 or later; these tests run Debian 13's 2.10.27, a node on an older or unreported version blocks
// compaction). Indexes survive a purge (a node opens from the snapshot's mark, never counting from seq 1); the live
// node with the smallest name purges below the oldest mark any live node may still start from, keeping that mark's
// message; a node with no mark blocks it; status() then shows the compaction point on every node; a node that fell
// behind the compaction point is told to restart (it then opens from the newest snapshot), and the divergence audit
// takes a purged message for purged, not changed. On three started agents: the stream is compacted under a write
// load, /v1/operator/log shows the compaction point on every node, and a node restarted after the purge opens from a
// snapshot and serves every value.
import { rmSync } from 'node:fs';
import { afterAll, beforeAll, describe, expect, it, vi } from 'vitest';
import { setTimeout as sleep } from 'node:timers/promises';
import type { NatsConnection } from '@nats-io/transport-node';
import type { StreamInfo } from '@nats-io/jetstream';
import { adoptStream, streamConfig } from '../../cluster/jetstream/setup.ts';
import { DivergenceAudit } from '../../cluster/jetstream/audit.ts';
import { Compactor, compactionTarget, firstIndexOf, purgesSafely } from '../../cluster/jetstream/compaction.ts';
import { Marks } from '../../cluster/jetstream/marks.ts';
import { emptyStats } from '../../cluster/jetstream/options.ts';
import { Reader } from '../../cluster/jetstream/reader.ts';
import { silentLogger } from '../../src/ports/logger.ts';
import { SystemClock } from '../../src/ports/clock.ts';
import { Runtime } from '../../src/runtime/index.ts';
import { decodeProgress, encodeProgress, progressForgetMs, ProgressBoard, type NodeMarks } from '../../cluster/jetstream/progress.ts';
import type { LogEntry } from '../../src/ports/log.ts';
import { collect } from '../log/compliance.ts';
import { freePort, startNatsCluster, startNatsServer, type NatsCluster } from '../../cluster/dev/nats-launcher.ts';
import { client, startAgent, tempDataDir, type Agent } from '../support/agent.ts';
import { until as eventually } from '../support/until.ts';
import { debianNatsServer } from '../support/node-dist.ts';
import { proposals, useSuiteLogs, withJsm } from '../support/jetstream.ts';

// The stream's compaction needs a nats-server that replays purges safely: Debian 13's (test/support/node-dist.ts).
process.env.ROSTER_NATS_SERVER = debianNatsServer();

const node = (name: string, startFrom?: [number, number], compacted?: [number, number], serverVersion = '2.10.27'): NodeMarks => ({
  name, ageMs: 0, serverVersion,
  startFrom: startFrom && { seq: startFrom[0], index: startFrom[1] },
  compacted: compacted && { seq: compacted[0], index: compacted[1] },
});

describe('a node behind the compaction point', () => {
  function readerOver(withFellBehind: boolean) {
    const failed: unknown[] = [];
    const behind: Error[] = [];
    const delivered: LogEntry[] = [];
    const marks = new Marks({ seq: 0, index: 0, atMs: 0 });
    const audit = new DivergenceAudit({
      stream: 'LOG', logger: silentLogger, ownIdPrefix: 'me.boot.', storedId: () => Promise.resolve(undefined),
      stopped: () => false, diverged: () => undefined,
    });
    const reader = new Reader({
      js: {} as never, stream: 'LOG', subject: 'roster.log.LOG', strictSeq: true, consumerExpiresMs: 5000, stats: emptyStats(),
      logger: silentLogger, marks, audit, stopped: () => false, failure: () => undefined, fail: (c) => void failed.push(c),
      fellBehind: withFellBehind ? (err) => void behind.push(err) : undefined, deliver: (e) => void delivered.push(...e),
    }, { seq: 4, index: 9, atMs: 0 }, 0);
    const message = (seq: number) => ({
      seq, data: new TextEncoder().encode(JSON.stringify([{ p: `x-${seq}`, c: { t: 'barrier' }, t: 1 }])), headers: undefined,
    });
    const read = (seq: number): void => (reader as unknown as { read(m: unknown): void }).read(message(seq));
    return { read, failed, behind, delivered };
  }

  it('reads on after its cursor; a jump past it (purged) is told as fallen behind, so the node restarts from a snapshot', () => {
    const r = readerOver(true);
    r.read(5);
    expect(r.delivered.map((e) => e.index)).toEqual([10]);
    r.read(9);
    expect(r.delivered).toHaveLength(1);
    expect(r.failed).toEqual([]);
    expect(r.behind.map((e) => e.message)).toEqual([expect.stringMatching(/skips from seq 5 to 9.*newest snapshot/)]);
    // Without the port, the log just fails, as before.
    const plain = readerOver(false);
    plain.read(7);
    expect(plain.failed).toHaveLength(1);
  });

  it('the audit takes a message the stream purged as purged, not changed', async () => {
    const diverged: Error[] = [];
    const audit = new DivergenceAudit({
      stream: 'LOG', logger: silentLogger, ownIdPrefix: 'me.boot.', storedId: () => Promise.resolve(undefined),
      purged: (seq) => Promise.resolve(seq < 10), stopped: () => false, diverged: (err) => void diverged.push(err),
    });
    audit.read(9, 'other.boot.1');
    expect(await audit.beforeResume(9)).toBe(true);
    audit.read(12, 'other.boot.2');
    expect(await audit.beforeResume(12)).toBe(false);
    expect(diverged).toHaveLength(1);
  });
});

describe('compaction policy', () => {
  it('the smallest live name purges below the smallest start mark; a node without one blocks it', () => {
    const nodes = [node('b', [40, 90]), node('a', [30, 70]), node('c', [55, 120])];
    expect(compactionTarget(nodes, 'a')).toEqual({ seq: 30, index: 70 });
    expect(compactionTarget(nodes, 'b')).toBeUndefined();
    expect(compactionTarget([...nodes, node('d')], 'a')).toBeUndefined();
    // A node that opened without a snapshot starts from the stream's start: nothing to purge.
    expect(compactionTarget([node('a', [0, 0]), node('b', [40, 90])], 'a')).toBeUndefined();
    // Alone, a node purges below its own mark.
    expect(compactionTarget([node('a', [12, 30])], 'a')).toEqual({ seq: 12, index: 30 });
  });

  it('a node on a nats-server that replays purges unsafely (before 2.10), or of a version not reported, blocks it', () => {
    const nodes = [node('a', [30, 70]), node('b', [40, 90])];
    expect(compactionTarget(nodes, 'a')).toEqual({ seq: 30, index: 70 });
    expect(compactionTarget([...nodes, node('c', [55, 120], undefined, '2.9.10')], 'a')).toBeUndefined();
    expect(compactionTarget([node('a', [30, 70], undefined, 'v2.9.25'), node('b', [40, 90])], 'a')).toBeUndefined();
    expect(compactionTarget([node('a', [30, 70]), { ...node('b', [40, 90]), serverVersion: undefined }], 'a')).toBeUndefined();
    for (const v of ['2.10.0', 'v2.10.27', '2.11.0-beta.1', '3.0.0']) expect(purgesSafely(v), v).toBe(true);
    for (const v of ['2.9.10', '2.9.99', '1.99.0', '', 'x.y.z', undefined]) expect(purgesSafely(v), String(v)).toBe(false);
  });

  it('the compaction point: 1 before any purge, the index after the purged-below mark once reported, else unknown', () => {
    expect(firstIndexOf(1, [])).toBe(1);
    expect(firstIndexOf(0, [])).toBe(1);
    expect(firstIndexOf(30, [node('a', [40, 90], [30, 70]), node('b')])).toBe(71);
    expect(firstIndexOf(41, [node('a', [40, 90], [30, 70])])).toBeUndefined();
    expect(firstIndexOf(20, [node('a', [40, 90], [30, 70])], [{ seq: 20, index: 44 }, { seq: 30, index: 70 }])).toBe(45); // its own earlier purges
  });

  it('the compactor purges only as the purger, only past the stream\'s start, and says a refusal once', async () => {
    const purged: number[] = [];
    const warns: unknown[] = [];
    let nodes = [node('a', [30, 70]), node('b', [40, 90])];
    let firstSeq = 1;
    let refuse = false;
    const compactor = new Compactor({
      stream: 'LOG', nodeName: 'a', logger: { ...silentLogger, warn: (o: unknown) => void warns.push(o) },
      nodes: () => nodes, firstSeq: () => firstSeq,
      purgeBelow: (seq) => (refuse ? Promise.reject(new Error('purge not allowed')) : Promise.resolve(void purged.push(seq)).then(() => 29)),
      covered: () => Promise.resolve(true), newestSnapshotSeq: () => 1_000, saveNow: () => undefined,
    });
    await compactor.runOnce();
    expect(purged).toEqual([30]);
    expect(compactor.compacted).toEqual({ seq: 30, index: 70 });
    firstSeq = 30;
    await compactor.runOnce();
    expect(purged).toEqual([30]);
    nodes = [node('a', [50, 120]), node('b', [45, 100])];
    refuse = true;
    await compactor.runOnce();
    await compactor.runOnce();
    expect(warns).toHaveLength(1);
    expect(compactor.compacted).toEqual({ seq: 30, index: 70 });
    const other = new Compactor({
      stream: 'LOG', nodeName: 'b', logger: silentLogger, nodes: () => nodes, firstSeq: () => 1,
      purgeBelow: (seq) => Promise.resolve(void purged.push(seq)).then(() => 0),
      covered: () => Promise.resolve(true), newestSnapshotSeq: () => 1_000, saveNow: () => undefined,
    });
    await other.runOnce();
    expect(purged).toEqual([30]);
  });

  it('the stream is created refusing deletes but not purges; an existing one that refuses purges, or has limits, is named', () => {
    const plan = { stream: 'LOG', subject: 'roster.log.LOG', replicas: 3, publishRetryMsMax: 30_000, publishTimeoutMs: 5_000 };
    const config = streamConfig(plan);
    expect(config).toMatchObject({ deny_delete: true });
    expect(config.deny_purge).toBeUndefined();
    const info = (extra: Record<string, unknown>) => ({ config: { ...config, ...extra }, state: {} }) as unknown as StreamInfo;
    expect(adoptStream(info({}), plan).differs).toEqual({});
    expect(adoptStream(info({ deny_purge: true }), plan).differs).toEqual({ denyPurge: true });
    // Limits that remove messages by themselves are named; JetStream's "none" (-1, or 0 for the age) is not.
    expect(adoptStream(info({ max_msgs: -1, max_bytes: -1, max_age: 0 }), plan).differs).toEqual({});
    expect(adoptStream(info({ max_msgs: 10, max_bytes: 1 << 20, max_age: 3.6e12 }), plan).differs).toEqual({ maxMsgs: 10, maxBytes: 1 << 20, maxAgeNs: 3.6e12 });
  });

  it('a node unheard for progressForgetMs no longer holds compaction back', () => {
    vi.useFakeTimers();
    try {
      const board = new ProgressBoard('a', () => ({ server: 'n1', appliedIndex: 90, startFrom: { seq: 40, index: 90 }, serverVersion: '2.10.27' }));
      let deliver: ((data: Uint8Array) => void) | undefined;
      const nc = {
        subscribe: (_s: string, o: { callback: (err: null, m: { data: Uint8Array }) => void }) => {
          deliver = (data) => o.callback(null, { data });
          return { unsubscribe: () => undefined };
        },
        publish: () => undefined,
      } as unknown as NatsConnection;
      board.start(nc, 'roster.progress.LOG');
      deliver!(encodeProgress('b', { server: 'n2', appliedIndex: 20, startFrom: { seq: 5, index: 12 }, serverVersion: '2.10.27' }));
      expect(compactionTarget(board.marks(), 'a')).toEqual({ seq: 5, index: 12 });
      vi.advanceTimersByTime(progressForgetMs + 1);
      expect(compactionTarget(board.marks(), 'a')).toEqual({ seq: 40, index: 90 });
      board.stop();
    } finally {
      vi.useRealTimers();
    }
  });

  it('progress reports carry the marks as [seq, index] and old reports without them still decode', () => {
    const data = encodeProgress('a', { server: 'n1', appliedIndex: 9, startFrom: { seq: 3, index: 7 }, compacted: { seq: 2, index: 5 }, serverVersion: '2.10.27' });
    expect(JSON.parse(new TextDecoder().decode(data))).toEqual({ name: 'a', server: 'n1', applied: 9, from: [3, 7], compacted: [2, 5], sv: '2.10.27' });
    expect(decodeProgress(data)).toEqual({
      name: 'a', server: 'n1', appliedIndex: 9, startFrom: { seq: 3, index: 7 }, compacted: { seq: 2, index: 5 }, serverVersion: '2.10.27',
    });
    const old = new TextEncoder().encode(JSON.stringify({ name: 'a', server: 'n1', applied: 9, from: [3, -1] }));
    expect(decodeProgress(old)).toStrictEqual({ name: 'a', server: 'n1', appliedIndex: 9 });
  });
});

let single: NatsCluster;
beforeAll(async () => {
  single = await startNatsServer();
});
afterAll(async () => {
  await single?.shutdown();
});

async function until(what: string, cond: () => boolean | Promise<boolean>, timeoutMs = 15_000): Promise<void> {
  const deadline = Date.now() + timeoutMs;
  while (!(await cond())) {
    if (Date.now() > deadline) throw new Error(`timed out waiting for ${what}`);
    await sleep(50);
  }
}

describe('JetStreamLog compaction on one nats-server', () => {
  const suite = useSuiteLogs('C', () => single.urls);
  const { make } = suite;
  const streamState = async () => (await withJsm(single.urls, (jsm) => jsm.streams.info(suite.stream))).state;
  const purgeBelow = (seq: number) => withJsm(single.urls, (jsm) => jsm.streams.purge(suite.stream, { seq }));

  it('a stream created with deny_delete can be purged, and a node opening after a purge starts from the snapshot with the same indexes', async () => {
    const a = make('a', { compactEveryMs: 0 });
    await a.open();
    const gotA = collect(a);
    // Three entries per message: indexes and stream sequences differ.
    for (let k = 0; k < 10; k += 1) await a.append(proposals('a', 3 * k + 1, 3));
    await a.saveSnapshot({ index: 20, data: { upTo: 20 } });
    for (let k = 10; k < 14; k += 1) await a.append(proposals('a', 3 * k + 1, 3));
    await a.close();
    // The snapshot at 20 records the mark seq 6 (index 18): keep that message, purge the ones before.
    await purgeBelow(6);
    expect((await streamState()).first_seq).toBe(6);

    const b = make('b', { compactEveryMs: 0 });
    expect(await b.open()).toEqual({ index: 20, data: { upTo: 20 } });
    expect(b.lastIndex()).toBe(42);
    const gotB = collect(b, 20);
    expect(gotB).toEqual(gotA.slice(20));
    await b.append(proposals('b', 43, 2));
    expect(gotB.at(-1)).toMatchObject({ index: 44, pid: 'b-44' });

    // One message more purged and no snapshot covers the gap: the store is waited for, then the open is
    // refused naming the stream's start, never renumbered.
    await b.close();
    await purgeBelow(8);
    const c = make('c', { compactEveryMs: 0, openTimeoutMs: 3_000 });
    await expect(c.open()).rejects.toThrow(/no usable snapshot among 1 in the bucket, and the stream starts at seq 8/);
  });

  it('a runtime over the stream snapshots by the bytes it read, long before snapshot_every entries of large values', async () => {
    const log = make('s', { compactEveryMs: 0, snapshotDueBytes: 256 * 1024 });
    const clock = new SystemClock();
    const runtime = new Runtime({ log, clock, logger: silentLogger, nodeName: 's', nodeId: 'id-s', address: '127.0.0.1' });
    await runtime.start();
    const value = Buffer.alloc(24 * 1024, 1).toString('base64');
    for (let i = 0; i < 40; i += 1) {
      expect((await runtime.propose({ t: 'kv.set', key: `big/${i}`, value, flags: '0' })).ok).toBe(true);
      expect((await runtime.propose({ t: 'kv.delete', key: `big/${i}` })).ok).toBe(true);
    }
    // About 1.3 MiB read in some 80 entries (snapshot_every is 20,000): a snapshot every 256 KiB.
    await until('a snapshot is saved', () => log.status().snapshotIndex > 0, 5_000);
    await runtime.stop();
  });

  it('purges below the oldest start mark of the live nodes; every node shows the compaction point; a new node opens from a snapshot', async () => {
    const a = make('a', { compactEveryMs: 200 });
    const b = make('b', { compactEveryMs: 200 });
    await a.open();
    await b.open();
    const gotA = collect(a);
    const gotB = collect(b);
    const appendAll = async (from: number, count: number): Promise<void> => {
      for (let k = from; k < from + count; k += 1) await (k % 2 === 0 ? a : b).append(proposals(k % 2 === 0 ? 'a' : 'b', k, 1));
    };
    await appendAll(1, 30);
    await sleep(1_500);
    // Each node's first snapshot: its start mark stays at the stream's start (seq 0), nothing is purged.
    await a.saveSnapshot({ index: 10, data: 'a10' });
    await b.saveSnapshot({ index: 12, data: 'b12' });
    await appendAll(31, 30);
    await sleep(1_500);
    expect((await streamState()).first_seq).toBe(1);
    expect(a.status().firstIndex).toBe(1);
    // Their second: each may now start from its first, so the stream is purged below the older (index 10).
    await a.saveSnapshot({ index: 40, data: 'a40' });
    await b.saveSnapshot({ index: 45, data: 'b45' });
    await until('the stream is compacted', async () => (await streamState()).first_seq === 10);
    await appendAll(61, 10);
    await until('both nodes show the compaction point', () => a.status().firstIndex === 11 && b.status().firstIndex === 11);

    const c = make('c', { compactEveryMs: 200 });
    expect(await c.open()).toEqual({ index: 45, data: 'b45' });
    const gotC = collect(c, 45);
    await appendAll(71, 4);
    await c.append(proposals('c', 75, 1));
    await until('every node has read everything', () => [gotA, gotB].every((g) => g.length === 75) && gotC.length === 30);
    expect(gotB).toEqual(gotA);
    expect(gotC).toEqual(gotA.slice(45));
    // The live nodes kept reading and appending across the purge, with no divergence.
    expect(gotA.at(-1)).toMatchObject({ index: 75, pid: 'c-75' });
    expect(a.status().nodes?.map((n) => n.name)).toEqual(['a', 'b', 'c']);
  });
});

describe('three started agents', () => {
  const names = ['r1', 'r2', 'r3'];
  let nats: NatsCluster;
  const agents = new Map<string, Agent>();
  const dirs = new Map<string, string>();
  const gossip = new Map<string, number>();

  interface OperatorLog { firstIndex: number | null; commitIndex: number; stream: { firstSeq: number } | null }
  const operatorLog = async (a: Agent) => (await client(a).get('/v1/operator/log')).json<OperatorLog>();

  async function start(name: string): Promise<Agent> {
    const dataDir = dirs.get(name) ?? tempDataDir();
    dirs.set(name, dataDir);
    const seeds = names.filter((n) => n !== name).flatMap((n) => ['--join', `127.0.0.1:${gossip.get(n)}`]);
    const agent = await startAgent({
      bare: true, dataDir, readyTimeoutMs: 60_000,
      args: ['--http-port', '0', '--grpc-port', '0', '--data-dir', dataDir, '--node-name', name, '--snapshot-every', '100',
        '--nats', nats.byName(`n${name.slice(1)}`).url, '--gossip-listen', `127.0.0.1:${gossip.get(name)}`, ...seeds],
    });
    agents.set(name, agent);
    return agent;
  }

  /** `count` writes over 40 keys (the state stays small, so each node snapshots every 100 entries). */
  async function write(a: Agent, from: number, count: number): Promise<number> {
    let index = 0;
    for (let k = from; k < from + count; k += 1) {
      const r = await client(a).put(`/v1/kv/compact/${k % 40}`, `v${k}`);
      expect(r.status).toBe(200);
      index = Number(r.headers.get('x-consul-index'));
    }
    return index;
  }

  beforeAll(async () => {
    nats = await startNatsCluster();
    for (const n of names) gossip.set(n, await freePort());
    await Promise.all(names.map(start));
  }, 150_000);

  afterAll(async () => {
    for (const a of agents.values()) await a.stop().catch(() => undefined);
    await nats?.shutdown();
    for (const d of dirs.values()) rmSync(d, { recursive: true, force: true });
  });

  it('compacts the stream under writes, shows the compaction point everywhere, and a restarted node opens from a snapshot', async () => {
    const r1 = agents.get('r1')!;
    await write(r1, 0, 400);
    // Every node snapshots twice, then the next compaction (every 10 s) purges below the older marks.
    const compacted = await eventually('every node shows a compaction point past 1', async () => {
      const logs = await Promise.all([...agents.values()].map(operatorLog));
      const points = logs.map((l) => l.firstIndex);
      return points.every((p) => p !== null && p > 1 && p === points[0]) && (logs[0]!.stream?.firstSeq ?? 0) > 1 ? points[0]! : undefined;
    }, 45_000);

    const r3 = agents.get('r3')!;
    expect(await r3.stop()).toBe(0);
    const last = await write(r1, 400, 300);
    const again = await start('r3');
    const values = await eventually('the restarted node has every write', async () => {
      const r = await client(again).get(`/v1/kv/compact/?recurse&index=${last - 1}&wait=1s`);
      const kv = r.status === 200 ? r.json<{ Key: string; Value: string }[]>() : [];
      return kv.length === 40 && Number(r.headers.get('x-consul-index')) >= last ? kv : undefined;
    }, 60_000);
    for (const { Key, Value } of values) {
      const k = Number(Key.split('/')[1]);
      // The last of the writes 0..699 to key k.
      expect(Buffer.from(Value, 'base64').toString()).toBe(`v${k + 40 * Math.floor((699 - k) / 40)}`);
    }
    expect(again.output()).toMatch(/loaded a snapshot/);
    // Known from the purging node's next report (about a second).
    await eventually('the restarted node shows the compaction point', async () => ((await operatorLog(again)).firstIndex ?? 0) >= compacted || undefined, 10_000);
  }, 180_000);
});
