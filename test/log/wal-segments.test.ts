// Goal: the WAL rolls segments and keeps only the current one preallocated, compacts behind snapshots
// while keeping the fallback snapshot's entries, keeps two snapshots, and skips unfinished or unreadable ones.
import { readdir, readFile, writeFile } from 'node:fs/promises';
import { basename, join } from 'node:path';
import { describe, expect, it } from 'vitest';
import type { LogEntry } from '../../src/ports/log.ts';
import { capture, pad, proposals, usedBytes, WalFixture } from './wal-fixture.ts';

describe('WalLog segments and snapshots', () => {
  const fx = WalFixture.use();
  const { make, appended, reopen, seed, segments } = fx;

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
    const log = await appended(1, 5);
    for (const index of [1, 2, 3, 4]) await log.saveSnapshot({ index, data: index });
    expect(await readdir(join(fx.dir, 'snap'))).toEqual([`${pad(3)}.snap`, `${pad(4)}.snap`]);
  });

  it('ignores a leftover .snap.tmp and falls back past an unreadable snapshot', async () => {
    const log = await appended(1, 5);
    await log.saveSnapshot({ index: 3, data: 'three' });
    await log.close();
    await writeFile(join(fx.dir, 'snap', `${pad(5)}.snap.tmp`), 'half a snapshot');
    await writeFile(join(fx.dir, 'snap', `${pad(4)}.snap`), 'not a record');
    const logger = capture();
    const again = make({ logger });
    expect(await again.open()).toEqual({ index: 3, data: 'three' });
    expect(logger.warns.map((w) => w.reason)).toEqual([expect.stringMatching(/does not match file/)]);
    expect(await readdir(join(fx.dir, 'snap'))).not.toContain(`${pad(5)}.snap.tmp`);
  });
});
