// Goal: the embedded WAL passes the shared log contract, group-commits, and recovers from crashes without losing acknowledged entries.
import { mkdtempSync } from 'node:fs';
import { appendFile, open, readdir, readFile, rm, truncate, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { basename, join } from 'node:path';
import { afterEach, beforeEach, describe, expect, it, vi } from 'vitest';
import { ManualClock, SystemClock } from '../../src/ports/clock.ts';
import type { LogEntry, Proposal } from '../../src/ports/log.ts';
import { WalLog, type WalLogger, type WalLogOptions } from '../../src/wal/index.ts';
import { logCompliance } from './compliance.ts';

logCompliance('WalLog', () => {
  const dir = mkdtempSync(join(tmpdir(), 'roster-wal-'));
  return {
    open: (clock) => new WalLog({ dir, clock: clock ?? new SystemClock() }),
    cleanup: () => rm(dir, { recursive: true, force: true }),
  };
});

const proposals = (from: number, count: number): Proposal[] => Array.from({ length: count }, (_, k) => ({
  pid: `n1-${from + k}`,
  cmd: { t: 'kv.set', key: `k${from + k}`, value: null, flags: '0' },
}));

/** A logger that keeps what it was told, so a test can check the recovery warning. */
function capture(): WalLogger & { warns: Record<string, unknown>[] } {
  const warns: Record<string, unknown>[] = [];
  return { warns, info() {}, warn: (obj) => void warns.push(obj as Record<string, unknown>), error() {} };
}

const pad = (n: number): string => String(n).padStart(20, '0');

/** Offsets of the records in a segment, read from the length fields. */
function recordOffsets(buf: Buffer): number[] {
  const out: number[] = [];
  for (let at = 0; at + 8 <= buf.length; at += 8 + buf.readUInt32LE(at)) out.push(at);
  return out;
}

describe('WalLog', () => {
  let dir: string;
  const logs: WalLog[] = [];

  beforeEach(() => {
    dir = mkdtempSync(join(tmpdir(), 'roster-wal-'));
  });
  afterEach(async () => {
    vi.restoreAllMocks();
    for (const log of logs.splice(0)) await log.close().catch(() => undefined);
    await rm(dir, { recursive: true, force: true });
  });

  function make(extra: Partial<WalLogOptions> = {}): WalLog {
    const log = new WalLog({ dir, clock: new ManualClock(), ...extra });
    logs.push(log);
    return log;
  }

  /** Opens a fresh instance, replays everything after the snapshot, and returns both. */
  async function reopen(extra: Partial<WalLogOptions> = {}): Promise<{ log: WalLog; entries: LogEntry[]; snapIndex: number }> {
    const log = make(extra);
    const snapshot = await log.open();
    const entries: LogEntry[] = [];
    log.subscribe(snapshot?.index ?? 0, (batch) => void entries.push(...batch));
    return { log, entries, snapIndex: snapshot?.index ?? 0 };
  }

  async function segments(): Promise<string[]> {
    return (await readdir(join(dir, 'wal'))).sort().map((n) => join(dir, 'wal', n));
  }

  /** Appends `count` entries one commit each, then closes. */
  async function seed(count: number, extra: Partial<WalLogOptions> = {}): Promise<void> {
    const log = make(extra);
    await log.open();
    for (let k = 1; k <= count; k += 1) await log.append(proposals(k, 1));
    await log.close();
  }

  /** After a torn tail was cut: what was left replays, appends continue at `next` and survive a reopen. */
  async function expectRecovered(survivors: number): Promise<void> {
    const logger = capture();
    const { log, entries } = await reopen({ logger });
    expect(entries.map((e) => e.index)).toEqual(Array.from({ length: survivors }, (_, k) => k + 1));
    expect(logger.warns).toHaveLength(1);
    expect(logger.warns[0]!.droppedBytes).toBeGreaterThan(0);
    await log.append(proposals(100, 1));
    expect(log.lastIndex()).toBe(survivors + 1);
    await log.close();
    const again = await reopen({ logger: capture() });
    expect(again.entries.map((e) => e.pid).at(-1)).toBe('n1-100');
    expect(again.log.lastIndex()).toBe(survivors + 1);
  }

  it('group-commits concurrent appends into far fewer fdatasyncs', async () => {
    const log = make();
    await log.open();
    await Promise.all(Array.from({ length: 200 }, (_, k) => log.append(proposals(k, 1))));
    expect(log.stats.entries).toBe(200);
    expect(log.stats.commits).toBeLessThan(log.stats.entries);
  });

  it('puts every append that arrives during an in-flight fdatasync into the next single commit', async () => {
    const log = make();
    await log.open();
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
    const first = log.append(proposals(1, 1));
    await inFlight;
    const rest = Array.from({ length: 50 }, (_, k) => log.append(proposals(2 + k, 1)));
    release();
    await Promise.all([first, ...rest]);
    expect(log.stats).toEqual({ commits: 2, entries: 51 });
  });

  it('bounds a commit to batchEntriesMax entries', async () => {
    const log = make({ batchEntriesMax: 10 });
    await log.open();
    await Promise.all(Array.from({ length: 100 }, (_, k) => log.append(proposals(k, 1))));
    expect(log.stats.commits).toBeGreaterThanOrEqual(10);
  });

  it('replays from disk in bounded batches', async () => {
    const log = make();
    await log.open();
    await log.append(proposals(1, 2500));
    await log.close();
    const again = make();
    await again.open();
    const sizes: number[] = [];
    again.subscribe(0, (batch) => void sizes.push(batch.length));
    expect(sizes).toEqual([1024, 1024, 452]);
  });

  it('cuts a record torn short at the tail of the last segment', async () => {
    await seed(5);
    const [seg] = await segments();
    const buf = await readFile(seg!);
    await truncate(seg!, buf.length - 3);
    await expectRecovered(4);
  });

  it('cuts garbage after the last record', async () => {
    await seed(5);
    const [seg] = await segments();
    await appendFile(seg!, Buffer.from('garbage from a crash'));
    await expectRecovered(5);
  });

  it('cuts a last record whose crc does not match', async () => {
    await seed(5);
    const [seg] = await segments();
    const buf = await readFile(seg!);
    const last = recordOffsets(buf).at(-1)!;
    buf[last + 8 + 3]! ^= 0x01;
    await writeFile(seg!, buf);
    await expectRecovered(4);
  });

  it('refuses to open when a damaged record in the last segment is followed by intact ones', async () => {
    await seed(5);
    const [seg] = await segments();
    const buf = await readFile(seg!);
    const second = recordOffsets(buf)[1]!;
    buf[second + 8 + 3]! ^= 0x01;
    await writeFile(seg!, buf);
    await expect(make().open()).rejects.toThrow(new RegExp(`${basename(seg!)} at offset ${second}: crc mismatch`));
  });

  it('refuses to open when a segment other than the last is corrupt', async () => {
    await seed(5, { segmentBytesMax: 1 });
    const segs = await segments();
    expect(segs).toHaveLength(5);
    const buf = await readFile(segs[1]!);
    buf[10]! ^= 0x01;
    await writeFile(segs[1]!, buf);
    await expect(make().open()).rejects.toThrow(new RegExp(`${basename(segs[1]!)} at offset 0`));
  });

  it('refuses to open when a segment is missing from the middle', async () => {
    await seed(5, { segmentBytesMax: 1 });
    const segs = await segments();
    await rm(segs[2]!);
    await expect(make().open()).rejects.toThrow(/index gap at .*00000004\.seg/);
  });

  it('drops an empty last segment left by a crash right after a roll', async () => {
    await seed(3);
    await writeFile(join(dir, 'wal', `${pad(4)}.seg`), '');
    const { log, entries } = await reopen();
    expect(entries).toHaveLength(3);
    await log.append(proposals(4, 1));
    expect(log.lastIndex()).toBe(4);
  });

  it('rolls segments and compacts after a snapshot, still reopening to snapshot + tail', async () => {
    await seed(40, { segmentBytesMax: 300 });
    const before = await segments();
    expect(before.length).toBeGreaterThan(5);
    const { log } = await reopen({ segmentBytesMax: 300 });
    await log.saveSnapshot({ index: 30, data: { upTo: 30 } });
    const after = await segments();
    expect(after.length).toBeLessThan(before.length);
    const oldestFirst = Number(basename(after[0]!, '.seg'));
    expect(oldestFirst).toBeLessThanOrEqual(31);
    await log.append(proposals(41, 1));
    await log.close();

    const again = make({ segmentBytesMax: 300 });
    expect(await again.open()).toEqual({ index: 30, data: { upTo: 30 } });
    expect(() => again.subscribe(oldestFirst - 2, () => undefined)).toThrow(/compacted/);
    const entries: LogEntry[] = [];
    again.subscribe(30, (batch) => void entries.push(...batch));
    expect(entries.map((e) => e.index)).toEqual(Array.from({ length: 11 }, (_, k) => 31 + k));
    await again.append(proposals(42, 1));
    expect(again.lastIndex()).toBe(42);
  });

  it('keeps only the newest snapshot and the one before it', async () => {
    const log = make();
    await log.open();
    await log.append(proposals(1, 5));
    for (const index of [1, 2, 3, 4]) await log.saveSnapshot({ index, data: index });
    expect(await readdir(join(dir, 'snap'))).toEqual([`${pad(3)}.snap`, `${pad(4)}.snap`]);
  });

  it('ignores a leftover .snap.tmp and falls back past an unreadable snapshot', async () => {
    const log = make();
    await log.open();
    await log.append(proposals(1, 5));
    await log.saveSnapshot({ index: 3, data: 'three' });
    await log.close();
    await writeFile(join(dir, 'snap', `${pad(5)}.snap.tmp`), 'half a snapshot');
    await writeFile(join(dir, 'snap', `${pad(4)}.snap`), 'not a record');
    const logger = capture();
    const again = make({ logger });
    expect(await again.open()).toEqual({ index: 3, data: 'three' });
    expect(logger.warns.map((w) => w.reason)).toEqual([expect.stringMatching(/does not match file/)]);
    expect(await readdir(join(dir, 'snap'))).not.toContain(`${pad(5)}.snap.tmp`);
  });

  it('rejects the appends of a failed write, refuses further ones, and loses nothing acknowledged', async () => {
    const log = make();
    await log.open();
    await log.append(proposals(1, 3));
    const delivered: number[] = [];
    log.subscribe(3, (batch) => void delivered.push(...batch.map((e) => e.index)));
    const proto = await fileHandlePrototype();
    vi.spyOn(proto, 'write').mockRejectedValueOnce(new Error('EIO: simulated write failure'));
    await expect(log.append(proposals(4, 1))).rejects.toThrow(/EIO: simulated write failure/);
    await expect(log.append(proposals(5, 1))).rejects.toThrow(/failed, no further appends/);
    expect(delivered).toEqual([]);
    await log.close();
    const { log: again, entries } = await reopen();
    expect(entries.map((e) => e.index)).toEqual([1, 2, 3]);
    await again.append(proposals(4, 1));
    expect(again.lastIndex()).toBe(4);
  });

  it('never acknowledges a batch whose fdatasync failed', async () => {
    const log = make();
    await log.open();
    const delivered: number[] = [];
    log.subscribe(0, (batch) => void delivered.push(...batch.map((e) => e.index)));
    const proto = await fileHandlePrototype();
    vi.spyOn(proto, 'datasync').mockRejectedValueOnce(new Error('EIO: simulated fdatasync failure'));
    const results = await Promise.allSettled([log.append(proposals(1, 1)), log.append(proposals(2, 1))]);
    expect(results.map((r) => r.status)).toEqual(['rejected', 'rejected']);
    expect(delivered).toEqual([]);
    expect(log.lastIndex()).toBe(0);
    expect(log.stats.commits).toBe(0);
  });
});

/** FileHandle is not exported by node:fs/promises; its prototype is where a fault can be injected. */
async function fileHandlePrototype(): Promise<{ write: () => Promise<unknown>; datasync: () => Promise<void> }> {
  const fh = await open(tmpdir(), 'r');
  await fh.close();
  return Object.getPrototypeOf(fh) as { write: () => Promise<unknown>; datasync: () => Promise<void> };
}
