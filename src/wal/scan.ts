/**
 * Reading one segment at open(): every commit frame checked (framing, crc, JSON, index continuity),
 * and a damaged last commit judged torn (a write a crash cut short, never acknowledged) or damaged
 * (complete on disk, so acknowledged). Reads only; recovery.ts decides what to do with the result.
 */
import { crc32 } from 'node:zlib';
import { damagedError } from '../ports/log-errors.ts';
import { parseCommit } from '../log/index.ts';
import { kind, type SegmentRef } from './files.ts';
import { commitPayloadStart, entryStart, frameBytesMax, headerBytes, RecordFile } from './record.ts';

export interface Scan {
  next: number;
  lastAtMs: number | undefined;
  /** Offset just past the last whole commit frame. */
  goodBytes: number;
  /** The file's size. */
  size: number;
  /**
   * Zero bytes the file ends with: all of it after goodBytes when nothing else follows the commits (in a
   * segment before the last, only then), else those after a torn or damaged last commit's bytes.
   */
  trailingZeros: number;
  /** Bytes of the commit frames holding an entry past the index `scanSegment` was given (the snapshot's). */
  bytesAfter: number;
  /** Set when bytes after goodBytes in the last segment are no whole commit: a torn or a damaged last commit. */
  tail?: Tail;
  /** The attachments its restore entries name (attachments.ts), with their indexes; absent when none does. */
  attachments?: NamedAttachment[];
}

/** An attachment a restore entry names (its file name and SHA-256), and the entry's index. */
export interface NamedAttachment {
  index: number;
  name: string;
  sha256: string;
}

export interface Tail {
  /** torn: its write never finished, so it was never acknowledged; damaged: complete on disk, then damaged. */
  kind: 'torn' | 'damaged';
  offset: number;
  /** From `offset` to the zeros the file ends with. */
  bytes: number;
  /** Entries recognisable in the dropped bytes: a lower bound, damage may have erased some. */
  entries: number;
  /** The highest entry index recognisable in them (at least the first one's), if any. */
  highest: number | undefined;
  /** Where its frame ends by the length in its header, when that header is one the WAL writes. */
  frameEnd: number | undefined;
  reason: string;
}

/**
 * Validates one segment commit by commit: framing, crc, JSON and index continuity.
 *
 * A commit is written only after the previous one's fdatasync succeeded, and nothing in it is
 * acknowledged before its own fdatasync. So only the last commit of the last segment can have been
 * torn by a crash, and then anywhere inside it: sectors of an unsynced write reach the disk in any
 * order. A damaged frame with an intact one after it, or in an earlier segment, was acknowledged:
 * refuse to open. A damaged last frame is judged by `judgeTail`: torn (cut) or damaged (refused).
 * Zeros after the last commit are read as unused space in any segment: whether a segment may end in
 * them, and how many the last one must end in, is recovery's to judge (recovery.ts, cut-evidence.ts).
 * `after`: the snapshot's index, for `bytesAfter`.
 */
export function scanSegment(seg: SegmentRef, isLast: boolean, after = 0): Scan {
  const file = new RecordFile(seg.path);
  try {
    let offset = 0;
    let next = seg.first;
    let lastAtMs: number | undefined;
    let bytesAfter = 0;
    const attachments: NamedAttachment[] = [];
    const found = (zeros: number, tail?: Tail): Scan => ({
      next, lastAtMs, goodBytes: offset, size: file.size, trailingZeros: zeros, bytesAfter, ...(tail === undefined ? {} : { tail }), ...named(attachments),
    });
    for (let frame = file.at(offset); frame !== undefined; frame = file.at(offset)) {
      if (!frame.ok) {
        // Unused space (the preallocated zeros of the current segment, or of one a roll left unsealed).
        if (file.zeroFrom(offset)) return found(file.size - offset);
        if (!isLast) throw corrupt(seg.path, offset, next, frame.reason);
        const intact = intactFrameAfter(file, offset);
        if (intact !== undefined) {
          throw corrupt(seg.path, offset, next, `${frame.reason}, and an intact commit follows at offset ${intact}`);
        }
        const seen = entriesIn(file, offset, next);
        const zeros = trailingZeros(file, offset);
        return found(zeros, {
          kind: judgeTail(file, offset, next), offset, bytes: file.size - zeros - offset, entries: seen.count, highest: seen.highest,
          frameEnd: frameEndAt(file, offset), reason: frame.reason,
        });
      }
      // A frame whose crc matches was written whole: bad content in it is not a crash artifact.
      const entries = parseCommit(frame.payload, next);
      if (typeof entries === 'string') throw corrupt(seg.path, offset, next, entries);
      for (const { index, cmd } of entries) {
        if (cmd.t === 'state.restore' && cmd.attachment !== undefined) attachments.push({ index, name: cmd.attachment.name, sha256: cmd.attachment.sha256 });
      }
      if (entries.at(-1)!.index > after) bytesAfter += frame.end - offset;
      next += entries.length;
      lastAtMs = entries.at(-1)!.atMs;
      offset = frame.end;
    }
    return found(0);
  } finally {
    file.close();
  }
}

/** Where the frame at `offset` ends by its header's length, when that length is one the WAL writes. */
function frameEndAt(file: RecordFile, offset: number): number | undefined {
  const head = file.bytes(offset, headerBytes);
  if (head.length < headerBytes) return undefined;
  const len = head.readUInt32LE(0);
  return len > 0 && len <= frameBytesMax ? offset + headerBytes + len : undefined;
}

/** How many zero bytes the file ends with, counted back to `from` at most. */
function trailingZeros(file: RecordFile, from: number): number {
  for (let end = file.size; end > from;) {
    const start = Math.max(from, end - sectorBytes * 128);
    const chunk = file.bytes(start, end - start);
    let k = chunk.length;
    while (k > 0 && chunk[k - 1] === 0) k -= 1;
    if (k > 0) return file.size - (start + k);
    end = start;
  }
  return file.size - from;
}

function named(attachments: NamedAttachment[]): Pick<Scan, 'attachments'> {
  return attachments.length > 0 ? { attachments } : {};
}

/**
 * Whether the last frame's bytes at `offset` are what a crash leaves of a write that never finished
 * ('torn') or a complete frame damaged afterwards ('damaged'). A commit is written over zero-filled,
 * synced space (or at the end of the file), and sectors land whole or not at all, so a torn commit is
 * its header and some of its sectors, the rest zeros or missing; its JSON payload never holds a zero
 * byte itself. So:
 * - torn: the header is missing or zero, the file ends before the length says, or the payload holds
 *   zeros from some point to its end or over a whole sector — unless the bytes before the first zero
 *   are the whole commit (its crc matches them, or they parse as the commit): then only the length
 *   field was damaged;
 * - damaged: every byte the header claims is there with no zero among them but the crc fails, or the
 *   header is not one the WAL writes (a length above the frame limit, a zero length with a crc).
 */
function judgeTail(file: RecordFile, offset: number, next: number): 'torn' | 'damaged' {
  const head = file.bytes(offset, headerBytes);
  if (head.length < headerBytes) return 'torn';
  const len = head.readUInt32LE(0);
  const crc = head.readUInt32LE(4);
  if (len === 0 && crc === 0) return 'torn';
  const start = offset + headerBytes;
  const plausible = len > 0 && len <= frameBytesMax;
  const region = file.bytes(start, Math.min(plausible ? len : file.size - start, frameBytesMax));
  const zero = region.indexOf(0);
  const prefix = zero === -1 ? region : region.subarray(0, zero);
  if (prefix.length > 0 && (crc32(prefix) === crc || typeof parseCommit(prefix.toString('utf8'), next) !== 'string')) return 'damaged';
  if (!plausible) return 'damaged';
  if (start + len > file.size) return 'torn';
  if (zero === -1) return 'damaged';
  // Missing data is zeros from where the write stopped to the end, or whole sectors; a lone zero byte
  // amid written bytes is damage.
  const stopped = region.subarray(zero).every((b) => b === 0);
  const lostSector = (start + zero) % sectorBytes === 0 && region.subarray(zero, zero + sectorBytes).every((b) => b === 0);
  return stopped || lostSector ? 'torn' : 'damaged';
}

/** The smallest unit a disk writes whole (sector boundaries are multiples of it in the file). */
const sectorBytes = 512;

/**
 * Offset of a whole frame (crc matching) that starts after `damaged`, if there is one. Found by
 * searching for the bytes every commit payload starts with rather than by following length fields,
 * so a damaged length cannot hide an acknowledged commit behind it.
 */
function intactFrameAfter(file: RecordFile, damaged: number): number | undefined {
  for (const { at } of file.find(commitPayloadStart, damaged + 1 + headerBytes)) {
    if (file.at(at - headerBytes)?.ok === true) return at - headerBytes;
  }
  return undefined;
}

/**
 * The highest entry index of a whole commit (crc matching, entries parsing) anywhere in the segment, found
 * as `intactFrameAfter` finds one, whatever damage lies before it; undefined when there is none.
 */
export function highestIntactIndex(seg: SegmentRef): number | undefined {
  const file = new RecordFile(seg.path);
  try {
    let highest: number | undefined;
    for (const { at, following } of file.find(commitPayloadStart, headerBytes, 17)) {
      const first = Number(/^\d+/.exec(following.toString('latin1'))?.[0]);
      if (!Number.isSafeInteger(first)) continue;
      const frame = file.at(at - headerBytes);
      if (frame?.ok !== true) continue;
      const entries = parseCommit(frame.payload, first);
      if (typeof entries !== 'string') highest = Math.max(highest ?? 0, entries.at(-1)!.index);
    }
    return highest;
  } finally {
    file.close();
  }
}

/** Distinct entries from index `next` on still recognisable in bytes `from`.., and the highest of them (for the log). */
function entriesIn(file: RecordFile, from: number, next: number): { count: number; highest: number | undefined } {
  const seen = new Set<number>();
  for (const { following } of file.find(entryStart, from, 17)) {
    const index = Number(/^\d+/.exec(following.toString('latin1'))?.[0]);
    if (Number.isSafeInteger(index) && index >= next) seen.add(index);
  }
  // `{"i":` occurs in a commit only where an entry starts (inside JSON strings quotes are escaped).
  let highest: number | undefined;
  for (const index of seen) highest = Math.max(highest ?? index, index);
  return { count: seen.size, highest };
}

export function corrupt(path: string, offset: number, index: number, reason: string): Error {
  return damagedError(`${kind}: corrupt commit frame in ${path} at offset ${offset}: ${reason} (the commit of entries from index ${index}); `
    + 'refusing to open, acknowledged entries would be lost');
}

