// Goal: recovery cuts a commit that a crash tore (never acknowledged) and nothing else: what was
// acknowledged replays, appends continue after it, and the preallocated zeros read as unused space. A torn
// commit lies inside the zeros the WAL keeps past its last commit (it writes them before the commit), and
// they stay after it is cut; a roll a crash interrupted leaves an empty segment that is dropped.
import { readFile, writeFile } from 'node:fs/promises';
import { join } from 'node:path';
import { describe, expect, it } from 'vitest';
import { capture, commitsIn, frame, frameOffsets, pad, proposals, reserveZeros, usedBytes, WalFixture, withZeros } from './wal-fixture.ts';

describe('WalLog recovery of a torn last commit', () => {
  const fx = WalFixture.use();
  const { reopen, seed, seedCommit, segments, readUsed } = fx;

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
    await seedCommit(count + 1, lastSize);
    const [seg] = await segments();
    const buf = await readUsed(seg!);
    expect(commitsIn(buf).map((c) => c.length)).toEqual([...Array<number>(count).fill(1), lastSize]);
    return { seg: seg!, buf, last: frameOffsets(buf).at(-1)! };
  }

  it('cuts a commit whose last bytes never landed (zeros where they go, then the zeros kept past it)', async () => {
    await seed(5);
    const [seg] = await segments();
    const buf = await readUsed(seg!);
    buf.fill(0, buf.length - 3);
    await writeFile(seg!, withZeros(buf));
    const warn = await expectRecovered(4);
    expect(warn).toMatchObject({ droppedEntries: 1, reason: 'crc mismatch' });
    // Cut in place: the segment keeps its size, the append after the recovery took the torn commit's place.
    const after = await readFile(seg!);
    expect(after.length).toBe(buf.length + reserveZeros().length);
    expect(commitsIn(after).map((c) => c[0]!.p)).toEqual(['n1-1', 'n1-2', 'n1-3', 'n1-4', 'n1-100']);
  });

  it('cuts the whole last commit when a page in its middle is lost but the entries after it look intact', async () => {
    const { seg, buf, last } = await seedWithBigLastCommit(5, 200);
    // Power loss mid-commit: the page cache wrote a later page of the unsynced commit, not this one.
    const page = Math.floor((last + (buf.length - last) / 2) / 4096) * 4096;
    expect(page).toBeGreaterThan(last + 8);
    expect(buf.length).toBeGreaterThan(page + 2 * 4096);
    buf.fill(0, page, page + 4096);
    await writeFile(seg!, withZeros(buf));
    // Past the hole the bytes still read as whole entries: judged entry by entry they would be kept.
    const whole = buf.subarray(page + 4096).toString('utf8').match(/\{"i":\d+,"t":\d+,"p":"n1-\d+","c":\{[^}]*\},"v":\d+\}/g) ?? [];
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
    await writeFile(seg!, withZeros(buf));
    const warn = await expectRecovered(5);
    expect(warn).toMatchObject({ offset: last, droppedBytes: buf.length - last, reason: 'implausible length 0' });
  });

  it.each([
    ['empty', Buffer.alloc(0)],
    ['zero-filled, not yet written', Buffer.alloc(64 * 1024)],
  ])('drops an %s last segment left by a crash during a roll, before it sealed the segment before', async (_, content) => {
    await seed(3);
    // A roll makes the new segment first, then cuts the old one's zeros: here the old one still has them.
    await writeFile(join(fx.dir, 'wal', `${pad(4)}.seg`), content);
    const { log, entries } = await reopen();
    expect(entries).toHaveLength(3);
    await log.append(proposals(4, 1));
    expect(log.lastIndex()).toBe(4);
  });

  it('keeps an empty last segment with its zeros after a sealed one (a roll that finished before any commit)', async () => {
    await seed(3);
    await readUsed((await segments())[0]!);
    await writeFile(join(fx.dir, 'wal', `${pad(4)}.seg`), reserveZeros());
    const { log, entries } = await reopen();
    expect(entries).toHaveLength(3);
    await log.append(proposals(4, 1));
    await log.close();
    expect(commitsIn(await readFile(join(fx.dir, 'wal', `${pad(4)}.seg`))).map((c) => c[0]!.i)).toEqual([4]);
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
});
