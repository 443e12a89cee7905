// Goal: the embedded WAL passes the shared log contract, group-commits within its bounds, and replays in bounded batches.
// Recovery, segments and snapshots, and write failures are in the other test/log/wal-*.test.ts files.
import { mkdtempSync } from 'node:fs';
import { readFile, rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { describe, expect, it } from 'vitest';
import { ManualClock, SystemClock } from '../../src/ports/clock.ts';
import { isLogOverloaded, WalLog } from '../../src/wal/index.ts';
import { logCompliance } from './compliance.ts';
import { commitsIn, frameOffsets, holdNextDatasync, proposals, usedBytes, WalFixture } from './wal-fixture.ts';

logCompliance('WalLog', () => {
  const dir = mkdtempSync(join(tmpdir(), 'roster-wal-'));
  return {
    open: (clock, limits) => new WalLog({ dir, clock: clock ?? new SystemClock(), ...limits }),
    cleanup: () => rm(dir, { recursive: true, force: true }),
  };
});

describe('WalLog commits', () => {
  const fx = WalFixture.use();
  const { make, opened, segments, seedCommit } = fx;

  it('group-commits concurrent appends into far fewer fdatasyncs', async () => {
    const log = await opened();
    await Promise.all(Array.from({ length: 200 }, (_, k) => log.append(proposals(k, 1))));
    expect(log.stats.entries).toBe(200);
    expect(log.stats.commits).toBeLessThan(log.stats.entries);
  });

  it('puts every append that arrives during an in-flight fdatasync into the next single commit', async () => {
    const log = await opened();
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
    const log = await opened({ clock });
    await log.append(proposals(1, 1));
    await log.append(proposals(2, 4));
    await log.append(proposals(6, 2));
    await log.close();
    const [seg] = await segments();
    const buf = await readFile(seg!);
    const commits = commitsIn(buf);
    expect(commits.map((c) => c.map((e) => e.i))).toEqual([[1], [2, 3, 4, 5], [6, 7]]);
    expect(commits[1]![0]).toEqual({ i: 2, t: 1_000, p: 'n1-2', c: proposals(2, 1)[0]!.cmd, v: 1 });
    // Past the last commit: zeros, preallocated so commits overwrite allocated blocks (1 MiB ahead).
    const end = usedBytes(buf);
    expect(buf.length).toBeGreaterThanOrEqual(end + 1024 * 1024 / 2);
    expect(buf.subarray(end).every((b) => b === 0)).toBe(true);
  });

  it('bounds a commit to batchEntriesMax entries', async () => {
    const log = await opened({ batchEntriesMax: 10 });
    await Promise.all(Array.from({ length: 100 }, (_, k) => log.append(proposals(k, 1))));
    expect(log.stats.commits).toBeGreaterThanOrEqual(10);
    const [seg] = await segments();
    const sizes = commitsIn(await readFile(seg!)).map((c) => c.length);
    expect(sizes.reduce((a, b) => a + b, 0)).toBe(100);
    expect(Math.max(...sizes)).toBeLessThanOrEqual(10);
  });

  it('bounds a commit frame to batchBytesMax payload bytes', async () => {
    const log = await opened({ batchBytesMax: 1_000 });
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
    const log = await opened();
    const big = 'x'.repeat(15 * 1024 * 1024);
    const huge = Array.from({ length: 5 }, (_, k) => ({ pid: `big${k}`, cmd: { t: 'kv.set', key: 'k', value: big, flags: '0' } as const }));
    await expect(log.append(huge)).rejects.toThrow(/commit limit/);
    await log.append(proposals(1, 1));
    expect(log.lastIndex()).toBe(1);
  });

  it('rejects appends beyond queuedEntriesMax while a commit is in flight, and commits those it took', async () => {
    const log = await opened({ queuedEntriesMax: 10 });
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
    await seedCommit(1, 2500);
    const again = await opened();
    const sizes: number[] = [];
    again.subscribe(0, (batch) => void sizes.push(batch.length));
    expect(sizes).toEqual([1024, 1024, 452]);
  });
});
