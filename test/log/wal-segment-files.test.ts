// Goal: the WAL's segment files and preallocation on their own: zeros reserved ahead of the write
// position, at least 512 KiB past the last commit and past a commit before it is written; a roll that
// makes the next segment before it cuts the old one to its commits; compaction.
import { mkdtempSync, readdirSync, readFileSync, rmSync, statSync, writeFileSync } from 'node:fs';
import { open } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterEach, beforeEach, describe, expect, it } from 'vitest';
import { preallocate, preallocBytes, reserveBytesMin } from '../../src/wal/preallocation.ts';
import { SegmentFiles } from '../../src/wal/segments.ts';
import { commitFrame, pad } from './wal-fixture.ts';

describe('WAL segment files', () => {
  let walDir: string;
  const opened: SegmentFiles[] = [];
  beforeEach(() => {
    walDir = mkdtempSync(join(tmpdir(), 'roster-segs-'));
  });
  afterEach(async () => {
    for (const files of opened.splice(0)) await files.close().catch(() => undefined);
    rmSync(walDir, { recursive: true, force: true });
  });

  /** Segment files over a new, empty first segment, as recovery leaves a brand-new log. */
  async function fresh(segmentBytesMax: number): Promise<SegmentFiles> {
    const path = join(walDir, `${pad(1)}.seg`);
    writeFileSync(path, Buffer.alloc(0));
    const files = await SegmentFiles.open(walDir, segmentBytesMax, { segments: [{ first: 1, path }], last: 0, lastAtMs: 0, activeBytes: 0, bytesPastSnapshot: 0 });
    opened.push(files);
    return files;
  }

  it('reserves zeros ahead of the write position, a frame and half the reserve after it at least, and not again while that is left', async () => {
    const path = join(walDir, 'x');
    writeFileSync(path, Buffer.alloc(0));
    const fh = await open(path, 'r+');
    try {
      const seg = { first: 1, path, fh, bytes: 0, allocated: 0 };
      await preallocate(seg);
      expect([seg.allocated, statSync(path).size]).toEqual([preallocBytes, preallocBytes]);
      seg.bytes = preallocBytes - reserveBytesMin;
      await preallocate(seg);
      expect(seg.allocated).toBe(preallocBytes);
      seg.bytes += 1;
      await preallocate(seg);
      expect([seg.allocated, statSync(path).size]).toEqual([seg.bytes + preallocBytes, seg.bytes + preallocBytes]);
      // Before a frame larger than what is left: room for it, and the reserve past its end.
      const frame = 3 * preallocBytes;
      await preallocate(seg, frame);
      expect(seg.allocated).toBe(seg.bytes + frame + preallocBytes);
    } finally {
      await fh.close();
    }
    expect(readFileSync(path).every((b) => b === 0)).toBe(true);
  });

  it('writes a commit larger than the zeros ahead with the reserve past it, whatever the segment size', async () => {
    const files = await fresh(40);
    const big = commitFrame(1, 20_000);
    expect(big.length).toBeGreaterThan(preallocBytes);
    await files.write(big);
    const buf = readFileSync(join(walDir, `${pad(1)}.seg`));
    expect(buf.subarray(0, big.length)).toEqual(big);
    expect(buf.length - big.length).toBeGreaterThanOrEqual(reserveBytesMin);
    expect(buf.subarray(big.length).every((b) => b === 0)).toBe(true);
  });

  it('rolls once the current segment is full: the next one made and preallocated, then the old one cut to its commits', async () => {
    const first = commitFrame(1);
    expect(first.length).toBeGreaterThan(40);
    const files = await fresh(40);
    await files.preallocate();
    await files.rollIfFull(1);
    expect(readdirSync(walDir)).toEqual([`${pad(1)}.seg`]);
    await files.write(first);
    await files.rollIfFull(2);
    expect(readdirSync(walDir).sort()).toEqual([`${pad(1)}.seg`, `${pad(2)}.seg`]);
    expect(readFileSync(join(walDir, `${pad(1)}.seg`))).toEqual(first);
    expect(statSync(join(walDir, `${pad(2)}.seg`)).size).toBe(preallocBytes);
    await files.write(commitFrame(2));
    expect(readFileSync(join(walDir, `${pad(2)}.seg`)).subarray(0, commitFrame(2).length)).toEqual(commitFrame(2));
  });

  it('compacts the segments a snapshot covers, never the current one', async () => {
    const files = await fresh(1);
    for (const i of [1, 2, 3]) {
      await files.rollIfFull(i);
      await files.write(commitFrame(i));
    }
    expect(readdirSync(walDir)).toHaveLength(3);
    await files.compact(1);
    expect(readdirSync(walDir).sort()).toEqual([`${pad(2)}.seg`, `${pad(3)}.seg`]);
    await files.compact(10);
    expect(readdirSync(walDir)).toEqual([`${pad(3)}.seg`]);
  });
});
