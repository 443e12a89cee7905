/**
 * On-disk framing shared by segments and snapshots.
 *
 * Frame: `[u32 LE payload length][u32 LE crc32(payload)][payload]`, frames back to back, no padding.
 *
 * Segment files (`wal/*.seg`) hold ONE FRAME PER COMMIT: a group commit is one frame, one write and
 * one fdatasync. The payload is the commit's entries as a UTF-8 JSON array, in index order:
 *
 *     [{"i":7,"t":1718000000000,"p":"n1-42","c":{...},"v":1},{"i":8,"t":1718000000000,"p":"n1-43","c":{...},"v":1}]
 *
 * with `i` the index, `t` atMs (one value for the whole commit), `p` the proposal id, `c` the
 * command and `v` the format version (absent: 1; a newer one stops the node, src/log/format-version.ts).
 * A commit holds at least one entry, indexes are consecutive within and across frames, and
 * the payload always starts with the bytes `[{"i":` (`commitPayloadStart`). Its length is 1 to
 * `frameBytesMax` bytes; a length of 0 or above that is damage, not a frame.
 *
 * The commit is the unit of validation: one crc covers all its entries, so recovery keeps a commit
 * whole or drops it whole. Because a segment is only ever appended to, and a commit is written only
 * after the previous commit's fdatasync succeeded, only the last frame of the last segment can be a
 * commit torn by a crash (never acknowledged: truncated), and only if its bytes are incomplete; a
 * complete frame that fails its crc, or a damaged frame followed by an intact one, was acknowledged
 * (refused). See scan.ts, `scanSegment` and `judgeTail`.
 *
 * The last segment is preallocated: zero bytes past its last frame are space not yet used, not damage
 * (a frame never holds a zero byte in its first eight bytes' place with only zeros after it, since a
 * payload is non-empty JSON text). Every earlier segment ends exactly at its last frame.
 *
 * Snapshot files (`snap/*.snap`) hold exactly one frame whose payload is `{"index":n,"data":...,"v":1}`;
 * they are not subject to `frameBytesMax`.
 *
 * Reading is synchronous on purpose: subscribe() must finish its replay before it returns (the port's
 * `subscribe` returns void), and open() reuses the same reader rather than keeping a second one.
 */
import { closeSync, fstatSync, openSync, readSync } from 'node:fs';
import { crc32 } from 'node:zlib';
import { frameBytesMax } from '../log/index.ts';

export { entryBytesMax, frameBytesMax } from '../log/index.ts';
export const headerBytes = 8;
/** The bytes every commit payload begins with: how recovery spots an intact frame past damaged bytes. */
export const commitPayloadStart = Buffer.from('[{"i":', 'utf8');
/** The byte every commit payload ends with (its JSON array's `]`): the last byte of a segment's acknowledged commits. */
export const commitPayloadEnd = 0x5d;
/** The bytes every entry in a commit payload begins with. */
export const entryStart = Buffer.from('{"i":', 'utf8');
/** Read buffer for scanning: large enough to amortise syscalls, small enough to stream a 64 MiB segment. */
const readChunkBytes = 1024 * 1024;
/** The length field is a u32. */
const u32Max = 0xffff_ffff;

/** Frames one UTF-8 payload (one write per commit, or a whole snapshot file). */
export function encodeFrame(payload: string, payloadBytesMax = u32Max): Buffer {
  const n = Buffer.byteLength(payload, 'utf8');
  if (n > Math.min(payloadBytesMax, u32Max)) {
    throw new RangeError(`frame payload of ${n} bytes is above the ${Math.min(payloadBytesMax, u32Max)}-byte limit`);
  }
  const out = Buffer.allocUnsafe(headerBytes + n);
  out.write(payload, headerBytes, n, 'utf8');
  out.writeUInt32LE(n, 0);
  out.writeUInt32LE(crc32(out.subarray(headerBytes)), 4);
  return out;
}

/** A decoded frame, or why the bytes at that offset are not one. */
export type Decoded =
  | { ok: true; end: number; payload: string }
  | { ok: false; reason: string };

/** Decodes a buffer that must hold exactly one frame (a snapshot file). */
export function decodeSingle(buf: Buffer): Decoded {
  if (buf.length < headerBytes) return { ok: false, reason: 'short header' };
  const len = buf.readUInt32LE(0);
  if (len !== buf.length - headerBytes) return { ok: false, reason: `length ${len} does not match file` };
  const payload = buf.subarray(headerBytes);
  if (crc32(payload) !== buf.readUInt32LE(4)) return { ok: false, reason: 'crc mismatch' };
  return { ok: true, end: buf.length, payload: payload.toString('utf8') };
}

/** A place where `find` matched, with up to `after` bytes that follow the match (valid until the next one). */
export interface Match {
  at: number;
  following: Buffer;
}

/** Sequential-or-random frame access to one segment file through a bounded read buffer. */
export class RecordFile {
  readonly size: number;
  private readonly fd: number;
  private buf = Buffer.alloc(readChunkBytes);
  private bufPos = 0;
  private bufLen = 0;

  constructor(readonly path: string) {
    this.fd = openSync(path, 'r');
    this.size = fstatSync(this.fd).size;
  }

  close(): void {
    closeSync(this.fd);
  }

  /** Decodes the frame starting at `offset`; undefined exactly at end of file. */
  at(offset: number): Decoded | undefined {
    if (offset >= this.size) return undefined;
    const len = this.lengthAt(offset);
    if (typeof len === 'string') return { ok: false, reason: len };
    const crc = this.view(offset, headerBytes).readUInt32LE(4);
    const payload = this.view(offset + headerBytes, len);
    if (crc32(payload) !== crc) return { ok: false, reason: 'crc mismatch' };
    return { ok: true, end: offset + headerBytes + len, payload: payload.toString('utf8') };
  }

  /**
   * Every offset at or after `from` where `needle` occurs, in order, streamed through a bounded
   * buffer of its own (so `at` may be called between matches).
   */
  *find(needle: Buffer, from: number, after = 0): Generator<Match> {
    const window = Buffer.alloc(readChunkBytes + needle.length + after);
    for (let pos = from; pos < this.size; pos += readChunkBytes) {
      const got = this.read(window, pos);
      const view = window.subarray(0, got);
      // A match belongs to the window it starts in; the overlap only completes it.
      for (let hit = view.indexOf(needle); hit !== -1 && hit < readChunkBytes; hit = view.indexOf(needle, hit + 1)) {
        const start = hit + needle.length;
        yield { at: pos + hit, following: view.subarray(start, Math.min(got, start + after)) };
      }
    }
  }

  /** A copy of bytes [offset, offset + n), fewer where the file ends first. */
  bytes(offset: number, n: number): Buffer {
    const len = Math.max(0, Math.min(n, this.size - offset));
    return len === 0 ? Buffer.alloc(0) : Buffer.from(this.view(offset, len));
  }

  /** Whether every byte from `offset` to the end of the file is zero (unused preallocated space). */
  zeroFrom(offset: number): boolean {
    const chunk = Buffer.alloc(readChunkBytes);
    for (let pos = offset; pos < this.size; pos += readChunkBytes) {
      const got = this.read(chunk, pos);
      for (let k = 0; k < got; k++) if (chunk[k] !== 0) return false;
    }
    return true;
  }

  /** Payload length from a header that fits the file, or why it does not. */
  private lengthAt(offset: number): number | string {
    if (this.size - offset < headerBytes) return 'short header';
    const len = this.view(offset, headerBytes).readUInt32LE(0);
    if (len === 0 || len > frameBytesMax) return `implausible length ${len}`;
    if (offset + headerBytes + len > this.size) return 'short payload';
    return len;
  }

  /** Bytes [offset, offset+n) of the file; valid until the next call. Caller checked they exist. */
  private view(offset: number, n: number): Buffer {
    const inBuf = offset >= this.bufPos && offset + n <= this.bufPos + this.bufLen;
    if (!inBuf) this.fill(offset, n);
    return this.buf.subarray(offset - this.bufPos, offset - this.bufPos + n);
  }

  private fill(offset: number, n: number): void {
    if (this.buf.length < n) this.buf = Buffer.alloc(n);
    const got = this.read(this.buf, offset);
    if (got < n) throw new Error(`${this.path}: file shrank while reading at offset ${offset}`);
    this.bufPos = offset;
    this.bufLen = got;
  }

  /** Fills `into` from `offset` as far as the file (as sized at open) goes; returns the bytes read. */
  private read(into: Buffer, offset: number): number {
    const want = Math.min(into.length, this.size - offset);
    let got = 0;
    while (got < want) {
      const r = readSync(this.fd, into, got, want - got, offset + got);
      if (r === 0) break;
      got += r;
    }
    return got;
  }
}
