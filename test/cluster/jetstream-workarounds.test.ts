// Goal: the JetStream log's answers to what nats-server 2.9.10 was seen to do, each on its own without a
// server: the divergence audit (a deposed leader's consumer delivering a message the stream does not
// hold), the watchdog of a consumer whose server went silent, leadership that survives one unanswered
// request, publishes retried with one message id, snapshots that cannot be read at open, and a consumer
// hosted on a copy of the stream that stopped following the leader (replaced, so catching up ends).
import { afterEach, beforeEach, describe, expect, it, vi } from 'vitest';
import { ClosedConnectionError, TimeoutError } from '@nats-io/transport-node';
import type { PubAck, StreamInfo } from '@nats-io/jetstream';
import type { ObjectStore } from '@nats-io/obj';
import { isOutcomeUnknown, silentLogger, type LogObserver } from '../../src/ports/index.ts';
import { errorWire } from '../../src/http/dispatch.ts';
import { DivergenceAudit } from '../../cluster/jetstream/audit.ts';
import { ConsumerLiveness, consumerSilentHeartbeatsMax } from '../../cluster/jetstream/liveness.ts';
import { LeadershipWatch, leadershipPollMs } from '../../cluster/jetstream/leadership.ts';
import { emptyStats } from '../../cluster/jetstream/options.ts';
import { Marks } from '../../cluster/jetstream/marks.ts';
import { Reader } from '../../cluster/jetstream/reader.ts';
import { commitPayload, encodeForMessage, Publisher, type PublisherPorts } from '../../cluster/jetstream/publisher.ts';
import { SnapshotStore } from '../../cluster/jetstream/snapshots.ts';

/** An audit over a stream whose message ids by seq the test sets; records what it reported. */
function auditOver(stream: Map<number, string>) {
  const diverged: Error[] = [];
  let stopped = false;
  const asked: number[] = [];
  const audit = new DivergenceAudit({
    stream: 'LOG', logger: silentLogger, ownIdPrefix: 'me.boot.',
    storedId: (seq) => { asked.push(seq); return Promise.resolve(stream.get(seq)); },
    stopped: () => stopped,
    diverged: (err) => { diverged.push(err); stopped = true; },
  });
  return { audit, diverged, asked };
}

describe('DivergenceAudit', () => {
  it('confirms an own commit read where it was stored without asking the stream', async () => {
    const { audit, diverged, asked } = auditOver(new Map());
    audit.read(1, 'me.boot.1');
    expect(await audit.ownCommit('me.boot.1', 1)).toBe(true);
    expect(asked).toEqual([]);
    expect(diverged).toEqual([]);
  });

  it('accepts an own commit read earlier at a seq the stream also holds it at (a copy stored twice)', async () => {
    const { audit, diverged } = auditOver(new Map([[2, 'me.boot.1'], [3, 'me.boot.1']]));
    audit.read(2, 'me.boot.1');
    expect(await audit.ownCommit('me.boot.1', 3)).toBe(true);
    expect(diverged).toEqual([]);
  });

  it('fails when another message was read where the stream stored an own commit', async () => {
    const { audit, diverged } = auditOver(new Map([[4, 'me.boot.7']]));
    audit.read(4, 'other.boot.1');
    expect(await audit.ownCommit('me.boot.7', 4)).toBe(false);
    expect(diverged[0]!.message).toMatch(/seq 4 was read as commit other\.boot\.1 and now holds commit me\.boot\.7/);
  });

  it('fails when an own commit\'s seq was passed with nothing remembered there', async () => {
    const { audit, diverged } = auditOver(new Map());
    expect(await audit.ownCommit('me.boot.9', 5)).toBe(false);
    expect(diverged[0]!.message).toMatch(/commit me\.boot\.9 is stored at seq 5 but this node read another message there/);
  });

  it('checks the message read last before resuming, unless the cursor is a snapshot\'s mark', async () => {
    const { audit, diverged } = auditOver(new Map([[1, 'x.b.1']]));
    expect(await audit.beforeResume(7)).toBe(true);
    audit.read(1, 'x.b.1');
    audit.read(2, 'x.b.2');
    expect(await audit.beforeResume(5)).toBe(true);
    expect(await audit.beforeResume(2)).toBe(false);
    expect(diverged[0]!.message).toMatch(/seq 2 was read as commit x\.b\.2 and now holds nothing/);
  });

  it('after a recreation checks the last messages read, retrying while the stream cannot be asked', async () => {
    let failures = 1;
    const stream = new Map([[1, 'x.b.1'], [2, 'x.b.2']]);
    const audit = new DivergenceAudit({
      stream: 'LOG', logger: silentLogger, ownIdPrefix: 'me.boot.', stopped: () => false, diverged: () => undefined,
      storedId: (seq) => (failures-- > 0 ? Promise.reject(new TimeoutError()) : Promise.resolve(stream.get(seq))),
    });
    audit.read(1, 'x.b.1');
    audit.read(2, 'x.b.2');
    audit.afterRecreate();
    expect(await audit.passed()).toBe(true);
    stream.set(2, 'y.b.1');
    audit.afterRecreate();
    expect(await audit.passed()).toBe(false);
  });

  it('checks where an unacknowledged own commit was read, in the background', async () => {
    const { audit, diverged, asked } = auditOver(new Map());
    audit.unacknowledged('me.boot.3');
    expect(asked).toEqual([]);
    audit.read(6, 'me.boot.3');
    audit.unacknowledged('me.boot.3');
    await vi.waitFor(() => expect(diverged).toHaveLength(1));
    expect(asked).toEqual([6]);
  });
});

describe('timers', () => {
  beforeEach(() => { vi.useFakeTimers(); });
  afterEach(() => { vi.useRealTimers(); });

  it('replaces a consumer whose server stayed silent for several heartbeats, not one that shows signs of life', () => {
    const liveness = new ConsumerLiveness();
    const silent: number[] = [];
    const stop = liveness.watchdog(1000, () => false, (ms) => silent.push(ms));
    vi.advanceTimersByTime((consumerSilentHeartbeatsMax - 1) * 1000);
    liveness.alive();
    vi.advanceTimersByTime((consumerSilentHeartbeatsMax - 1) * 1000);
    expect(silent).toEqual([]);
    vi.advanceTimersByTime(1000);
    expect(silent).toEqual([consumerSilentHeartbeatsMax * 1000]);
    stop();
    vi.advanceTimersByTime(10_000);
    expect(silent).toHaveLength(1);
  });

  it('keeps the stream\'s leader through unanswered requests until three in a row', async () => {
    const watch = new LeadershipWatch();
    let answer: 'up' | 'down' = 'up';
    const info = { cluster: { leader: 'n1', replicas: [{ name: 'n3' }, { name: 'n2' }] } } as unknown as StreamInfo;
    watch.start(() => (answer === 'up' ? Promise.resolve(info) : Promise.reject(new TimeoutError())), info);
    expect(watch.current()).toEqual({ leader: 'n1', peers: ['n1', 'n2', 'n3'], lastContactMs: 0 });
    answer = 'down';
    await vi.advanceTimersByTimeAsync(2 * leadershipPollMs);
    expect(watch.current()).toMatchObject({ leader: 'n1', lastContactMs: 2 * leadershipPollMs });
    await vi.advanceTimersByTimeAsync(leadershipPollMs);
    expect(watch.current().leader).toBeUndefined();
    answer = 'up';
    await vi.advanceTimersByTimeAsync(leadershipPollMs);
    expect(watch.current()).toMatchObject({ leader: 'n1', lastContactMs: 0 });
    watch.stop();
  });
});

/** A publisher over a client whose answers the test lists (an Error is thrown, a PubAck returned). */
function publisherOver(answers: (Error | Partial<PubAck>)[], extra: Partial<PublisherPorts> = {}) {
  const calls: { msgID: string | undefined; payload: string }[] = [];
  const stats = emptyStats();
  const js = {
    publish: (_subject: string, payload: unknown, opts?: { msgID?: string }) => {
      calls.push({ msgID: opts?.msgID, payload: String(payload) });
      const next = answers.shift() ?? new Error('no more answers');
      return next instanceof Error ? Promise.reject(next) : Promise.resolve({ stream: 'LOG', seq: 1, duplicate: false, ...next } as PubAck);
    },
  } as PublisherPorts['js'];
  const publisher = new Publisher({
    js, stream: 'LOG', subject: 'roster.log.LOG', publishTimeoutMs: 100, publishRetryMsMax: 2000, stats, logger: silentLogger,
    failed: () => false, observer: () => undefined, ...extra,
  }, 'me.boot.');
  return { publisher, calls, stats };
}

describe('Publisher', () => {
  it('retries a timed-out publish with the same message id and counts a duplicate ack', async () => {
    const committed: number[] = [];
    const observer = { committed: (entries: number) => committed.push(entries) } as unknown as LogObserver;
    const { publisher, calls, stats } = publisherOver([new TimeoutError(), { seq: 3, duplicate: true }], { observer: () => observer });
    const batch = [{ items: encodeForMessage([{ pid: 'p1', cmd: { t: 'barrier' } }], 1000).items, bytes: 0, resolve() {}, reject() {} }];
    const ack = await publisher.commit(batch, 42, publisher.nextId());
    expect(ack.seq).toBe(3);
    expect(calls.map((c) => c.msgID)).toEqual(['me.boot.1', 'me.boot.1']);
    expect(calls[0]!.payload).toBe(commitPayload(batch, 42));
    expect(JSON.parse(calls[0]!.payload)).toEqual([{ p: 'p1', c: { t: 'barrier' }, t: 42, v: 1 }]);
    expect(stats).toMatchObject({ commits: 1, entries: 1, duplicates: 1, publishRetries: 1 });
    expect(committed).toEqual([1]);
    expect(publisher.nextId()).toBe('me.boot.2');
  });

  it('asks again when the ack is a duplicate at seq 0 (its first publish not stored yet), until it names the sequence', async () => {
    const { publisher, calls, stats } = publisherOver([{ seq: 0, duplicate: true }, { seq: 11, duplicate: true }]);
    const ack = await publisher.publish('[]', 'me.boot.4');
    expect(ack.seq).toBe(11);
    expect(calls.map((c) => c.msgID)).toEqual(['me.boot.4', 'me.boot.4']);
    expect(stats.publishRetries).toBe(1);
  });

  it('does not retry once the log has failed, nor a failure that is not transient', async () => {
    const failed = publisherOver([new TimeoutError(), {}], { failed: () => true });
    await expect(failed.publisher.publish('[]', 'me.boot.1')).rejects.toThrow(/failed after 1 attempts .*outcome unknown/);
    const closed = publisherOver([new ClosedConnectionError(), {}]);
    await expect(closed.publisher.publish('[]', 'me.boot.1')).rejects.toThrow(/failed after/);
  });

  it('a commit given up on is an outcome-unknown error, answered 503 with outcome unknown (Consul: 500), not an internal error', async () => {
    const { publisher } = publisherOver([new TimeoutError(), {}], { failed: () => true });
    const err = await publisher.publish('[]', 'me.boot.2').catch((e: unknown) => e);
    expect(isOutcomeUnknown(err)).toBe(true);
    const seed = errorWire({ dialect: 'seed', logger: silentLogger }, err, 'r1');
    expect(seed.status).toBe(503);
    expect(JSON.parse(String(seed.body))).toMatchObject({ code: 1016, details: { outcome: 'unknown' } });
    expect(seed.headers.some(([k]) => k.toLowerCase() === 'retry-after')).toBe(false);
    const consul = errorWire({ dialect: 'consul', logger: silentLogger }, err, 'r2');
    expect(consul.status).toBe(500);
    expect(String(consul.body)).not.toContain('internal error');
  });

  it('refuses an ack from another stream (the subject is stored elsewhere)', async () => {
    const { publisher } = publisherOver([{ stream: 'OTHER' }]);
    await expect(publisher.publish('[]', 'me.boot.1')).rejects.toThrow(/roster\.log\.LOG is stored by stream OTHER, not LOG/);
  });

  it('refuses an append that one message cannot carry', () => {
    const big = { pid: 'p', cmd: { t: 'kv.set', key: 'k', value: 'x'.repeat(600), flags: '0' } } as const;
    expect(() => encodeForMessage([big, big], 1000)).toThrow(/above the 1000-byte commit limit \(the server's max_payload/);
  });
});

describe('SnapshotStore at open', () => {
  const hanging = { list: () => new Promise(() => undefined) } as unknown as ObjectStore;
  const store = new SnapshotStore({
    store: hanging, stream: 'LOG', nodeName: 'a', logger: silentLogger, streamCreated: 'c', publishTimeoutMs: 100, openTimeoutMs: 400,
  });
  const info = (first: number): StreamInfo => ({ created: 'c', state: { messages: 5, first_seq: first, last_seq: 5 } }) as unknown as StreamInfo;

  it('replays the whole stream when the snapshots cannot be read and the stream still holds every message', async () => {
    expect(await store.startFrom(info(1), performance.now() + 400)).toBeUndefined();
  });

  it('does not start when the snapshots cannot be read and the stream has dropped its first messages', async () => {
    await expect(store.startFrom(info(3), performance.now() + 400)).rejects.toThrow(/JetStreamLog\.open: snapshot: .*no answer/);
  });
});

/**
 * A stream of barrier commits as copies on servers: `copies[k]` is how far the k-th consumer's server holds
 * it. A consumer delivers its server's messages after its start, then only heartbeats, until stopped.
 */
function streamOnCopies(copies: number[]) {
  const placed: number[] = [];
  const deleted: number[] = [];
  const message = (seq: number) => ({
    seq, headers: undefined, data: new TextEncoder().encode(JSON.stringify([{ p: `x-${seq}`, c: { t: 'barrier' }, t: 1 }])),
  });
  const js = {
    consumers: {
      get(_stream: string, opts: { opt_start_seq: number }) {
        const k = placed.length;
        const holds = copies[Math.min(k, copies.length - 1)]!;
        placed.push(opts.opt_start_seq);
        return Promise.resolve({
          delete: () => { deleted.push(k); return Promise.resolve(true); },
          consume: ({ callback }: { callback(m: unknown): void }) => {
            let stop!: () => void;
            const closed = new Promise<void>((resolve) => { stop = resolve; });
            queueMicrotask(() => { for (let seq = opts.opt_start_seq; seq <= holds; seq++) callback(message(seq)); });
            return Promise.resolve({
              stop, closed: () => closed,
              // Heartbeats: the server is alive, it just has nothing more to hand over.
              async *status() { for (;;) { const beat = await Promise.race([closed.then(() => false), new Promise<boolean>((r) => setTimeout(() => r(true), 20))]); if (!beat) return; yield { type: 'heartbeat' }; } },
            });
          },
        });
      },
    },
  };
  return { js, placed, deleted };
}

describe('Reader on a copy of the stream that stopped following', () => {
  function readerOn(copies: number[]) {
    const { js, placed, deleted } = streamOnCopies(copies);
    const stats = emptyStats();
    const audit = new DivergenceAudit({
      stream: 'LOG', logger: silentLogger, ownIdPrefix: 'me.boot.', storedId: () => Promise.resolve(undefined),
      stopped: () => false, diverged: () => undefined,
    });
    let stopped = false;
    const reader = new Reader({
      js: js as never, stream: 'LOG', subject: 'roster.log.LOG', strictSeq: true, consumerExpiresMs: 60_000, stallMs: 200, stats,
      logger: silentLogger, marks: new Marks({ seq: 0, index: 0, atMs: 0 }), audit, stopped: () => stopped,
      failure: () => undefined, fail: () => undefined, deliver: () => undefined,
    }, { seq: 0, index: 0, atMs: 0 }, 0);
    reader.start();
    return { reader, placed, deleted, stats, stop: () => { stopped = true; reader.stop(); } };
  }

  it('replaces a consumer that delivers nothing while a stored sequence is awaited; the next one resumes after the cursor', async () => {
    // The first server's copy ends at 5, the stream at 6: catching up to 6 ends only on another copy.
    const r = readerOn([5, 6]);
    try {
      await r.reader.catchUp(6, performance.now() + 5_000, 5_000);
      expect(r.reader.cursor.seq).toBe(6);
      expect(r.stats.consumerStalls).toBe(1);
      expect(r.deleted).toEqual([0]);
      expect(r.placed).toEqual([1, 6]);
    } finally {
      r.stop();
    }
  });

  it('leaves an idle consumer alone while nobody waits, and one that keeps delivering', async () => {
    const r = readerOn([6]);
    try {
      await r.reader.catchUp(6, performance.now() + 5_000, 5_000);
      await new Promise((resolve) => setTimeout(resolve, 600));
      expect(r.stats.consumerStalls).toBe(0);
      expect(r.placed).toEqual([1]);
    } finally {
      r.stop();
    }
  });
});
