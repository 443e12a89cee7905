// Goal: the commit queue's linger. A commit waits `lingerMs` for more appends while entries of earlier
// commits are not settled yet (their writers will likely write again once answered), unless the waiting
// appends already fill a commit; with nothing else unsettled (a lone writer, an idle log) it starts at
// once; a queue emptied by a failure leaves no commit behind.
import { afterEach, beforeEach, describe, expect, it, vi } from 'vitest';
import { CommitQueue, type Pending } from '../../src/log/index.ts';

/**
 * A queue whose commits the test drives: `ack` ends a commit (its slot is free, as a PubAck frees the
 * cluster log's), `settle` answers its appends (as reading the commit back does).
 */
function queueOf(bounds: { entriesMax?: number; lingerMs?: number }) {
  const commits: { items: string[]; ack(): void; settle(): void }[] = [];
  const queue = new CommitQueue<string>('Test', {
    entriesMax: bounds.entriesMax ?? 100, bytesMax: 1 << 20, queuedEntriesMax: 1000, inFlightMax: 1, lingerMs: bounds.lingerMs,
  }, (batch: Pending<string>[]) => new Promise<void>((resolve) => {
    commits.push({
      items: batch.flatMap((p) => p.items),
      ack: resolve,
      settle: () => {
        for (const p of batch) p.resolve();
      },
    });
  }));
  const settled: string[] = [];
  const failed: string[] = [];
  const append = (item: string): void => {
    queue.enqueue([item], 10).then(() => settled.push(item), () => failed.push(item));
  };
  return { queue, commits, append, settled, failed };
}

/** Lets promise reactions run (the pump waits one microtask; an acknowledged commit pumps a few later). */
const flush = async (): Promise<void> => {
  for (let k = 0; k < 10; k++) await Promise.resolve();
};

/** Commits a, appends b while a is in flight, then acknowledges a (not answered yet): b waits for the next commit. */
async function bWaitsBehindA(q: ReturnType<typeof queueOf>): Promise<void> {
  q.append('a');
  await flush();
  q.append('b');
  await flush();
  q.commits[0]!.ack();
  await flush();
}

describe('CommitQueue lingerMs', () => {
  beforeEach(() => {
    vi.useFakeTimers({ toFake: ['setTimeout', 'clearTimeout', 'performance'] });
  });
  afterEach(() => {
    vi.useRealTimers();
  });

  it('lingers while earlier entries are unsettled, and takes what comes meanwhile', async () => {
    const q = queueOf({ lingerMs: 5 });
    q.append('a');
    await flush();
    // Nothing else unsettled: at once.
    expect(q.commits.map((c) => c.items)).toEqual([['a']]);
    q.append('b');
    q.append('c');
    await flush();
    q.commits[0]!.ack();
    await flush();
    // a is acknowledged but not answered yet: the next commit waits 5 ms.
    expect(q.commits).toHaveLength(1);
    await vi.advanceTimersByTimeAsync(4);
    q.append('d');
    await flush();
    expect(q.commits).toHaveLength(1);
    await vi.advanceTimersByTimeAsync(1);
    expect(q.commits.map((c) => c.items)).toEqual([['a'], ['b', 'c', 'd']]);
    q.commits[0]!.settle();
    q.commits[1]!.ack();
    q.commits[1]!.settle();
    await flush();
    expect(q.settled).toEqual(['a', 'b', 'c', 'd']);
    // Everything answered, but the last commit took three appends 5 ms ago: writers are busy, it lingers.
    q.append('e');
    await flush();
    expect(q.commits).toHaveLength(2);
    await vi.advanceTimersByTimeAsync(5);
    expect(q.commits.map((c) => c.items)).toEqual([['a'], ['b', 'c', 'd'], ['e']]);
    q.commits[2]!.ack();
    q.commits[2]!.settle();
    await flush();
    // A commit of one append, everything answered: the next append commits at once again.
    q.append('f');
    await flush();
    expect(q.commits.map((c) => c.items)).toEqual([['a'], ['b', 'c', 'd'], ['e'], ['f']]);
  });

  it('stops counting a commit of several appends as a sign of busy writers after 50 × lingerMs', async () => {
    const q = queueOf({ lingerMs: 2 });
    q.append('a');
    q.append('b');
    await flush();
    expect(q.commits.map((c) => c.items)).toEqual([['a', 'b']]);
    q.commits[0]!.ack();
    q.commits[0]!.settle();
    await flush();
    await vi.advanceTimersByTimeAsync(100);
    q.append('c');
    await flush();
    expect(q.commits.map((c) => c.items)).toEqual([['a', 'b'], ['c']]);
  });

  it('does not linger for a lone writer, nor without lingerMs', async () => {
    const lone = queueOf({ lingerMs: 5 });
    lone.append('a');
    await flush();
    lone.commits[0]!.ack();
    lone.commits[0]!.settle();
    await flush();
    lone.append('b');
    await flush();
    expect(lone.commits.map((c) => c.items)).toEqual([['a'], ['b']]);

    const none = queueOf({});
    await bWaitsBehindA(none);
    expect(none.commits.map((c) => c.items)).toEqual([['a'], ['b']]);
  });

  it('stops lingering once the waiting appends fill a commit', async () => {
    const q = queueOf({ lingerMs: 1000, entriesMax: 3 });
    await bWaitsBehindA(q);
    expect(q.commits).toHaveLength(1);
    q.append('c');
    q.append('d');
    await flush();
    expect(q.commits.map((c) => c.items)).toEqual([['a'], ['b', 'c', 'd']]);
  });

  it('leaves no commit behind when the waiting appends are rejected while it lingers', async () => {
    const q = queueOf({ lingerMs: 5 });
    await bWaitsBehindA(q);
    q.queue.rejectQueued(new Error('log failed'));
    await flush();
    await vi.advanceTimersByTimeAsync(10);
    expect(q.failed).toEqual(['b']);
    expect(q.commits).toHaveLength(1);
    q.commits[0]!.settle();
    await flush();
    await expect(q.queue.idle()).resolves.toBeUndefined();
    // a settled and b was refused: nothing is unsettled, so the next append commits at once.
    q.append('c');
    await flush();
    expect(q.commits.map((c) => c.items)).toEqual([['a'], ['c']]);
  });
});
