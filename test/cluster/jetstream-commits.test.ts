// Goal: commits are published as plain messages whose PubAcks come back to this node's inbox (stored
// once per message id, failures shaped as js.publish's, nothing left waiting), and the next commit
// publishes only once the previous one is acknowledged, taking every append that piled up meanwhile,
// while an append still resolves only once its commit was read back here. The commit linger's setting
// (the linger itself: test/log/commit-queue.test.ts) is checked at its bounds.
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { ClosedConnectionError, connect, NoRespondersError, TimeoutError, type NatsConnection } from '@nats-io/transport-node';
import { JetStreamApiError, type PubAck } from '@nats-io/jetstream';
import { AckInbox, ackOf } from '../../cluster/jetstream/ack-inbox.ts';
import { Committer } from '../../cluster/jetstream/committer.ts';
import type { Publisher } from '../../cluster/jetstream/publisher.ts';
import type { Reader } from '../../cluster/jetstream/reader.ts';
import type { DivergenceAudit } from '../../cluster/jetstream/audit.ts';
import { isTransient } from '../../cluster/jetstream/retry.ts';
import { settingsOf } from '../../cluster/jetstream/options.ts';
import { startNatsServer, type NatsCluster } from '../../cluster/dev/nats-launcher.ts';
import { CommitQueue, type EncodedProposal, type Pending } from '../../src/log/index.ts';
import { ManualClock } from '../../src/ports/clock.ts';
import { freshStream, withJsm } from '../support/jetstream.ts';

describe('AckInbox on a real nats-server', () => {
  let server: NatsCluster;
  let nc: NatsConnection;
  beforeAll(async () => {
    server = await startNatsServer();
    nc = await connect({ servers: server.urls });
  });
  afterAll(async () => {
    await nc?.close();
    await server?.shutdown();
  });

  it('is acknowledged with the stored sequence, and once per message id', async () => {
    const stream = freshStream('A');
    await withJsm(server.urls, (jsm) => jsm.streams.add({ name: stream, subjects: [`acks.${stream}`] }));
    const inbox = new AckInbox(nc);
    const first = await inbox.publish(`acks.${stream}`, '[1]', { msgID: 'n.b.1', timeout: 5000 });
    const second = await inbox.publish(`acks.${stream}`, '[2]', { msgID: 'n.b.2', timeout: 5000 });
    const again = await inbox.publish(`acks.${stream}`, '[1]', { msgID: 'n.b.1', timeout: 5000 });
    expect(first).toEqual({ stream, seq: 1, duplicate: false });
    expect(second).toEqual({ stream, seq: 2, duplicate: false });
    expect(again).toEqual({ stream, seq: 1, duplicate: true });
    expect(inbox.pending).toBe(0);
    expect((await withJsm(server.urls, (jsm) => jsm.streams.info(stream))).state.messages).toBe(2);
  });

  it('says no responders where no stream listens, and passes on JetStream\'s refusal', async () => {
    const inbox = new AckInbox(nc);
    const none = await inbox.publish('acks.nobody', '[]', { msgID: 'n.b.1', timeout: 5000 }).catch((e: unknown) => e);
    expect(none).toBeInstanceOf(NoRespondersError);
    expect(isTransient(none)).toBe(true);
    const stream = freshStream('A');
    await withJsm(server.urls, (jsm) => jsm.streams.add({ name: stream, subjects: [`acks.${stream}`], max_msg_size: 8 }));
    const refused = await inbox.publish(`acks.${stream}`, 'x'.repeat(64), { msgID: 'n.b.2', timeout: 5000 }).catch((e: unknown) => e);
    expect(refused).toBeInstanceOf(JetStreamApiError);
    expect((refused as JetStreamApiError).status).toBe(400);
    expect(isTransient(refused)).toBe(false);
    expect(inbox.pending).toBe(0);
  });

  it('times out without an answer, and fails what waits when the connection closes', async () => {
    const own = await connect({ servers: server.urls });
    // A responder that never answers: the publish is taken, its ack never comes.
    const mute = own.subscribe('acks.mute');
    await own.flush();
    const inbox = new AckInbox(own);
    const late = await inbox.publish('acks.mute', '[]', { msgID: 'n.b.1', timeout: 200 }).catch((e: unknown) => e);
    expect(late).toBeInstanceOf(TimeoutError);
    expect(inbox.pending).toBe(0);
    const waiting = inbox.publish('acks.mute', '[]', { msgID: 'n.b.2', timeout: 60_000 }).catch((e: unknown) => e);
    await own.flush();
    expect(inbox.pending).toBe(1);
    mute.unsubscribe();
    await own.close();
    expect(await waiting).toBeInstanceOf(ClosedConnectionError);
    expect(inbox.pending).toBe(0);
    const closed = await inbox.publish('acks.mute', '[]', { msgID: 'n.b.3', timeout: 200 }).catch((e: unknown) => e);
    expect(closed).toBeInstanceOf(ClosedConnectionError);
    expect(isTransient(closed)).toBe(false);
  });
});

describe('ackOf', () => {
  const reply = (text: string) => ({ data: new TextEncoder().encode(text), headers: undefined });

  it('reads a PubAck, and refuses a reply that is not one', () => {
    expect(ackOf(reply('{"stream":"LOG","seq":7}'), 's')).toEqual({ stream: 'LOG', seq: 7, duplicate: false });
    expect(ackOf(reply('{"stream":"LOG","seq":7,"duplicate":true,"domain":"d"}'), 's'))
      .toEqual({ stream: 'LOG', seq: 7, duplicate: true, domain: 'd' });
    for (const bad of ['nope', '{}', '{"stream":"","seq":1}', '{"stream":"LOG"}', '3']) {
      expect(ackOf(reply(bad), 's')).toBeInstanceOf(Error);
    }
    const err = ackOf(reply('{"error":{"code":503,"err_code":10008,"description":"jetstream unavailable"}}'), 's');
    expect(err).toBeInstanceOf(JetStreamApiError);
    expect(isTransient(err)).toBe(true);
  });
});

/** A commit path whose acks and read-back the test drives. */
function drivenCommits() {
  const published: { ids: string[]; ack: (seq: number) => void }[] = [];
  let readUpTo = 0;
  const readers: { seq: number; resolve(): void }[] = [];
  let counter = 0;
  const publisher = {
    nextId: () => `me.boot.${++counter}`,
    commit: (batch: readonly Pending<EncodedProposal>[]) => new Promise<PubAck>((resolve) => {
      published.push({
        ids: batch.flatMap((p) => p.items.map((i) => i.pidJson)),
        ack: (seq) => resolve({ stream: 'LOG', seq, duplicate: false }),
      });
    }),
  } as unknown as Publisher;
  const reader = {
    cursor: { seq: 0, index: 0, atMs: 0 },
    waitFor: (seq: number) => (seq <= readUpTo ? Promise.resolve() : new Promise<void>((resolve) => readers.push({ seq, resolve }))),
  } as unknown as Reader;
  const audit = {
    unacknowledged: () => undefined, ownCommit: () => Promise.resolve(true), passed: () => Promise.resolve(true),
  } as unknown as DivergenceAudit;
  const committer = new Committer({ reader, publisher, audit, clock: new ManualClock(1000), failure: () => undefined });
  const queue = new CommitQueue<EncodedProposal>('Test', { entriesMax: 100, bytesMax: 1 << 20, queuedEntriesMax: 1000, inFlightMax: 1 },
    (batch) => committer.commit(batch));
  const settled: string[] = [];
  const append = (pid: string): void => {
    void queue.enqueue([{ pidJson: JSON.stringify(pid) } as EncodedProposal], 10).then(() => settled.push(pid));
  };
  const readThrough = (seq: number): void => {
    readUpTo = seq;
    for (const r of readers.filter((w) => w.seq <= seq)) r.resolve();
  };
  return { published, settled, append, readThrough, committer, queue };
}

const turns = async (n = 5): Promise<void> => {
  for (let k = 0; k < n; k++) await new Promise((resolve) => setImmediate(resolve));
};

describe('Committer', () => {
  it('publishes the next commit once the previous one is acknowledged, with all that piled up meanwhile', async () => {
    const c = drivenCommits();
    c.append('a');
    await turns();
    expect(c.published.map((p) => p.ids)).toEqual([['"a"']]);
    c.append('b');
    await turns();
    c.append('c');
    await turns();
    // The first commit waits for its ack: b and c wait for the next commit.
    expect(c.published).toHaveLength(1);
    c.published[0]!.ack(1);
    await turns();
    expect(c.published.map((p) => p.ids)).toEqual([['"a"'], ['"b"', '"c"']]);
    // Acknowledged is not enough: an append resolves once its commit was read back here.
    expect(c.settled).toEqual([]);
    c.published[1]!.ack(2);
    await turns();
    expect(c.settled).toEqual([]);
    c.readThrough(1);
    await turns();
    expect(c.settled).toEqual(['a']);
    let confirmed = false;
    void c.committer.confirmed().then(() => { confirmed = true; });
    await turns();
    expect(confirmed).toBe(false);
    c.readThrough(2);
    await turns();
    expect(c.settled).toEqual(['a', 'b', 'c']);
    expect(confirmed).toBe(true);
  });
});

describe('commitLingerMs', () => {
  const base = { servers: ['nats://127.0.0.1:4222'], nodeName: 'n1', clock: new ManualClock(0) };
  it('defaults to 1 ms, takes 0 (publish at once) to 1000, and refuses anything else', () => {
    expect(settingsOf(base).commitLingerMs).toBe(1);
    expect(settingsOf({ ...base, commitLingerMs: 0 }).commitLingerMs).toBe(0);
    expect(settingsOf({ ...base, commitLingerMs: 1000 }).commitLingerMs).toBe(1000);
    for (const bad of [-1, 1.5, 1001, Number.NaN]) {
      expect(() => settingsOf({ ...base, commitLingerMs: bad })).toThrow(/commitLingerMs must be an integer in 0\.\.1000/);
    }
  });
});
