// Goal: the embedded WAL passes the shared log contract, group-commits, and recovers from crashes without losing acknowledged entries.
import fs, { mkdtempSync } from 'node:fs';
import { appendFile, open, readdir, readFile, rm, truncate, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { basename, join } from 'node:path';
import { crc32 } from 'node:zlib';
import { afterEach, beforeEach, describe, expect, it, vi } from 'vitest';
import { ManualClock, SystemClock } from '../../src/ports/clock.ts';
import type { LogEntry, Proposal } from '../../src/ports/log.ts';
import { isLogDamaged, isLogOverloaded, isLogUnavailable, WalLog, type WalLogOptions } from '../../src/wal/index.ts';
import { silentLogger, type Logger } from '../../src/ports/index.ts';
import { logCompliance } from './compliance.ts';

logCompliance('WalLog', () => {
  const dir = mkdtempSync(join(tmpdir(), 'roster-wal-'));
  return {
    open: (clock, limits) => new WalLog({ dir, clock: clock ?? new SystemClock(), ...limits }),
    cleanup: () => rm(dir, { recursive: true, force: true }),
  };
});

const proposals = (from: number, count: number): Proposal[] => Array.from({ length: count }, (_, k) => ({
  pid: `n1-${from + k}`,
  cmd: { t: 'kv.set', key: `k${from + k}`, value: null, flags: '0' },
}));

/** A logger that keeps what it was told, so a test can check the recovery warning. */
function capture(): Logger & { warns: Record<string, unknown>[] } {
  const warns: Record<string, unknown>[] = [];
  return { ...silentLogger, warns, warn: (obj) => void warns.push(obj as Record<string, unknown>) };
}

const pad = (n: number): string => String(n).padStart(20, '0');

/** Offsets of the commit frames in a segment, read from the length fields, up to the zeroed (preallocated) tail. */
function frameOffsets(buf: Buffer): number[] {
  const out: number[] = [];
  for (let at = 0; at + 8 <= buf.length && buf.readUInt32LE(at) !== 0; at += 8 + buf.readUInt32LE(at)) out.push(at);
  return out;
}

/** Where the last commit frame of a segment ends (the preallocated zeros start there). */
function usedBytes(buf: Buffer): number {
  const last = frameOffsets(buf).at(-1);
  return last === undefined ? 0 : last + 8 + buf.readUInt32LE(last);
}

/** The payload of each commit frame in a segment, parsed, after checking its crc. */
function commitsIn(buf: Buffer): { i: number; t: number; p: string }[][] {
  return frameOffsets(buf).map((at) => {
    const payload = buf.subarray(at + 8, at + 8 + buf.readUInt32LE(at));
    expect(crc32(payload)).toBe(buf.readUInt32LE(at + 4));
    return JSON.parse(payload.toString('utf8')) as { i: number; t: number; p: string }[];
  });
}

/** One frame as the WAL writes it: `[u32 LE length][u32 LE crc32][payload]`. */
function frame(payload: string): Buffer {
  const body = Buffer.from(payload, 'utf8');
  const head = Buffer.alloc(8);
  head.writeUInt32LE(body.length, 0);
  head.writeUInt32LE(crc32(body), 4);
  return Buffer.concat([head, body]);
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

  /**
   * A segment's commits without its preallocated zero tail, the file cut to them: the damage tests
   * below then work on the commits themselves (recovery reads a file with or without the tail).
   */
  async function readUsed(seg: string): Promise<Buffer> {
    const buf = await readFile(seg);
    const used = buf.subarray(0, usedBytes(buf));
    await writeFile(seg, used);
    return used;
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
  async function expectRecovered(survivors: number): Promise<Record<string, unknown>> {
    const logger = capture();
    const { log, entries } = await reopen({ logger });
    expect(entries.map((e) => e.index)).toEqual(Array.from({ length: survivors }, (_, k) => k + 1));
    expect(logger.warns).toHaveLength(1);
    const warn = logger.warns[0]!;
    expect(warn.droppedBytes).toBeGreaterThan(0);
    await log.append(proposals(100, 1));
    expect(log.lastIndex()).toBe(survivors + 1);
    await log.close();
    const again = await reopen({ logger: capture() });
    expect(again.entries.map((e) => e.pid).at(-1)).toBe('n1-100');
    expect(again.log.lastIndex()).toBe(survivors + 1);
    return warn;
  }

  /** Seeds `count` one-entry commits, then one last commit of `lastSize` entries; returns the segment. */
  async function seedWithBigLastCommit(count: number, lastSize: number): Promise<{ seg: string; buf: Buffer; last: number }> {
    await seed(count);
    const log = make();
    await log.open();
    await log.append(proposals(count + 1, lastSize));
    await log.close();
    const [seg] = await segments();
    const buf = await readUsed(seg!);
    expect(commitsIn(buf).map((c) => c.length)).toEqual([...Array<number>(count).fill(1), lastSize]);
    return { seg: seg!, buf, last: frameOffsets(buf).at(-1)! };
  }

  /** `count` entries, then a snapshot at the last of them (as a clean shutdown leaves the data dir). */
  async function seedWithSnapshot(count: number): Promise<void> {
    await seed(count);
    const log = make();
    await log.open();
    await log.saveSnapshot({ index: count, data: `snapshot at ${count}` });
    await log.close();
  }

  /** Changes the last commit of the first segment in place with `damage(buf, offset of that commit)`; returns both. */
  async function damageLastCommit(damage: (buf: Buffer, last: number) => void): Promise<{ seg: string; last: number }> {
    const [seg] = await segments();
    const buf = await readFile(seg!);
    const last = frameOffsets(buf).at(-1)!;
    damage(buf, last);
    await writeFile(seg!, buf);
    return { seg: seg!, last };
  }

  /** A gate on the next fdatasync: `inFlight` resolves once a commit waits on it, `release` lets it go. */
  async function holdNextDatasync(): Promise<{ inFlight: Promise<void>; release: () => void }> {
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
    const { inFlight, release } = await holdNextDatasync();
    const first = log.append(proposals(1, 1));
    await inFlight;
    const rest = Array.from({ length: 50 }, (_, k) => log.append(proposals(2 + k, 1)));
    release();
    await Promise.all([first, ...rest]);
    expect(log.stats).toEqual({ commits: 2, entries: 51 });
    const [seg] = await segments();
    expect(commitsIn(await readFile(seg!)).map((c) => c.length)).toEqual([1, 50]);
  });

  it('writes one frame per commit, its payload a JSON array of the commit\'s entries', async () => {
    const clock = new ManualClock(1_000);
    const log = make({ clock });
    await log.open();
    await log.append(proposals(1, 1));
    await log.append(proposals(2, 4));
    await log.append(proposals(6, 2));
    await log.close();
    const [seg] = await segments();
    const buf = await readFile(seg!);
    const commits = commitsIn(buf);
    expect(commits.map((c) => c.map((e) => e.i))).toEqual([[1], [2, 3, 4, 5], [6, 7]]);
    expect(commits[1]![0]).toEqual({ i: 2, t: 1_000, p: 'n1-2', c: proposals(2, 1)[0]!.cmd });
    // Past the last commit: zeros, preallocated so commits overwrite allocated blocks (1 MiB ahead).
    const end = usedBytes(buf);
    expect(buf.length).toBeGreaterThanOrEqual(end + 1024 * 1024 / 2);
    expect(buf.subarray(end).every((b) => b === 0)).toBe(true);
  });

  it('bounds a commit to batchEntriesMax entries', async () => {
    const log = make({ batchEntriesMax: 10 });
    await log.open();
    await Promise.all(Array.from({ length: 100 }, (_, k) => log.append(proposals(k, 1))));
    expect(log.stats.commits).toBeGreaterThanOrEqual(10);
    const [seg] = await segments();
    const sizes = commitsIn(await readFile(seg!)).map((c) => c.length);
    expect(sizes.reduce((a, b) => a + b, 0)).toBe(100);
    expect(Math.max(...sizes)).toBeLessThanOrEqual(10);
  });

  it('bounds a commit frame to batchBytesMax payload bytes', async () => {
    const log = make({ batchBytesMax: 1_000 });
    await log.open();
    await Promise.all(Array.from({ length: 100 }, (_, k) => log.append(proposals(k, 1))));
    const [seg] = await segments();
    const buf = await readFile(seg!);
    const lengths = frameOffsets(buf).map((at) => buf.readUInt32LE(at));
    expect(commitsIn(buf).flat()).toHaveLength(100);
    expect(lengths.length).toBeGreaterThan(5);
    expect(Math.max(...lengths)).toBeLessThanOrEqual(1_000 + 2);
  });

  it('refuses bounds it cannot honour', () => {
    expect(() => make({ batchBytesMax: 64 * 1024 * 1024 + 1 })).toThrow(/batchBytesMax/);
    expect(() => make({ queuedEntriesMax: 0 })).toThrow(/queuedEntriesMax/);
    expect(() => make({ batchEntriesMax: 1.5 })).toThrow(/batchEntriesMax/);
  });

  it('refuses an append that one commit frame could not hold, and carries on', async () => {
    const log = make();
    await log.open();
    const big = 'x'.repeat(15 * 1024 * 1024);
    const huge = Array.from({ length: 5 }, (_, k) => ({ pid: `big${k}`, cmd: { t: 'kv.set', key: 'k', value: big, flags: '0' } as const }));
    await expect(log.append(huge)).rejects.toThrow(/commit limit/);
    await log.append(proposals(1, 1));
    expect(log.lastIndex()).toBe(1);
  });

  it('rejects appends beyond queuedEntriesMax while a commit is in flight, and commits those it took', async () => {
    const log = make({ queuedEntriesMax: 10 });
    await log.open();
    const { inFlight, release } = await holdNextDatasync();
    const first = log.append(proposals(1, 1));
    await inFlight;
    // The in-flight commit does not count: ten single appends fit the queue, the eleventh does not.
    const queued = Array.from({ length: 10 }, (_, k) => log.append(proposals(2 + k, 1)));
    const err: unknown = await log.append(proposals(12, 1)).catch((e: unknown) => e);
    expect(isLogOverloaded(err)).toBe(true);
    expect(err).toMatchObject({ code: 'LOG_OVERLOADED', message: expect.stringMatching(/overloaded.*queuedEntriesMax \(10\)/) });
    release();
    await Promise.all([first, ...queued]);
    expect(log.stats).toEqual({ commits: 2, entries: 11 });
    await log.append(proposals(12, 1));
    expect(log.lastIndex()).toBe(12);
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

  it('cuts a commit torn short at the tail of the last segment', async () => {
    await seed(5);
    const [seg] = await segments();
    const buf = await readUsed(seg!);
    await truncate(seg!, buf.length - 3);
    const warn = await expectRecovered(4);
    expect(warn).toMatchObject({ droppedEntries: 1, reason: 'short payload' });
  });

  /** open() must refuse with a damage error and leave every file of the data dir as it was. */
  async function expectRefused(pattern: RegExp): Promise<string> {
    const before = await snapshotOfDir();
    const err: unknown = await make().open().catch((e: unknown) => e);
    expect(isLogDamaged(err)).toBe(true);
    expect((err as Error).message).toMatch(pattern);
    expect(await snapshotOfDir()).toEqual(before);
    return (err as Error).message;
  }

  async function snapshotOfDir(): Promise<Record<string, string>> {
    const out: Record<string, string> = {};
    for (const sub of ['wal', 'snap']) {
      for (const name of await readdir(join(dir, sub))) out[`${sub}/${name}`] = (await readFile(join(dir, sub, name))).toString('base64');
    }
    return out;
  }

  it('refuses to open on bytes after the last commit that no write of the WAL leaves (a header it never writes)', async () => {
    await seed(5);
    const [seg] = await segments();
    const size = (await readUsed(seg!)).length;
    await appendFile(seg!, Buffer.from('garbage from a crash'));
    await expectRefused(new RegExp(`${basename(seg!)} at offset ${size}: implausible length .*entries from index 6`));
  });

  it('refuses to open when the last commit is complete but fails its crc: it was acknowledged; names file, offset and entries, changes nothing', async () => {
    await seed(5);
    const { seg, last } = await damageLastCommit((buf, last) => { buf[last + 8 + 15]! ^= 0x01; }); // a digit of the entry time
    const message = await expectRefused(new RegExp(`corrupt commit frame in .*${basename(seg!)} at offset ${last}: crc mismatch`));
    expect(message).toMatch(/it is the last commit, complete on disk, so it was acknowledged \(entries 5\.\.5 at least\)/);
    expect(message).toMatch(/refusing to open, acknowledged entries would be lost/);
    expect(message).toContain(`truncating ${seg} to ${last} bytes`);
  });

  it.each([
    ['grows into the preallocated zeros', (len: number) => len + 3000],
    ['grows past the end of the file', (len: number) => len + (32 << 20)],
    ['shrinks', (len: number) => len - 5],
    ['is zero', () => 0],
  ])('refuses to open when the last commit\'s length field %s (a damaged header, not a torn write)', async (_, length) => {
    await seed(5);
    const { seg, last } = await damageLastCommit((buf, last) => { buf.writeUInt32LE(length(buf.readUInt32LE(last)), last); });
    await expectRefused(new RegExp(`${basename(seg!)} at offset ${last}: .*so it was acknowledged`));
  });

  it('refuses when a single byte of the last commit became zero (damage, not a sector that never landed)', async () => {
    await seed(5);
    await damageLastCommit((buf, last) => { buf[last + 8 + 15] = 0; });
    await expectRefused(/so it was acknowledged/);
  });

  it('decides before it changes anything: a torn last commit behind a snapshot of it is refused and left on disk', async () => {
    await seedWithSnapshot(5);
    const [seg] = await segments();
    const buf = await readUsed(seg!);
    await truncate(seg!, buf.length - 3);
    await expectRefused(/the log ends at 4, before the snapshot at 5/);
    expect((await readFile(seg!)).length).toBe(buf.length - 3);
  });

  it('opens when the snapshot holds the whole damaged last commit (a shutdown snapshot): the log continues after it', async () => {
    await seed(4);
    const first = make();
    await first.open();
    await first.append(proposals(5, 3));
    await first.saveSnapshot({ index: 7, data: 'seven' });
    await first.close();
    const { seg, last } = await damageLastCommit((buf, last) => { buf[last + 8 + 3]! ^= 0x01; });
    const logger = capture();
    const { log, entries, snapIndex } = await reopen({ logger });
    expect(snapIndex).toBe(7);
    expect(entries).toEqual([]);
    expect(logger.warns).toEqual([expect.objectContaining({ file: seg, offset: last, firstIndex: 5, lastIndexSeen: 7, snapshot: 7 })]);
    await log.append(proposals(8, 1));
    expect(log.lastIndex()).toBe(8);
    await log.close();
    expect((await segments()).map((p) => basename(p))).toEqual([`${pad(8)}.seg`]);
    const again = await reopen({ logger: capture() });
    expect(again.snapIndex).toBe(7);
    expect(again.entries.map((e) => [e.index, e.pid])).toEqual([[8, 'n1-8']]);
  });

  it('refuses when the snapshot holds only part of the damaged last commit', async () => {
    await seed(4);
    const first = make();
    await first.open();
    await first.saveSnapshot({ index: 4, data: 'four' });
    await first.append(proposals(5, 3));
    await first.close();
    await damageLastCommit((buf, last) => { buf[last + 8 + 3]! ^= 0x01; });
    await expectRefused(/entries 5\.\.7 at least/);
  });

  it('finishes a restart after the snapshot that a crash interrupted (the new empty segment beside the old ones)', async () => {
    await seedWithSnapshot(5);
    const [seg] = await segments();
    const buf = await readFile(seg!);
    buf[frameOffsets(buf).at(-1)! + 8 + 3]! ^= 0x01;
    await writeFile(seg!, buf);
    await writeFile(join(dir, 'wal', `${pad(6)}.seg`), Buffer.alloc(0));
    const { log: again, entries, snapIndex } = await reopen();
    expect([snapIndex, entries.length]).toEqual([5, 0]);
    await again.append(proposals(6, 1));
    expect((await segments()).map((p) => basename(p))).toEqual([`${pad(6)}.seg`]);
  });

  it('cuts the whole last commit when a page in its middle is lost but the entries after it look intact', async () => {
    const { seg, buf, last } = await seedWithBigLastCommit(5, 200);
    // Power loss mid-commit: the page cache wrote a later page of the unsynced commit, not this one.
    const page = Math.floor((last + (buf.length - last) / 2) / 4096) * 4096;
    expect(page).toBeGreaterThan(last + 8);
    expect(buf.length).toBeGreaterThan(page + 2 * 4096);
    buf.fill(0, page, page + 4096);
    await writeFile(seg!, buf);
    // Past the hole the bytes still read as whole entries: judged entry by entry they would be kept.
    const whole = buf.subarray(page + 4096).toString('utf8').match(/\{"i":\d+,"t":\d+,"p":"n1-\d+","c":\{[^}]*\}\}/g) ?? [];
    expect(whole.length).toBeGreaterThan(20);
    for (const e of whole) expect(JSON.parse(e)).toHaveProperty('i');
    const warn = await expectRecovered(5);
    expect(warn).toMatchObject({ offset: last, droppedBytes: buf.length - last, reason: 'crc mismatch' });
    expect(warn.droppedEntries).toBeGreaterThan(100);
    expect(warn.droppedEntries).toBeLessThan(200);
  });

  it('cuts the whole last commit when its first page, header included, is lost but later pages landed', async () => {
    const { seg, buf, last } = await seedWithBigLastCommit(5, 200);
    const firstPageEnd = Math.ceil((last + 9) / 4096) * 4096;
    buf.fill(0, last, firstPageEnd);
    await writeFile(seg!, buf);
    const warn = await expectRecovered(5);
    expect(warn).toMatchObject({ offset: last, droppedBytes: buf.length - last, reason: 'implausible length 0' });
  });

  it('refuses to open when a damaged commit in the last segment is followed by an intact one', async () => {
    await seed(5);
    const [seg] = await segments();
    const buf = await readUsed(seg!);
    const [, second, third] = frameOffsets(buf);
    buf[second! + 8 + 3]! ^= 0x01;
    await writeFile(seg!, buf);
    await expect(make().open()).rejects.toThrow(
      new RegExp(`${basename(seg!)} at offset ${second}: crc mismatch, and an intact commit follows at offset ${third}`));
  });

  it.each([
    ['swallows the rest of the file', (buf: Buffer, at: number) => buf.length - at - 8, /crc mismatch/],
    ['is implausible', () => 0xffff_ffff, /implausible length/],
    ['points past the end', (buf: Buffer, at: number) => buf.length, /short payload/],
  ])('refuses to open when a commit\'s length field %s and intact commits follow', async (_, length, reason) => {
    await seed(5);
    const [seg] = await segments();
    const buf = await readUsed(seg!);
    const second = frameOffsets(buf)[1]!;
    buf.writeUInt32LE(length(buf, second), second);
    await writeFile(seg!, buf);
    const err: unknown = await make().open().catch((e: unknown) => e);
    expect(err).toBeInstanceOf(Error);
    expect((err as Error).message).toMatch(new RegExp(`${basename(seg!)} at offset ${second}: `));
    expect((err as Error).message).toMatch(reason);
    expect(await readUsed(seg!)).toEqual(buf);
  });

  it('finds an intact commit past a damaged one however far on it starts (beyond the first MiB read)', async () => {
    await seed(1);
    const log = make();
    await log.open();
    await log.append(proposals(2, 12_000));
    await log.append(proposals(12_002, 1));
    await log.close();
    const [seg] = await segments();
    const buf = await readUsed(seg!);
    const [, second, third] = frameOffsets(buf);
    expect(third).toBeGreaterThan(1024 * 1024 + 8);
    buf.writeUInt32LE(0, second!);
    await writeFile(seg!, buf);
    await expect(make().open()).rejects.toThrow(
      new RegExp(`at offset ${second}: implausible length 0, and an intact commit follows at offset ${third}`));
  });

  it('refuses to open when a whole last commit does not continue the index', async () => {
    await seed(5);
    const [seg] = await segments();
    const size = (await readUsed(seg!)).length;
    await appendFile(seg!, frame('[{"i":7,"t":0,"p":"x","c":{"t":"barrier"}}]'));
    await expect(make().open()).rejects.toThrow(new RegExp(`at offset ${size}: index 7, expected 6`));
  });

  it('refuses to open a segment written one record per entry, the format before commit frames', async () => {
    await seed(0); // creates wal/ and an empty first segment
    await writeFile(join(dir, 'wal', `${pad(1)}.seg`), Buffer.concat([
      frame('{"i":1,"t":0,"p":"x","c":{"t":"barrier"}}'),
      frame('{"i":2,"t":0,"p":"y","c":{"t":"barrier"}}'),
    ]));
    await expect(make().open()).rejects.toThrow(/at offset 0: payload is not an array of entries/);
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

  it.each([
    ['empty', Buffer.alloc(0)],
    ['zero-filled, not yet written', Buffer.alloc(64 * 1024)],
  ])('drops an %s last segment left by a crash right after a roll', async (_, content) => {
    await seed(3);
    // A roll cuts the old segment to its commits before the new one exists.
    await readUsed((await segments())[0]!);
    await writeFile(join(dir, 'wal', `${pad(4)}.seg`), content);
    const { log, entries } = await reopen();
    expect(entries).toHaveLength(3);
    await log.append(proposals(4, 1));
    expect(log.lastIndex()).toBe(4);
  });

  it('keeps the last segment preallocated and cuts every rolled segment to its commits', async () => {
    await seed(40, { segmentBytesMax: 300 });
    const segs = await segments();
    expect(segs.length).toBeGreaterThan(5);
    for (const seg of segs.slice(0, -1)) {
      const buf = await readFile(seg);
      expect(usedBytes(buf), seg).toBe(buf.length);
    }
    const last = await readFile(segs.at(-1)!);
    expect(last.length).toBeGreaterThan(usedBytes(last));
    expect(last.subarray(usedBytes(last)).every((b) => b === 0)).toBe(true);
  });

  it('reads the zeros past the last commit as unused space: a reopen warns of nothing and appends after the last commit', async () => {
    await seed(5);
    const logger = capture();
    const { log, entries } = await reopen({ logger });
    expect(entries.map((e) => e.index)).toEqual([1, 2, 3, 4, 5]);
    expect(logger.warns).toEqual([]);
    await log.append(proposals(6, 1));
    await log.close();
    const buf = await readFile((await segments())[0]!);
    expect(commitsIn(buf).map((c) => c[0]!.i)).toEqual([1, 2, 3, 4, 5, 6]);
  });

  it('cuts a commit torn inside the preallocated space (its tail still zeros) and keeps the space zeroed', async () => {
    await seed(5);
    const [seg] = await segments();
    const buf = await readFile(seg!);
    const end = usedBytes(buf);
    // A crash mid-write: the first 20 bytes of the next commit landed, the rest of it did not.
    frame(JSON.stringify([{ i: 6, t: 1, p: 'n1-6', c: { t: 'barrier' } }])).copy(buf, end, 0, 20);
    await writeFile(seg!, buf);
    const warn = await expectRecovered(5);
    expect(warn).toMatchObject({ offset: end, reason: 'crc mismatch' });
    const after = await readFile(seg!);
    expect(after.subarray(usedBytes(after)).every((b) => b === 0)).toBe(true);
  });

  it('rolls segments and compacts after a snapshot, still reopening to snapshot + tail', async () => {
    await seed(40, { segmentBytesMax: 300 });
    const before = await segments();
    expect(before.length).toBeGreaterThan(5);
    const { log } = await reopen({ segmentBytesMax: 300 });
    // The first snapshot compacts nothing: the log from 1 is its fallback if it turns out unreadable.
    await log.saveSnapshot({ index: 20, data: { upTo: 20 } });
    expect(await segments()).toEqual(before);
    // The second compacts up to the first, which stays as the fallback with the log after it.
    await log.saveSnapshot({ index: 30, data: { upTo: 30 } });
    const after = await segments();
    expect(after.length).toBeLessThan(before.length);
    const oldestFirst = Number(basename(after[0]!, '.seg'));
    expect(oldestFirst).toBeGreaterThan(1);
    expect(oldestFirst).toBeLessThanOrEqual(21);
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
    // A commit's frame is written with fs.writeSync (the fdatasync is asynchronous).
    vi.spyOn(fs, 'writeSync').mockImplementationOnce(() => { throw new Error('EIO: simulated write failure'); });
    await expect(log.append(proposals(4, 1))).rejects.toThrow(/EIO: simulated write failure/);
    await expect(log.append(proposals(5, 1))).rejects.toThrow(/failed, no further appends/);
    expect(delivered).toEqual([]);
    await log.close();
    const { log: again, entries } = await reopen();
    expect(entries.map((e) => e.index)).toEqual([1, 2, 3]);
    await again.append(proposals(4, 1));
    expect(again.lastIndex()).toBe(4);
  });

  it('waits out a full disk: the failed commit is refused as unavailable and cut from the file, writes resume once space is back', async () => {
    const clock = new ManualClock();
    const log = make({ clock });
    const writable: boolean[] = [];
    log.onWritable((w) => void writable.push(w));
    await log.open();
    await log.append(proposals(1, 3));
    const delivered: number[] = [];
    log.subscribe(3, (batch) => void delivered.push(...batch.map((e) => e.index)));
    const [seg] = await segments();
    const before = usedBytes(await readFile(seg!));
    // The disk fills in the middle of a commit: part of its frame lands, then ENOSPC.
    const real = fs.writeSync.bind(fs) as (fd: number, buf: Buffer, off: number, len: number, pos: number) => number;
    vi.spyOn(fs, 'writeSync')
      .mockImplementationOnce(((fd: number, buf: Buffer, off: number, _len: number, pos: number) => real(fd, buf, off, 10, pos)) as typeof fs.writeSync)
      .mockImplementationOnce(() => { throw Object.assign(new Error('ENOSPC: no space left on device, write'), { code: 'ENOSPC' }); });
    const failed: unknown = await log.append(proposals(4, 1)).catch((e: unknown) => e);
    expect(isLogUnavailable(failed)).toBe(true);
    expect((failed as Error).message).not.toContain(dir);
    expect(writable).toEqual([false]);
    // Refused at once meanwhile, without touching the disk; nothing was delivered.
    expect(isLogUnavailable(await log.append(proposals(5, 1)).catch((e: unknown) => e))).toBe(true);
    expect(delivered).toEqual([]);
    // The partial frame is gone: the file ends at the last acknowledged commit.
    expect((await readFile(seg!)).length).toBe(before);
    vi.restoreAllMocks();
    clock.advance(1000);
    await vi.waitFor(() => expect(writable).toEqual([false, true]));
    await log.append(proposals(6, 1));
    expect(delivered).toEqual([4]);
    await log.close();
    const { entries } = await reopen();
    expect(entries.map((e) => e.pid)).toEqual(['n1-1', 'n1-2', 'n1-3', 'n1-6']);
  });

  it('stays unavailable while retries still find the disk full', async () => {
    const clock = new ManualClock();
    const log = make({ clock });
    const writable: boolean[] = [];
    log.onWritable((w) => void writable.push(w));
    await log.open();
    const enospc = () => { throw Object.assign(new Error('ENOSPC: no space left on device, write'), { code: 'ENOSPC' }); };
    vi.spyOn(fs, 'writeSync').mockImplementationOnce(enospc);
    expect(isLogUnavailable(await log.append(proposals(1, 1)).catch((e: unknown) => e))).toBe(true);
    // The retry reserves space with FileHandle.write: make it fail twice, then let it through.
    const proto = await fileHandlePrototype();
    const full = Object.assign(new Error('ENOSPC: no space left on device, write'), { code: 'ENOSPC' });
    const write = vi.spyOn(proto, 'write').mockRejectedValueOnce(full).mockRejectedValueOnce(full);
    clock.advance(1000);
    await vi.waitFor(() => expect(write).toHaveBeenCalledTimes(1));
    clock.advance(1000);
    await vi.waitFor(() => expect(write).toHaveBeenCalledTimes(2));
    expect(writable).toEqual([false]);
    expect(isLogUnavailable(await log.append(proposals(2, 1)).catch((e: unknown) => e))).toBe(true);
    clock.advance(1000);
    await vi.waitFor(() => expect(writable).toEqual([false, true]));
    await log.append(proposals(3, 1));
    expect(log.lastIndex()).toBe(1);
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
