// Goal: the next commit publishes only once the previous one is acknowledged, taking every append that
// piled up meanwhile, while an append still resolves only once its commit was read back here.
import { describe, expect, it } from 'vitest';
import type { PubAck } from '@nats-io/jetstream';
import { Committer } from '../../cluster/jetstream/committer.ts';
import type { Publisher } from '../../cluster/jetstream/publisher.ts';
import type { Reader } from '../../cluster/jetstream/reader.ts';
import type { DivergenceAudit } from '../../cluster/jetstream/audit.ts';
import { CommitQueue, type EncodedProposal, type Pending } from '../../src/log/index.ts';
import { ManualClock } from '../../src/ports/clock.ts';

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
