// Goal: recovery refuses every damage that is not a torn last commit (it would lose acknowledged
// entries), names file, offset and entries, and changes nothing on disk; unless a snapshot holds it all.
import { appendFile, readFile, rm, truncate, writeFile } from 'node:fs/promises';
import { basename, join } from 'node:path';
import { describe, expect, it } from 'vitest';
import { capture, frame, frameOffsets, pad, proposals, WalFixture } from './wal-fixture.ts';

describe('WalLog recovery refuses damage', () => {
  const fx = WalFixture.use();
  const { make, opened, appended, reopen, seed, segments, readUsed, expectRefused } = fx;

  /** `count` entries, then a snapshot at the last of them (as a clean shutdown leaves the data dir). */
  async function seedWithSnapshot(count: number): Promise<void> {
    await seed(count);
    const log = await opened();
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
    expect(message).toContain(`truncate -s ${last} ${seg} && truncate -s +1M ${seg}`);
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
    // As a crash after the snapshot leaves it: no record of a clean close (with one, the snapshot would do).
    await rm(join(fx.dir, 'snap', 'closed'));
    const [seg] = await segments();
    const buf = await readUsed(seg!);
    await truncate(seg!, buf.length - 3);
    await expectRefused(/the log ends at 4, before the snapshot at 5/);
    expect((await readFile(seg!)).length).toBe(buf.length - 3);
  });

  it('opens when the snapshot holds the whole damaged last commit (a shutdown snapshot): the log continues after it', async () => {
    await seed(4);
    const first = await appended(5, 3);
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
    const first = await opened();
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
    await writeFile(join(fx.dir, 'wal', `${pad(6)}.seg`), Buffer.alloc(0));
    const { log: again, entries, snapIndex } = await reopen();
    expect([snapIndex, entries.length]).toEqual([5, 0]);
    await again.append(proposals(6, 1));
    expect((await segments()).map((p) => basename(p))).toEqual([`${pad(6)}.seg`]);
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
    const log = await appended(2, 12_000);
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
    await writeFile(join(fx.dir, 'wal', `${pad(1)}.seg`), Buffer.concat([
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
});
