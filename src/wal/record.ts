/**
 * Record framing shared by segments and snapshots: `[u32 LE payload length][u32 LE crc32(payload)][payload]`.
 * Reading is synchronous on purpose: subscribe() must finish its replay before it returns (the port's
 * `subscribe` returns void), and open() reuses the same reader rather than keeping a second one.
 */
import { closeSync, fstatSync, openSync, readSync } from 'node:fs';
import { crc32 } from 'node:zlib';

export const headerBytes = 8;
/** Largest payload one log record may carry; a larger length in a header is corruption, not a record. */
export const recordBytesMax = 16 * 1024 * 1024;
/** Read buffer for scanning: large enough to amortise syscalls, small enough to stream a 64 MiB segment. */
const readChunkBytes = 1024 * 1024;
/** The length field is a u32. */
const frameBytesMax = 0xffff_ffff;

/** Frames UTF-8 payloads back to back into one buffer (one write per commit). */
export function encodeRecords(payloads: readonly string[]): Buffer {
  const lengths = payloads.map((p) => Buffer.byteLength(p, 'utf8'));
  const out = Buffer.allocUnsafe(lengths.reduce((sum, n) => sum + headerBytes + n, 0));
  let at = 0;
  payloads.forEach((payload, k) => {
    const n = lengths[k]!;
    if (n > frameBytesMax) throw new RangeError(`record payload of ${n} bytes does not fit a u32 length`);
    out.write(payload, at + headerBytes, n, 'utf8');
    out.writeUInt32LE(n, at);
    out.writeUInt32LE(crc32(out.subarray(at + headerBytes, at + headerBytes + n)), at + 4);
    at += headerBytes + n;
  });
  return out;
}

/** A decoded record, or why the bytes at that offset are not one. */
export type Decoded =
  | { ok: true; end: number; payload: string }
  | { ok: false; reason: string };

/** Decodes a buffer that must hold exactly one record (a snapshot file). */
export function decodeSingle(buf: Buffer): Decoded {
  if (buf.length < headerBytes) return { ok: false, reason: 'short header' };
  const len = buf.readUInt32LE(0);
  if (len !== buf.length - headerBytes) return { ok: false, reason: `length ${len} does not match file` };
  const payload = buf.subarray(headerBytes);
  if (crc32(payload) !== buf.readUInt32LE(4)) return { ok: false, reason: 'crc mismatch' };
  return { ok: true, end: buf.length, payload: payload.toString('utf8') };
}

/** Sequential-or-random record access to one file through a bounded read buffer. */
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

  /** Decodes the record starting at `offset`; undefined exactly at end of file. */
  at(offset: number): Decoded | undefined {
    if (offset >= this.size) return undefined;
    const len = this.lengthAt(offset);
    if (typeof len === 'string') return { ok: false, reason: len };
    const crc = this.view(offset, headerBytes).readUInt32LE(4);
    const payload = this.view(offset + headerBytes, len);
    if (crc32(payload) !== crc) return { ok: false, reason: 'crc mismatch' };
    return { ok: true, end: offset + headerBytes + len, payload: payload.toString('utf8') };
  }

  /** End offset of the record at `offset` judged by its header alone, if the header is plausible. */
  skip(offset: number): number | undefined {
    const len = this.lengthAt(offset);
    return typeof len === 'string' ? undefined : offset + headerBytes + len;
  }

  /** Payload length from a header that fits the file, or why it does not. */
  private lengthAt(offset: number): number | string {
    if (this.size - offset < headerBytes) return 'short header';
    const len = this.view(offset, headerBytes).readUInt32LE(0);
    if (len === 0 || len > recordBytesMax) return `implausible length ${len}`;
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
    const want = Math.min(this.buf.length, this.size - offset);
    let got = 0;
    while (got < want) {
      const r = readSync(this.fd, this.buf, got, want - got, offset + got);
      if (r === 0) break;
      got += r;
    }
    if (got < n) throw new Error(`${this.path}: file shrank while reading at offset ${offset}`);
    this.bufPos = offset;
    this.bufLen = got;
  }
}
