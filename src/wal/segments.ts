/**
 * The segment files of an open WAL: the current segment written (one frame, one fdatasync per commit)
 * and kept preallocated, rolled to a new file between commits once full, cut back to its acknowledged
 * commits after a failed write, and older segments deleted once a snapshot covers them; and the checks
 * that the current segment still holds what was written to it (`lost`).
 */
import { fstatSync, readSync } from 'node:fs';
import { open, rm, unlink } from 'node:fs/promises';
import { dirname, join } from 'node:path';
import type { EntriesListener } from '../ports/log.ts';
import { namedFile, segmentName, SegmentLost, syncDir, writeAllSync, type ActiveSegment, type SegmentLoss, type SegmentRef } from './files.ts';
import { hasReserve, preallocate, reserveBytesMin } from './preallocation.ts';
import { commitPayloadEnd } from './record.ts';
import type { Recovered } from './recovery.ts';
import { replay } from './replay.ts';

export class SegmentFiles {
  private pathCheckDue = false;
  /**
   * Bytes of frames past the newest snapshot when these files were opened (recovery counts them), then also
   * those written since: what calls for the next snapshot (WalLog.written).
   */
  written = 0;

  private constructor(
    private readonly walDir: string,
    private readonly segmentBytesMax: number,
    /** Segments oldest first; the last one is `active`, the current segment, never deleted. */
    private readonly segments: SegmentRef[],
    private active: ActiveSegment,
  ) {}

  /** Opens the current segment that recovery left: its acknowledged commits, then only zeros. */
  static async open(walDir: string, segmentBytesMax: number, found: Recovered): Promise<SegmentFiles> {
    const current = found.segments.at(-1)!;
    const fh = await open(current.path, 'r+');
    const active = { ...current, fh, bytes: found.activeBytes, allocated: found.activeBytes };
    try {
      // Recovery left only zeros past activeBytes, so the whole file counts as allocated, unless some of them
      // are a hole (`restoreTail` leaves one on a full disk): those are written for real before a commit goes there.
      const { size, blocks } = await fh.stat();
      active.allocated = blocks * 512 >= size ? Math.max(found.activeBytes, size) : found.activeBytes;
    } catch (err) {
      await fh.close();
      throw err;
    }
    const files = new SegmentFiles(walDir, segmentBytesMax, found.segments, active);
    files.written = found.bytesPastSnapshot;
    return files;
  }

  /**
   * Starts afresh on the only segment of `walDir`, which the caller created empty and made durable, its
   * first entry `first` (the entries before it are in a snapshot): opened and preallocated. A failure leaves
   * it there, empty or partly zeroed, as a start takes it.
   */
  static async start(walDir: string, segmentBytesMax: number, first: number): Promise<SegmentFiles> {
    const path = join(walDir, segmentName(first));
    // Read as well as written: `lost` reads back the last byte of its commits.
    const fh = await open(path, 'r+');
    const active: ActiveSegment = { first, path, fh, bytes: 0, allocated: 0 };
    try {
      await preallocate(active);
    } catch (err) {
      await fh.close().catch(() => undefined);
      throw err;
    }
    return new SegmentFiles(walDir, segmentBytesMax, [{ first, path }], active);
  }

  /**
   * How the current segment no longer holds, where the next start reads, what was written to it; undefined
   * while it does. Removed: it has no name left (its data dir or the file was removed). Cut: the last byte
   * of its acknowledged commits is not there any more (the file was truncated below them, and perhaps
   * written past again: its size alone would not tell). Moved, when a path check is due (checkPathNext):
   * its path names another file or none (the dir was moved or renamed, or a file put where a directory of
   * it goes). One fstat and a one-byte read (none with `endReadBack`); with the path check, one stat of the
   * path too, which throws when the path cannot be looked at (EACCES: see namedFile).
   */
  lost(endReadBack = false): SegmentLoss | undefined {
    const byPath = this.pathCheckDue;
    this.pathCheckDue = false;
    const open = fstatSync(this.active.fh.fd);
    if (open.nlink === 0) return 'removed';
    // Right after `write`, which read the end back itself, the one-byte read is spared.
    if (!endReadBack && !endsWhole(this.active, this.active.bytes)) return 'cut';
    if (!byPath) return undefined;
    const named = namedFile(this.active.path);
    return named === undefined || named.ino !== open.ino || named.dev !== open.dev ? 'moved' : undefined;
  }

  /** The next `detached()` also checks the current segment's path. */
  checkPathNext(): this {
    this.pathCheckDue = true;
    return this;
  }

  /** The first index the oldest kept segment starts at (the WAL's compaction point). */
  get firstIndex(): number {
    return this.segments[0]!.first;
  }

  /** Streams entries (afterIndex, upTo] from disk to the listener in bounded batches. */
  replay(afterIndex: number, upTo: number, listener: EntriesListener): void {
    replay(this.segments, afterIndex, upTo, listener);
  }

  /**
   * Writes one commit frame after the acknowledged ones and waits for its fdatasync. Throws SegmentLost
   * ('cut') when the commits before it are gone: the byte before the frame, the last of the commits
   * acknowledged before it, is read back once the frame is synced (a file cut short, before or during the
   * write, has zeros there: a write past its end makes it long again, so its size would not tell). The
   * frame is then not acknowledged, and the log is written afresh from the state. So when the segment was
   * removed or moved meanwhile (`lost`: SegmentLost), or its path cannot be looked at (`lost` throws).
   * The frame counts as written only once all of that passed: after a throw, `restoreTail` cuts it.
   */
  async write(buf: Buffer): Promise<void> {
    const seg = this.active;
    // Zeros past the frame's end first, synced: a crash that tears it leaves them after it (cut-evidence.ts).
    if (!hasReserve(seg, buf.length)) await this.preallocate(seg, buf.length);
    // The write only copies into the page cache (tens of microseconds for a commit): done in place, it
    // spares a thread-pool round trip that cost about 0.4 ms per commit under load. The fdatasync,
    // which waits for the disk, stays off the event loop.
    writeAllSync(seg.fh.fd, buf, seg.bytes);
    await seg.fh.datasync();
    if (!endsWhole(seg, seg.bytes)) throw this.cut();
    const loss = this.lost(true);
    if (loss !== undefined) throw this.lostError(loss);
    seg.bytes += buf.length;
    this.written += buf.length;
    seg.allocated = Math.max(seg.allocated, seg.bytes);
  }

  /**
   * Keeps zero-filled, synced space ahead of the write position of `seg` (the current segment), room for a
   * frame of `frameBytes` and `reserveBytesMin` after it. Throws SegmentLost ('cut') when its commits are
   * gone after it: zeros written past the end of a file cut short would make it long again.
   */
  async preallocate(seg = this.active, frameBytes = 0): Promise<void> {
    await preallocate(seg, frameBytes);
    if (!endsWhole(seg, seg.bytes)) throw this.cut(seg);
  }

  /**
   * Rolls between commits, so every segment but the current one ends on a whole, synced frame. The next
   * segment, starting at entry `first`, is made first, preallocated and its name durable; only then is the
   * old segment sealed, its unused preallocated tail cut off (durably). Recovery reads a sealed segment that
   * is last, or an empty one after a sealed one, as a log cut short (cut-evidence.ts); a crash in between
   * leaves the new segment empty beside an old one that still has its zeros, and recovery drops it.
   * The next segment is made only beside the current one, where the next start reads it: throws
   * SegmentLost when the current one was removed, moved or cut short (checked before, and again when
   * making the next file fails: its open in a dir removed meanwhile gets ENOENT). A roll in a dir moved
   * away, or made again by someone else, would start a log without the segments before it.
   */
  async rollIfFull(first: number): Promise<void> {
    const old = this.active;
    if (old.bytes === 0 || old.bytes < this.segmentBytesMax) return;
    const loss = this.checkPathNext().lost();
    if (loss !== undefined) throw this.lostError(loss);
    const path = join(this.walDir, segmentName(first));
    const fh = await open(path, 'wx+').catch((err: unknown) => { throw this.lostOr(err); });
    const next: ActiveSegment = { first, path, fh, bytes: 0, allocated: 0 };
    try {
      await this.preallocate(next);
      // The new name must be durable before the old segment is sealed, and before an entry in it is acknowledged.
      await syncDir(this.walDir);
      old.allocated = old.bytes;
      await old.fh.truncate(old.bytes);
      await old.fh.sync();
      // A truncate to a longer size fills with zeros: a segment cut short must not be sealed as if whole.
      if (!endsWhole(old, old.bytes)) throw this.cut(old);
    } catch (err) {
      // Not rolled after all (a full disk is retried): the old segment stays current, the new file goes.
      await fh.close().catch(() => undefined);
      await rm(path, { force: true }).catch(() => undefined);
      throw this.lostOr(err);
    }
    this.active = next;
    this.segments.push({ first, path });
    await old.fh.close();
  }

  /**
   * Cuts the current segment back to its acknowledged commits (durably), with `reserveBytesMin` of zeros
   * after them again as a hole (made without disk space): recovery reads a last segment without them as cut
   * short. The reserve is written for real later, when there is space.
   */
  async restoreTail(): Promise<void> {
    const seg = this.active;
    // Lowered first: `lost` never sees the file shorter than what is counted as written.
    seg.allocated = seg.bytes;
    await seg.fh.truncate(seg.bytes);
    await seg.fh.truncate(seg.bytes + reserveBytesMin);
    await seg.fh.sync();
    if (!endsWhole(seg, seg.bytes)) throw this.cut(seg);
  }

  /** Deletes segments the snapshot covers: one is unneeded once the next starts at or before index + 1. */
  async compact(index: number): Promise<void> {
    const doomed: SegmentRef[] = [];
    while (this.segments.length > 1 && this.segments[1]!.first <= index + 1) doomed.push(this.segments.shift()!);
    for (const seg of doomed) await unlink(seg.path);
    if (doomed.length > 0) await syncDir(this.walDir);
  }

  async close(): Promise<void> {
    await this.active.fh.close();
  }

  /** The error of a current segment lost as `lost()` found. */
  lostError(loss: SegmentLoss): SegmentLost {
    return new SegmentLost(dirname(this.walDir), loss, this.active.path);
  }

  /**
   * `err`, a failed file operation of a roll, as the loss of the current segment when it is lost (the
   * error only followed from it), else as it is.
   */
  private lostOr(err: unknown): unknown {
    try {
      const loss = this.checkPathNext().lost();
      return loss === undefined ? err : this.lostError(loss);
    } catch {
      return err;
    }
  }

  private cut(seg = this.active): SegmentLost {
    return new SegmentLost(dirname(this.walDir), 'cut', seg.path);
  }
}

/** Whether the file of `seg` still holds its commits up to `end`: the byte before it closes a commit. */
function endsWhole(seg: ActiveSegment, end: number): boolean {
  return end === 0 || (readSync(seg.fh.fd, lastByte, 0, 1, end - 1) === 1 && lastByte[0] === commitPayloadEnd);
}

/** The byte endsWhole reads into (read and tested synchronously). */
const lastByte = Buffer.alloc(1);
