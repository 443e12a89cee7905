// Shared by the WalLog tests: a fresh data dir per test, logs opened on it (closed after the test),
// seeding helpers, and readers of the segment files' commit frames.
import { mkdtempSync } from 'node:fs';
import { open, readdir, readFile, rm, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { crc32 } from 'node:zlib';
import { afterEach, beforeEach, expect, vi } from 'vitest';
import { ManualClock } from '../../src/ports/clock.ts';
import type { LogEntry, Proposal } from '../../src/ports/log.ts';
import { isLogDamaged, WalLog, type WalLogOptions } from '../../src/wal/index.ts';
import { silentLogger, type Logger } from '../../src/ports/index.ts';
import { encodeFrame } from '../faults/wal-crash-support.ts';

export const proposals = (from: number, count: number): Proposal[] => Array.from({ length: count }, (_, k) => ({
  pid: `n1-${from + k}`,
  cmd: { t: 'kv.set', key: `k${from + k}`, value: null, flags: '0' },
}));

/** A logger that keeps what it was told, so a test can check the recovery warning. */
export function capture(): Logger & { warns: Record<string, unknown>[] } {
  const warns: Record<string, unknown>[] = [];
  return { ...silentLogger, warns, warn: (obj) => void warns.push(obj as Record<string, unknown>) };
}

export const pad = (n: number): string => String(n).padStart(20, '0');

/** Offsets of the commit frames in a segment, read from the length fields, up to the zeroed (preallocated) tail. */
export function frameOffsets(buf: Buffer): number[] {
  const out: number[] = [];
  for (let at = 0; at + 8 <= buf.length && buf.readUInt32LE(at) !== 0; at += 8 + buf.readUInt32LE(at)) out.push(at);
  return out;
}

/** Where the last commit frame of a segment ends (the preallocated zeros start there). */
export function usedBytes(buf: Buffer): number {
  const last = frameOffsets(buf).at(-1);
  return last === undefined ? 0 : last + 8 + buf.readUInt32LE(last);
}

/** The payload of each commit frame in a segment, parsed, after checking its crc. */
export function commitsIn(buf: Buffer): { i: number; t: number; p: string }[][] {
  return frameOffsets(buf).map((at) => {
    const payload = buf.subarray(at + 8, at + 8 + buf.readUInt32LE(at));
    expect(crc32(payload)).toBe(buf.readUInt32LE(at + 4));
    return JSON.parse(payload.toString('utf8')) as { i: number; t: number; p: string }[];
  });
}

/** One frame as the WAL writes it: `[u32 LE length][u32 LE crc32][payload]` (the fault tests' encoder). */
export { encodeFrame as frame } from '../faults/wal-crash-support.ts';

/** The zeros the WAL keeps past the current segment's last commit, as it writes them (1 MiB; recovery wants 512 KiB at least). */
export const reserveZeros = (): Buffer => Buffer.alloc(1024 * 1024);

/** A segment as the WAL leaves its current one: `commits`, then the zeros it keeps past them. */
export const withZeros = (commits: Buffer): Buffer => Buffer.concat([commits, reserveZeros()]);

/** A commit frame of barrier entries `from`..`to`, all stamped `atMs`. */
export function commitFrame(from: number, to = from, atMs = 10): Buffer {
  const entries = Array.from({ length: to - from + 1 }, (_, k) => ({ i: from + k, t: atMs, p: `n1-${from + k}`, c: { t: 'barrier' } }));
  return encodeFrame(JSON.stringify(entries));
}

/** FileHandle is not exported by node:fs/promises; its prototype is where a fault can be injected. */
export async function fileHandlePrototype(): Promise<{ write: () => Promise<unknown>; datasync: () => Promise<void> }> {
  const fh = await open(tmpdir(), 'r');
  await fh.close();
  return Object.getPrototypeOf(fh) as { write: () => Promise<unknown>; datasync: () => Promise<void> };
}

/** A gate on the next fdatasync: `inFlight` resolves once a commit waits on it, `release` lets it go. */
export async function holdNextDatasync(): Promise<{ inFlight: Promise<void>; release: () => void }> {
  const proto = await fileHandlePrototype();
  const datasync = proto.datasync;
  let release!: () => void;
  const gate = new Promise<void>((resolve) => { release = resolve; });
  let entered!: () => void;
  const inFlight = new Promise<void>((resolve) => { entered = resolve; });
  vi.spyOn(proto, 'datasync').mockImplementationOnce(async function (this: unknown) {
    entered();
    await gate;
    return datasync.call(this);
  });
  return { inFlight, release };
}

/**
 * A data dir made before each test and removed after it, with the logs opened on it closed first.
 * Its methods are bound, so a test file may destructure them once.
 */
export class WalFixture {
  dir = '';
  private readonly logs: WalLog[] = [];

  /** Registers the hooks that give every test of the calling file a fresh fixture. */
  static use(): WalFixture {
    const fx = new WalFixture();
    beforeEach(() => {
      fx.dir = mkdtempSync(join(tmpdir(), 'roster-wal-'));
    });
    afterEach(async () => {
      vi.restoreAllMocks();
      for (const log of fx.logs.splice(0)) await log.close().catch(() => undefined);
      await rm(fx.dir, { recursive: true, force: true });
    });
    return fx;
  }

  make = (extra: Partial<WalLogOptions> = {}): WalLog => {
    const log = new WalLog({ dir: this.dir, clock: new ManualClock(), ...extra });
    this.logs.push(log);
    return log;
  };

  /** A new log, opened. */
  opened = async (extra: Partial<WalLogOptions> = {}): Promise<WalLog> => {
    const log = this.make(extra);
    await log.open();
    return log;
  };

  /** Opens a fresh instance, replays everything after the snapshot, and returns both. */
  reopen = async (extra: Partial<WalLogOptions> = {}): Promise<{ log: WalLog; entries: LogEntry[]; snapIndex: number }> => {
    const log = this.make(extra);
    const snapshot = await log.open();
    const entries: LogEntry[] = [];
    log.subscribe(snapshot?.index ?? 0, (batch) => void entries.push(...batch));
    return { log, entries, snapIndex: snapshot?.index ?? 0 };
  };

  /** Appends `count` entries one commit each, then closes. */
  seed = async (count: number, extra: Partial<WalLogOptions> = {}): Promise<void> => {
    const log = await this.opened(extra);
    for (let k = 1; k <= count; k += 1) await log.append(proposals(k, 1));
    await log.close();
  };

  /** A new log, opened, with `count` entries from `from` on appended as one commit. */
  appended = async (from: number, count: number): Promise<WalLog> => {
    const log = await this.opened();
    await log.append(proposals(from, count));
    return log;
  };

  /** Appends `count` entries from `from` on as one commit, then closes. */
  seedCommit = async (from: number, count: number): Promise<void> => {
    await (await this.appended(from, count)).close();
  };

  /** The segment files, oldest first. */
  segments = async (): Promise<string[]> => (await readdir(join(this.dir, 'wal'))).sort().map((n) => join(this.dir, 'wal', n));

  /**
   * A segment's commits without its preallocated zero tail, the file cut to them: the damage tests
   * then work on the commits themselves (recovery reads a file with or without the tail).
   */
  readUsed = async (seg: string): Promise<Buffer> => {
    const buf = await readFile(seg);
    const used = buf.subarray(0, usedBytes(buf));
    await writeFile(seg, used);
    return used;
  };

  /** open() must refuse with a damage error and leave every file of the data dir as it was. */
  expectRefused = async (pattern: RegExp): Promise<string> => {
    const before = await this.filesOfDir();
    const err: unknown = await this.make().open().catch((e: unknown) => e);
    expect(isLogDamaged(err)).toBe(true);
    expect((err as Error).message).toMatch(pattern);
    expect(await this.filesOfDir()).toEqual(before);
    return (err as Error).message;
  };

  /** Every file of wal/ and snap/ with its content. */
  filesOfDir = async (): Promise<Record<string, string>> => {
    const out: Record<string, string> = {};
    for (const sub of ['wal', 'snap']) {
      for (const name of await readdir(join(this.dir, sub))) out[`${sub}/${name}`] = (await readFile(join(this.dir, sub, name))).toString('base64');
    }
    return out;
  };
}
