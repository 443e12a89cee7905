// Goal: compaction counts only on snapshots the bucket holds. The purger purges below a node's reported
// mark only once the bucket has a snapshot at or after it (the bucket may have been deleted since the mark
// was reported), and every node that sees the stream's start move past every snapshot, by a purge this
// cluster did not make, saves one at once.
import { expect, test } from 'vitest';
import { Compactor } from '../../cluster/jetstream/compaction.ts';
import type { NodeMarks } from '../../cluster/jetstream/progress.ts';
import { silentLogger } from '../../src/ports/logger.ts';

const node = (name: string, startFrom?: [number, number]): NodeMarks => ({
  name, ageMs: 0, serverVersion: '2.10.27', startFrom: startFrom && { seq: startFrom[0], index: startFrom[1] }, compacted: undefined,
});

test('the compactor purges only below a mark the bucket still holds a snapshot for', async () => {
  const purged: number[] = [];
  const asked: number[] = [];
  let covered = false;
  const compactor = new Compactor({
    stream: 'LOG', nodeName: 'a', logger: silentLogger, nodes: () => [node('a', [30, 70]), node('b', [40, 90])], firstSeq: () => 1,
    purgeBelow: (seq) => Promise.resolve(void purged.push(seq)).then(() => 29),
    covered: (seq) => Promise.resolve(void asked.push(seq)).then(() => covered), newestSnapshotSeq: () => 1_000, saveNow: () => undefined,
  });
  await compactor.runOnce();
  expect(asked).toEqual([30]);
  expect(purged).toEqual([]);
  expect(compactor.compacted).toBeUndefined();
  covered = true;
  await compactor.runOnce();
  expect(purged).toEqual([30]);
  expect(compactor.compacted).toEqual({ seq: 30, index: 70 });
});

test('a purge this cluster did not make, below messages no snapshot covers, makes every node save a snapshot at once', async () => {
  let firstSeq = 1;
  let newest = 10;
  let covered = false;
  const asked: number[] = [];
  const warns: unknown[] = [];
  let saves = 0;
  // Not the purger (another node has a smaller name): the look for foreign purges runs on every node.
  const compactor = new Compactor({
    stream: 'LOG', nodeName: 'b', logger: { ...silentLogger, warn: (o: unknown) => void warns.push(o) },
    nodes: () => [node('a', [5, 9]), node('b', [10, 20])], firstSeq: () => firstSeq,
    purgeBelow: () => Promise.reject(new Error('not the purger')),
    covered: (seq) => Promise.resolve(void asked.push(seq)).then(() => covered), newestSnapshotSeq: () => newest, saveNow: () => void (saves += 1),
  });
  await compactor.runOnce();
  expect([asked, saves]).toEqual([[], 0]);
  firstSeq = 11; // purged below this node's newest snapshot's next message: that snapshot still covers it
  await compactor.runOnce();
  expect([asked, saves]).toEqual([[], 0]);
  firstSeq = 40; // purged past it, and the bucket has nothing at or after 39
  await compactor.runOnce();
  expect([asked, saves]).toEqual([[39], 1]);
  expect(warns).toEqual([expect.objectContaining({ stream: 'LOG', firstSeq: 40 })]);
  await compactor.runOnce(); // the same start: looked at once
  expect([asked, saves]).toEqual([[39], 1]);
  firstSeq = 60;
  covered = true; // another node's snapshot covers it
  await compactor.runOnce();
  expect([asked, saves]).toEqual([[39, 59], 1]);
  newest = 80;
  firstSeq = 70;
  await compactor.runOnce();
  expect([asked, saves]).toEqual([[39, 59], 1]);
});
