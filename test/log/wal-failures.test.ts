// Goal: a failed write or fdatasync is never acknowledged and fails the log for good, while a full
// disk is waited out: appends refused as unavailable, the partial frame cut, writes resumed once space is back.
import fs from 'node:fs';
import { readFile } from 'node:fs/promises';
import { describe, expect, it, vi } from 'vitest';
import { ManualClock } from '../../src/ports/clock.ts';
import { isLogUnavailable } from '../../src/wal/index.ts';
import { reserveBytesMin } from '../../src/wal/preallocation.ts';
import { fileHandlePrototype, proposals, usedBytes, WalFixture } from './wal-fixture.ts';

describe('WalLog write failures', () => {
  const fx = WalFixture.use();
  const { make, opened, appended, reopen, segments } = fx;

  it('rejects the appends of a failed write, refuses further ones, and loses nothing acknowledged', async () => {
    const log = await appended(1, 3);
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
    expect((failed as Error).message).not.toContain(fx.dir);
    expect(writable).toEqual([false]);
    // Refused at once meanwhile, without touching the disk; nothing was delivered.
    expect(isLogUnavailable(await log.append(proposals(5, 1)).catch((e: unknown) => e))).toBe(true);
    expect(delivered).toEqual([]);
    // The partial frame is gone: the last acknowledged commit, then only the zeros the WAL keeps past it
    // (made again without disk space, as a hole), so that a crash now leaves a log recovery opens.
    const cut = await readFile(seg!);
    expect(cut.length).toBe(before + reserveBytesMin);
    expect(usedBytes(cut)).toBe(before);
    expect(cut.subarray(before).every((b) => b === 0)).toBe(true);
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
    const log = await opened();
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
