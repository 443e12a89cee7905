/**
 * Writing the log afresh after its current segment was lost from outside while it ran (files.ts,
 * SegmentLoss): the data dir removed or moved, or the segment cut short. What the runtime holds in memory
 * is then all there is: the dir is made again if need be, the agent takes it (`reclaimDir`), and the log
 * continues from a snapshot of the state as of the last acknowledged commit, in a new segment after it.
 *
 * The steps are ordered so that a crash between any two leaves a data dir a start accepts with every
 * acknowledged entry, once the snapshot is on disk (before it, the entries are in memory only and a start
 * finds what the loss left): the new segment is created empty, synced with its directory entry, before the
 * snapshot is written, so the snapshot is never on disk without a segment after it; the segments left (the
 * snapshot holds all they held, and a damaged one would stop the next start) are deleted only then — an
 * empty segment right after the snapshot tells recovery the older ones are covered (recovery.ts
 * restartedAfterSnapshot) — and the new segment gets its zeros last, which a start gives it too.
 */
import { mkdir, open, rm } from 'node:fs/promises';
import { dirname, join } from 'node:path';
import type { Logger } from '../ports/logger.ts';
import type { Snapshot } from '../ports/log.ts';
import { kind, listIndexed, segmentName, segmentPattern, syncDir, type SegmentLoss } from './files.ts';
import { SegmentFiles } from './segments.ts';
import { writeSnapshotFile } from './snapshots.ts';

export interface Afresh {
  dir: string;
  walDir: string;
  snapDir: string;
  segmentBytesMax: number;
  /** The log's last acknowledged index. */
  last: number;
  /** The state as of the last entry applied (the runtime's). */
  source: (() => Snapshot) | undefined;
  reclaimDir: (() => Promise<void>) | undefined;
  logger: Logger;
}

/** The line logged once writes are refused for a lost segment, and the one once the log is written afresh. */
export const lossLog: Record<SegmentLoss, { refused: string; afresh: string }> = {
  removed: {
    refused: 'WAL: the data dir was removed or moved while the agent ran; writes are refused until the state is written there afresh',
    afresh: 'WAL: the data dir was removed or moved while the agent ran; the state as of the last acknowledged write is written there afresh',
  },
  moved: {
    refused: 'WAL: the data dir was removed or moved while the agent ran; writes are refused until the state is written there afresh',
    afresh: 'WAL: the data dir was removed or moved while the agent ran; the state as of the last acknowledged write is written there afresh',
  },
  cut: {
    refused: 'WAL: the current segment was cut short while the agent ran (truncated from outside); writes are refused until the state is written afresh',
    afresh: 'WAL: the current segment was cut short while the agent ran; the state as of the last acknowledged write is written as a snapshot and the log continues in a new segment',
  },
};

/** Writes the log afresh (see the file's comment); resolves with the new segment files. */
export async function startAfresh(o: Afresh, loss: SegmentLoss): Promise<SegmentFiles> {
  const snapshot = o.source?.();
  if (snapshot === undefined || snapshot.index !== o.last) {
    throw new Error(`${kind}: ${loss === 'cut' ? `the current segment in ${o.walDir} was cut short` : `the data dir ${o.dir} was removed or moved`} `
      + `and no snapshot of the state at index ${o.last} is at hand to write it afresh`);
  }
  await mkdir(o.dir, { recursive: true });
  await syncDir(dirname(o.dir));
  await o.reclaimDir?.();
  await mkdir(o.walDir, { recursive: true });
  await mkdir(o.snapDir, { recursive: true });
  await syncDir(o.dir);
  const path = join(o.walDir, segmentName(o.last + 1));
  await createEmpty(path);
  await syncDir(o.walDir);
  await writeSnapshotFile(o.snapDir, snapshot);
  // Segments left behind (the current one alone was removed, or cut) hold nothing the snapshot does not,
  // and would leave a gap before the new segment, or damage, that recovery refuses.
  const left = (await listIndexed(o.walDir, segmentPattern)).filter((seg) => seg.path !== path);
  for (const seg of left) await rm(seg.path, { force: true });
  if (left.length > 0) await syncDir(o.walDir);
  const files = await SegmentFiles.start(o.walDir, o.segmentBytesMax, o.last + 1);
  o.logger.warn({ dir: o.dir, index: snapshot.index }, lossLog[loss].afresh);
  return files;
}

/**
 * The new segment, empty and synced (emptied when a file of its name was left: the lost segment, if it
 * started there, held no acknowledged commit).
 */
async function createEmpty(path: string): Promise<void> {
  const fh = await open(path, 'w');
  try {
    await fh.sync();
  } finally {
    await fh.close();
  }
}
