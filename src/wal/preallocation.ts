/**
 * Preallocation: zero-filled, synced space kept ahead of the current segment's write position, so a
 * commit overwrites allocated blocks and its fdatasync has no size or extent change to journal.
 */
import type { FileHandle } from 'node:fs/promises';
import { MiB, writeAll, type ActiveSegment } from './files.ts';

/** Zero-filled space kept ahead of the current segment's write position. */
export const preallocBytes = MiB;

/** Writes zeros over [from, to) and syncs them; nothing when `to` <= `from`. */
export async function zeroFill(fh: FileHandle, from: number, to: number): Promise<void> {
  if (to <= from) return;
  const zeros = Buffer.alloc(Math.min(MiB, to - from));
  for (let pos = from; pos < to; pos += zeros.length) await writeAll(fh, zeros.subarray(0, Math.min(zeros.length, to - pos)), pos);
  await fh.sync();
}

/**
 * Keeps zero-filled, synced space ahead of the current segment's write position. Commits then
 * overwrite allocated blocks, so their fdatasync has no file size or extent change to journal:
 * measured on this machine kind with both cores busy, 0.2 ms per commit instead of 1.6 ms.
 */
export async function preallocate(seg: ActiveSegment, segmentBytesMax: number): Promise<void> {
  if (seg.allocated - seg.bytes >= preallocBytes / 2 || seg.allocated >= segmentBytesMax) return;
  const to = Math.min(Math.max(seg.allocated, seg.bytes) + preallocBytes, segmentBytesMax);
  await zeroFill(seg.fh, Math.max(seg.allocated, seg.bytes), to);
  seg.allocated = Math.max(seg.allocated, to);
}
