/**
 * Helpers for the crash-safety fault tests of the embedded log (test/faults/wal-crash*.test.ts):
 * the seeded generator every fault is drawn from, the env knobs (seed, rounds), a reader of the on-disk
 * frames (record.ts's format, read independently of src/wal so the test does not trust the code it
 * checks), and the agent's log lines. The HTTP probes and the ledger of writes are in wal-crash-ledger.ts.
 */
import { readdirSync, readFileSync } from 'node:fs';
import { randomInt } from 'node:crypto';
import { join } from 'node:path';
import { crc32 } from 'node:zlib';
import { Prng as Rng } from '../../src/util/prng.ts';

/** The seeded generator every fault is drawn from (one child stream per test, round and writer). */
export { Rng };

// ---- seed and knobs -------------------------------------------------------------------------

/** ROSTER_FAULT_SEED (decimal or 0x hex) replays a run; without it a fresh seed is drawn and printed. */
export function faultSeed(): number {
  const raw = process.env.ROSTER_FAULT_SEED;
  if (raw === undefined || raw === '') return randomInt(0, 2 ** 32);
  const seed = Number(raw);
  if (!Number.isSafeInteger(seed) || seed < 0 || seed >= 2 ** 32) {
    throw new Error(`ROSTER_FAULT_SEED must be an integer in 0..2^32-1, got "${raw}"`);
  }
  return seed;
}

/** Rounds per fault test: ROSTER_FAULT_ROUNDS (a long soak sets it high), `ciDefault` otherwise. */
export function faultRounds(ciDefault = 8): number {
  const raw = process.env.ROSTER_FAULT_ROUNDS;
  if (raw === undefined || raw === '') return ciDefault;
  const n = Number(raw);
  if (!Number.isSafeInteger(n) || n < 1 || n > 100_000) throw new Error(`ROSTER_FAULT_ROUNDS must be a positive integer, got "${raw}"`);
  return n;
}

/** One line in the CI log per fact worth keeping (counts, seeds). */
export function report(test: string, facts: Record<string, unknown>): void {
  const text = Object.entries(facts).map(([k, v]) => `${k}=${typeof v === 'object' ? JSON.stringify(v) : String(v)}`).join(' ');
  console.log(`[wal-crash] ${test}: ${text}`);
}

// ---- on-disk frames (record.ts) -------------------------------------------------------------

export interface DiskEntry {
  i: number;
  t: number;
  p: string;
  c: { t: string; key?: string; value?: string | null; [k: string]: unknown };
}

export interface DiskFrame {
  /** Offset of the frame header in its file. */
  start: number;
  /** Offset just past the payload. */
  end: number;
  entries: DiskEntry[];
}

/**
 * The whole, crc-checked commit frames at the start of a segment, up to the first that is not one
 * (the preallocated zeros, or damage). Independent of src/wal on purpose.
 */
export function readFrames(path: string): DiskFrame[] {
  const buf = readFileSync(path);
  const frames: DiskFrame[] = [];
  for (let at = 0; at + 8 <= buf.length;) {
    const len = buf.readUInt32LE(at);
    if (len === 0 || at + 8 + len > buf.length) break;
    const payload = buf.subarray(at + 8, at + 8 + len);
    if (crc32(payload) !== buf.readUInt32LE(at + 4)) break;
    frames.push({ start: at, end: at + 8 + len, entries: JSON.parse(payload.toString('utf8')) as DiskEntry[] });
    at += 8 + len;
  }
  return frames;
}

/** One frame as record.ts lays it out: `[u32 LE length][u32 LE crc32(payload)][payload]`. */
export function encodeFrame(payload: string | Buffer): Buffer {
  const body = typeof payload === 'string' ? Buffer.from(payload, 'utf8') : payload;
  const head = Buffer.alloc(8);
  head.writeUInt32LE(body.length, 0);
  head.writeUInt32LE(crc32(body), 4);
  return Buffer.concat([head, body]);
}

/** Whether a snapshot file is exactly one whole frame with a matching crc. */
export function snapshotIsWhole(path: string): boolean {
  const buf = readFileSync(path);
  if (buf.length < 8 || buf.readUInt32LE(0) !== buf.length - 8) return false;
  return crc32(buf.subarray(8)) === buf.readUInt32LE(4);
}

export function segmentPaths(dataDir: string): string[] {
  return readdirSync(join(dataDir, 'wal')).filter((n) => n.endsWith('.seg')).sort().map((n) => join(dataDir, 'wal', n));
}

export function snapNames(dataDir: string): string[] {
  try {
    return readdirSync(join(dataDir, 'snap')).sort();
  } catch {
    return [];
  }
}

/** XORs `count` distinct bytes of [from, to) with a non-zero mask each; returns the offsets. */
export function flipBytes(buf: Buffer, from: number, to: number, count: number, rng: Rng): number[] {
  const offsets = new Set<number>();
  while (offsets.size < Math.min(count, to - from)) offsets.add(rng.int(from, to - 1));
  for (const at of offsets) buf[at]! ^= rng.int(1, 255);
  return [...offsets].sort((a, b) => a - b);
}

// ---- the agent's log lines ------------------------------------------------------------------

export interface LogLine {
  msg?: string;
  [k: string]: unknown;
}

/** The agent's pino lines (JSON), other lines skipped. */
export function logLines(output: string): LogLine[] {
  const out: LogLine[] = [];
  for (const line of output.split('\n')) {
    if (!line.startsWith('{')) continue;
    try {
      out.push(JSON.parse(line) as LogLine);
    } catch {
      // a line cut by SIGKILL
    }
  }
  return out;
}

/** The exit code in startAgent's "agent exited (N) before ready" rejection, or undefined. */
export function exitCodeOf(err: unknown): number | undefined {
  const m = /agent exited \((-?\d+|null)\) before ready/.exec(err instanceof Error ? err.message : String(err));
  return m === null || m[1] === 'null' ? undefined : Number(m[1]);
}
