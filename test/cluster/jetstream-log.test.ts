// Goal: the JetStream log passes the shared log contract on a real nats-server, numbers the stream the
// same on every node (the nodes' digests of each window of the stream agree), applies a retried publish once, opens from a snapshot reading only the tail, and
// on a real three-server cluster keeps every acknowledged append, exactly once, across the loss of
// the stream's leader.
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { setTimeout as sleep } from 'node:timers/promises';
import { connect } from '@nats-io/transport-node';
import { jetstream, jetstreamManager, StorageType } from '@nats-io/jetstream';
import { JetStreamLog } from '../../cluster/index.ts';
import { windowSeqs } from '../../cluster/jetstream/digests.ts';
import { ManualClock, SystemClock } from '../../src/ports/clock.ts';
import { silentLogger } from '../../src/ports/logger.ts';
import { collect, logCompliance } from '../log/compliance.ts';
import { startNatsCluster, startNatsServer, type NatsCluster } from '../../cluster/dev/nats-launcher.ts';
import { deleteStream, freshStream, proposals, useSuiteLogs, withJsm } from '../support/jetstream.ts';

let single: NatsCluster;
beforeAll(async () => {
  single = await startNatsServer();
});
afterAll(async () => {
  await single?.shutdown();
});

logCompliance('JetStreamLog', () => {
  const stream = freshStream('T');
  return {
    open: (clock, limits) => new JetStreamLog({
      servers: single.urls, stream, replicas: 1, nodeName: 'n1', clock: clock ?? new SystemClock(), ...limits,
    }),
    cleanup: () => deleteStream(single.urls, stream),
  };
});

async function until(what: string, cond: () => boolean, timeoutMs = 10_000, detail = (): string => ''): Promise<void> {
  const deadline = Date.now() + timeoutMs;
  while (!cond()) {
    if (Date.now() > deadline) throw new Error(`timed out waiting for ${what}\n${detail()}`);
    await sleep(20);
  }
}

describe('JetStreamLog on one nats-server', () => {
  const suite = useSuiteLogs('T', () => single.urls);
  const { make } = suite;

  it('gives two nodes the same entries, indexes and order under concurrent appends from both', async () => {
    const a = make('a');
    const b = make('b');
    await a.open();
    await b.open();
    const gotA = collect(a);
    const gotB = collect(b);
    const appends: Promise<void>[] = [];
    const sizes = new Map<string, number>();
    for (let k = 0; k < 60; k += 1) {
      for (const [node, log] of [['a', a], ['b', b]] as const) {
        const ps = proposals(node, k * 10, 1 + (k % 3));
        sizes.set(ps[0]!.pid, ps.length);
        appends.push(log.append(ps));
      }
    }
    await Promise.all(appends);
    const total = [...sizes.values()].reduce((s, n) => s + n, 0);
    await until('both nodes to read everything', () => gotA.length === total && gotB.length === total);
    expect(gotB).toEqual(gotA);
    expect(a.lastIndex()).toBe(total);
    expect(b.lastIndex()).toBe(total);
    // Each append is contiguous, and each node's own appends were grouped into fewer messages.
    const position = new Map(gotA.map((e) => [e.pid, e.index]));
    expect(position.size).toBe(total);
    for (const [first, n] of sizes) {
      const node = first.split('-')[0]!;
      const start = Number(first.split('-')[1]);
      expect(Array.from({ length: n }, (_, k) => position.get(`${node}-${start + k}`))).toEqual(
        Array.from({ length: n }, (_, k) => position.get(first)! + k));
    }
    expect(a.stats.commits).toBeLessThan(60);
    expect(a.stats.messagesConsumed).toBe(a.stats.commits + b.stats.commits);
  });

  it('nodes that read the same stream report the same digest of each window of it, and neither finds a mismatch', async () => {
    const a = make('a');
    const b = make('b');
    await a.open();
    await b.open();
    // One message per append, awaited: past the first window's end (windowSeqs).
    for (let k = 0; k <= windowSeqs; k += 1) await a.append(proposals('a', k, 1));
    const windowOf = (log: JetStreamLog, node: string) => log.status()?.nodes?.find((n) => n.name === node)?.window;
    await until('each node reports its first window and hears the other\'s', () => [a, b].every((log) =>
      windowOf(log, 'a')?.end === windowSeqs && windowOf(log, 'b')?.end === windowSeqs));
    const digest = windowOf(a, 'a')!.sha;
    expect(digest).toMatch(/^[0-9a-f]{16}$/);
    expect([windowOf(a, 'b')!.sha, windowOf(b, 'a')!.sha, windowOf(b, 'b')!.sha]).toEqual([digest, digest, digest]);
    // Both still take appends: no mismatch was taken for a divergence.
    await a.append(proposals('a', 5_000, 1));
    await b.append(proposals('b', 5_000, 1));
  });

  it('applies once a commit whose publish was retried after its ack was lost (server hung)', async () => {
    const { stream } = suite;
    const log = make('a', { publishTimeoutMs: 300 });
    await log.open();
    const got = collect(log);
    await log.append(proposals('a', 1, 1));
    const server = single.servers[0]!;
    await server.pause();
    let pending: Promise<void>;
    try {
      pending = log.append(proposals('a', 2, 2));
      // The first attempt reaches the socket, times out; retries carry the same message id.
      await sleep(1200);
    } finally {
      server.resume();
    }
    await pending;
    expect(log.stats.publishRetries).toBeGreaterThan(0);
    expect(log.stats.duplicates).toBe(1);
    expect(got.map((e) => e.pid)).toEqual(['a-1', 'a-2', 'a-3']);
    expect(log.lastIndex()).toBe(3);
    expect((await withJsm(single.urls, (jsm) => jsm.streams.info(stream))).state.messages).toBe(2);
  });

  it('fails and reports divergence when the stream no longer holds the message it read last (checked before resuming)', async () => {
    const { stream } = suite;
    // The log's own stream refuses deletes (and that cannot be lifted): this one, which the log adopts,
    // allows them, so the test can plant the loss.
    await withJsm(single.urls, (jsm) => jsm.streams.add({
      name: stream, subjects: [`roster.log.${stream}`], storage: StorageType.File, num_replicas: 1,
      duplicate_window: 120_000_000_000, deny_delete: false,
    }));
    const diverged: Error[] = [];
    // Pulls of 1 s: the watchdog replaces a silent consumer after about 2 s.
    const log = make('a', { consumerExpiresMs: 1_000, onDiverged: (err) => diverged.push(err) });
    await log.open();
    const got = collect(log);
    await log.append(proposals('a', 1, 2));
    expect(got.map((e) => e.pid)).toEqual(['a-1', 'a-2']);
    // The message just read disappears from the stream (as a message delivered by a deposed leader did).
    await withJsm(single.urls, async (jsm) => {
      const last = (await jsm.streams.info(stream)).state.last_seq;
      expect(await jsm.streams.deleteMessage(stream, last, false)).toBe(true);
    });
    // The server goes silent long enough for the watchdog to replace the consumer, which first checks.
    const server = single.servers[0]!;
    await server.pause();
    await sleep(3_500);
    server.resume();
    for (let i = 0; i < 100 && diverged.length === 0; i++) await sleep(100);
    expect(diverged).toHaveLength(1);
    expect(diverged[0]!.message).toMatch(/changed under this node: seq \d+ was read as commit \S+ and now holds nothing/);
    await expect(log.append(proposals('a', 3, 1))).rejects.toThrow(/changed under this node/);
    expect(got).toHaveLength(2);
  });

  it('reads a message published twice with one message id once (JetStream de-duplicates)', async () => {
    const { stream } = suite;
    const log = make('a');
    await log.open();
    const got = collect(log);
    const nc = await connect({ servers: single.urls });
    try {
      const js = jetstream(nc);
      const payload = JSON.stringify([{ p: 'x-1', c: { t: 'barrier' }, t: 5 }]);
      const first = await js.publish(`roster.log.${stream}`, payload, { msgID: 'x.boot.1' });
      const again = await js.publish(`roster.log.${stream}`, payload, { msgID: 'x.boot.1' });
      expect(again).toMatchObject({ duplicate: true, seq: first.seq });
    } finally {
      await nc.close();
    }
    await log.append(proposals('a', 1, 1));
    expect(got.map((e) => [e.index, e.pid])).toEqual([[1, 'x-1'], [2, 'a-1']]);
  });

  it('opens a new node from another node\'s snapshot, reading only the messages after it', async () => {
    const clock = new ManualClock(1_000_000);
    const a = make('a', { clock });
    await a.open();
    const gotA = collect(a);
    for (let k = 1; k <= 20; k += 1) {
      clock.advance(10);
      await a.append(proposals('a', k, 1));
    }
    await a.saveSnapshot({ index: 15, data: { upTo: 15 } });
    for (let k = 21; k <= 23; k += 1) await a.append(proposals('a', k, 1));
    await a.close();

    const b = make('b');
    expect(await b.open()).toEqual({ index: 15, data: { upTo: 15 } });
    // One message per commit here: the snapshot's mark is seq 15, so 16..23 are all b reads.
    expect(b.stats.messagesConsumed).toBe(8);
    expect(b.lastIndex()).toBe(23);
    expect(() => b.subscribe(14, () => undefined)).toThrow(/snapshot at 15/);
    const gotB = collect(b, 15);
    expect(gotB).toEqual(gotA.slice(15));
    await b.append(proposals('b', 24, 1));
    expect(gotB.at(-1)).toMatchObject({ index: 24, pid: 'b-24' });
    expect(gotB.at(-1)!.atMs).toBeGreaterThanOrEqual(gotA.at(-1)!.atMs);
  });

  it('refuses an append larger than one message can carry', async () => {
    const log = make('a');
    await log.open();
    const big = 'x'.repeat(600 * 1024);
    const err: unknown = await log.append([
      { pid: 'big-1', cmd: { t: 'kv.set', key: 'k', value: big, flags: '0' } },
      { pid: 'big-2', cmd: { t: 'kv.set', key: 'k', value: big, flags: '0' } },
    ]).catch((e: unknown) => e);
    expect(err).toBeInstanceOf(RangeError);
    expect((err as Error).message).toMatch(/max_payload/);
    await log.append(proposals('a', 1, 1));
    expect(log.lastIndex()).toBe(1);
  });

  it('stores a snapshot larger than one message (object store chunks it)', async () => {
    const log = make('a');
    await log.open();
    await log.append(proposals('a', 1, 1));
    const data = { blob: 'y'.repeat(3 * 1024 * 1024) };
    await log.saveSnapshot({ index: 1, data });
    await log.close();
    const again = make('a');
    expect(await again.open()).toEqual({ index: 1, data });
  });
});

describe('JetStreamLog on a three-server cluster (R3)', () => {
  let cluster: NatsCluster;
  const logs: JetStreamLog[] = [];
  /** What the logs reported (retries, consumer replacements): shown when a wait times out. */
  const trace: string[] = [];
  const note = (node: string) => (obj: object, msg?: string): void => {
    trace.push(`${new Date().toISOString()} ${node} ${msg ?? ''} ${JSON.stringify(obj)}`);
  };

  beforeAll(async () => {
    cluster = await startNatsCluster();
  });
  afterAll(async () => {
    for (const log of logs.splice(0)) await log.close().catch(() => undefined);
    await cluster?.shutdown();
  });

  function make(nodeName: string, stream: string, servers: string[]): JetStreamLog {
    const log = new JetStreamLog({
      servers, stream, replicas: 3, nodeName, clock: new SystemClock(), publishTimeoutMs: 1000, consumerExpiresMs: 2000,
      logger: { ...silentLogger, info: note(nodeName), warn: note(nodeName), error: note(nodeName) },
    });
    logs.push(log);
    return log;
  }

  /** The stream's leader as its info says, asked until it names one (an election may be under way). */
  async function streamLeader(stream: string): Promise<string | undefined> {
    const nc = await connect({ servers: cluster.servers.filter((s) => s.running()).map((s) => s.url) });
    try {
      const jsm = await jetstreamManager(nc, { timeout: 2000 });
      const deadline = Date.now() + 15_000;
      while (Date.now() < deadline) {
        const leader = await jsm.streams.info(stream).then((i) => i.cluster?.leader, () => undefined);
        if (leader !== undefined) return leader;
        await sleep(200);
      }
      return undefined;
    } finally {
      await nc.close();
    }
  }

  it('keeps appending after the stream leader is killed, every acknowledged append present exactly once', async () => {
    const stream = freshStream('T');
    const boot = make('boot', stream, cluster.urls);
    await boot.open();
    await boot.close();
    const leader = await streamLeader(stream);
    expect(leader).toMatch(/^n[123]$/);
    const follower = cluster.servers.find((s) => s.name !== leader)!;
    // One node talks to the leader (it will lose its connection), one to a follower (it will not).
    const a = make('a', stream, [cluster.byName(leader!).url]);
    const b = make('b', stream, [follower.url]);
    await a.open();
    await b.open();
    const gotA = collect(a);
    const gotB = collect(b);
    const state = (): string => [`a at ${a.lastIndex()} ${JSON.stringify(a.stats)}`,
      `b at ${b.lastIndex()} ${JSON.stringify(b.stats)}`, ...trace].join('\n');

    // Four writers, two per node, each appending one or two proposals at a time until told to stop.
    const acked: string[] = [];
    const failed: string[] = [];
    let ackedAfterKill = 0;
    let killed = false;
    let stop = false;
    let running = 0;
    const writer = async (name: string, log: JetStreamLog): Promise<void> => {
      for (let k = 1; !stop; k += 1) {
        const ps = proposals(name, k * 10, 1 + (k % 2));
        try {
          await log.append(ps);
          acked.push(...ps.map((p) => p.pid));
          if (killed) ackedAfterKill += 1;
        } catch (err) {
          failed.push(`${ps.map((p) => p.pid).join(',')}: ${String(err)}`);
          await sleep(50);
        }
      }
    };
    for (const [name, log] of [['a', a], ['a2', a], ['b', b], ['b2', b]] as const) {
      running += 1;
      void writer(name, log).finally(() => { running -= 1; });
    }
    await until('appends before the kill', () => acked.length >= 40, 10_000, state);
    await cluster.byName(leader!).kill();
    killed = true;
    await until('appends after the kill', () => ackedAfterKill >= 40, 30_000, state);
    stop = true;
    await until('the writers to finish', () => running === 0, 15_000, state);
    await until('both nodes to read the same end', () => gotA.length === gotB.length && a.lastIndex() === b.lastIndex(), 10_000, state);

    expect(failed).toEqual([]);
    expect(gotB).toEqual(gotA);
    const pids = gotA.map((e) => e.pid);
    expect(new Set(pids).size).toBe(pids.length);
    const present = new Set(pids);
    expect(acked.filter((p) => !present.has(p))).toEqual([]);
    // The stream itself, read afresh from the survivors, holds exactly that log.
    const c = make('c', stream, cluster.servers.filter((s) => s.running()).map((s) => s.url));
    await c.open();
    expect(collect(c)).toEqual(gotA);
    const newLeader = await streamLeader(stream);
    expect(newLeader).toBeDefined();
    expect(newLeader).not.toBe(leader);
  }, 60_000);
});
