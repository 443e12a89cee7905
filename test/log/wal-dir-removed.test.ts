// Goal: a WAL whose data dir is removed (or moved away) while it runs never acknowledges a commit written into the removed
// files, and starts afresh from the snapshot its runtime gives: the dir made again (after `reclaimDir`), the
// snapshot at the last acknowledged index, a new segment after it. Without a snapshot at that index, or
// when `reclaimDir` refuses (another agent holds the dir now), it fails for good and writes nothing there.
import { existsSync, readdirSync, renameSync, rmSync } from 'node:fs';
import { join } from 'node:path';
import { describe, expect, it, vi } from 'vitest';
import { ManualClock } from '../../src/ports/clock.ts';
import type { Snapshot } from '../../src/ports/log.ts';
import { isLogFailed, isLogUnavailable } from '../../src/wal/index.ts';
import { proposals, WalFixture } from './wal-fixture.ts';

describe('WalLog with its data dir removed', () => {
  const fx = WalFixture.use();

  /** A log of `count` entries whose snapshot source answers the entries applied so far (their indexes). */
  async function running(count: number, extra: Parameters<WalFixture['make']>[0] = {}) {
    const clock = new ManualClock();
    const log = fx.make({ clock, ...extra });
    const writable: boolean[] = [];
    log.onWritable((w) => void writable.push(w));
    await log.open();
    const applied: number[] = [];
    log.subscribe(0, (batch) => void applied.push(...batch.map((e) => e.index)));
    const source = vi.fn((): Snapshot => ({ index: applied.at(-1) ?? 0, data: { applied: [...applied] } }));
    log.snapshotSource(source);
    for (let k = 1; k <= count; k++) await log.append(proposals(k, 1));
    return { clock, log, writable, applied, source };
  }

  it('refuses the commit that meets the removal, then writes the state as of the last acknowledged one afresh', async () => {
    const reclaimed: string[] = [];
    const { clock, log, writable, applied } = await running(5, { reclaimDir: async () => void reclaimed.push(readdirSync(fx.dir).join(',')) });
    rmSync(fx.dir, { recursive: true, force: true });
    const refused: unknown = await log.append(proposals(6, 1)).catch((e: unknown) => e);
    expect(isLogUnavailable(refused) && refused.shortage).toBe('files');
    expect(applied).toEqual([1, 2, 3, 4, 5]);
    expect(writable).toEqual([false]);
    clock.advance(1000);
    await vi.waitFor(() => expect(writable).toEqual([false, true]));
    // The agent's part ran once the dir existed again, before the log wrote anything in it.
    expect(reclaimed).toEqual(['']);
    await log.append(proposals(6, 2));
    await log.close();
    const { entries, snapIndex } = await fx.reopen();
    expect(snapIndex).toBe(5);
    expect(entries.map((e) => e.index)).toEqual([6, 7]);
  });

  it('an idle log notices within its check interval and starts afresh without a write', async () => {
    const { clock, log, writable, source } = await running(3);
    rmSync(join(fx.dir, 'wal'), { recursive: true, force: true });
    clock.advance(1000);
    expect(writable).toEqual([false]);
    clock.advance(1000);
    await vi.waitFor(() => expect(writable).toEqual([false, true]));
    expect(source).toHaveBeenCalledTimes(1);
    expect(readdirSync(join(fx.dir, 'wal'))).toEqual([`${'4'.padStart(20, '0')}.seg`]);
    await log.close();
    expect((await fx.reopen()).snapIndex).toBe(3);
  });

  it('a data dir moved away: an idle log notices within its check interval and starts afresh at its path', async () => {
    const idle = await running(3);
    renameSync(fx.dir, `${fx.dir}.moved`);
    idle.clock.advance(1000);
    expect(idle.writable).toEqual([false]);
    idle.clock.advance(1000);
    await vi.waitFor(() => expect(idle.writable).toEqual([false, true]));
    expect(readdirSync(join(fx.dir, 'wal'))).toEqual([`${'4'.padStart(20, '0')}.seg`]);
    await idle.log.append(proposals(4, 1));
    await idle.log.close();
    expect((await fx.reopen()).entries.map((e) => e.index)).toEqual([4]);
    rmSync(`${fx.dir}.moved`, { recursive: true, force: true });
  });

  it('fails for good, writing nothing in the dir, when reclaimDir refuses or no snapshot at the last index is at hand', async () => {
    const { clock, log } = await running(2, { reclaimDir: () => Promise.reject(new Error('in use by another roster agent')) });
    rmSync(fx.dir, { recursive: true, force: true });
    expect(isLogUnavailable(await log.append(proposals(3, 1)).catch((e: unknown) => e))).toBe(true);
    clock.advance(1000);
    await vi.waitFor(async () => expect(isLogFailed(await log.append(proposals(3, 1)).catch((e: unknown) => e))).toBe(true));
    expect(existsSync(join(fx.dir, 'wal'))).toBe(false);

    const stale = await running(2);
    stale.source.mockImplementation(() => ({ index: 1, data: {} }));
    rmSync(join(fx.dir, 'wal'), { recursive: true, force: true });
    expect(isLogUnavailable(await stale.log.append(proposals(3, 1)).catch((e: unknown) => e))).toBe(true);
    stale.clock.advance(1000);
    await vi.waitFor(async () => expect(isLogFailed(await stale.log.append(proposals(3, 1)).catch((e: unknown) => e))).toBe(true));
    expect(existsSync(join(fx.dir, 'wal'))).toBe(false);
  });

  it('a snapshot dir removed by hand is made again by the next snapshot, which holds everything', async () => {
    const { log } = await running(4);
    rmSync(join(fx.dir, 'snap'), { recursive: true, force: true });
    await log.saveSnapshot({ index: 4, data: { applied: [1, 2, 3, 4] } });
    await log.append(proposals(5, 1));
    await log.close();
    const { entries, snapIndex } = await fx.reopen();
    expect(snapIndex).toBe(4);
    expect(entries.map((e) => e.index)).toEqual([5]);
  });

  it('only the current segment removed, older ones left: the log starts afresh after them and opens again', async () => {
    const { clock, log, writable } = await running(0, { segmentBytesMax: 64 });
    for (let k = 1; k <= 6; k++) await log.append(proposals(k, 1));
    const segs = readdirSync(join(fx.dir, 'wal')).sort();
    expect(segs.length).toBeGreaterThan(2);
    rmSync(join(fx.dir, 'wal', segs.at(-1)!));
    clock.advance(1000);
    clock.advance(1000);
    await vi.waitFor(() => expect(writable).toEqual([false, true]));
    await log.append(proposals(7, 1));
    await log.close();
    const { entries, snapIndex } = await fx.reopen();
    expect(snapIndex).toBe(6);
    expect(entries.map((e) => e.index)).toEqual([7]);
  });

  it('the newest snapshot removed (the entries before it dropped): an idle log writes the state afresh within its check interval', async () => {
    const { clock, log, writable } = await running(0, { segmentBytesMax: 64 });
    for (let k = 1; k <= 6; k++) await log.append(proposals(k, 1));
    await log.saveSnapshot({ index: 6, data: { applied: [1, 2, 3, 4, 5, 6] } });
    await log.append(proposals(7, 1));
    rmSync(join(fx.dir, 'snap'), { recursive: true, force: true });
    clock.advance(1000);
    expect(writable).toEqual([false]);
    clock.advance(1000);
    await vi.waitFor(() => expect(writable).toEqual([false, true]));
    await log.append(proposals(8, 1));
    await log.close();
    const { entries, snapIndex } = await fx.reopen();
    expect(snapIndex).toBe(7);
    expect(entries.map((e) => e.index)).toEqual([8]);
  });
});
