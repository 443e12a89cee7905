// Goal: recovery's plan, taken on its own over segment directories crafted byte by byte: what it
// keeps, cuts, drops or restarts, what it refuses, and that deciding changes nothing on disk.
import { mkdtempSync, readdirSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterEach, beforeEach, describe, expect, it } from 'vitest';
import { isLogDamaged } from '../../src/ports/index.ts';
import { applyPlan, planRecovery } from '../../src/wal/recovery.ts';
import { scanSegment } from '../../src/wal/scan.ts';
import { capture, commitFrame, pad, reserveZeros, withZeros } from './wal-fixture.ts';

describe('planRecovery', () => {
  let walDir: string;
  beforeEach(() => {
    walDir = mkdtempSync(join(tmpdir(), 'roster-plan-'));
  });
  afterEach(() => rmSync(walDir, { recursive: true, force: true }));

  /** Writes segment files (first index → content) and returns them as recovery lists them. */
  function segments(files: [number, Buffer][]): { first: number; path: string }[] {
    return files.map(([first, content]) => {
      const path = join(walDir, `${pad(first)}.seg`);
      writeFileSync(path, content);
      return { first, path };
    });
  }

  const contents = (): Record<string, string> =>
    Object.fromEntries(readdirSync(walDir).map((n) => [n, readFileSync(join(walDir, n)).toString('base64')]));

  it('starts a brand-new log with a first segment to create', () => {
    const plan = planRecovery(walDir, [], 0);
    expect(plan.recovered).toEqual({ segments: [{ first: 1, path: join(walDir, `${pad(1)}.seg`) }], last: 0, lastAtMs: 0, activeBytes: 0, bytesPastSnapshot: 0 });
    expect(plan.restart).toEqual(plan.recovered.segments[0]);
  });

  it('refuses a snapshot with no segment behind it', () => {
    expect(() => planRecovery(walDir, [], 5)).toThrow(/snapshot at 5 but no segment/);
  });

  it('keeps whole commits across segments: last index, entry time and the current segment\'s size', () => {
    const second = Buffer.concat([commitFrame(3, 3, 20), commitFrame(4, 6, 30)]);
    const segs = segments([[1, commitFrame(1, 2)], [3, withZeros(second)]]);
    const plan = planRecovery(walDir, segs, 0);
    expect(plan.recovered).toEqual({ segments: segs, last: 6, lastAtMs: 30, activeBytes: second.length, bytesPastSnapshot: commitFrame(1, 2).length + second.length });
    // Past a snapshot at 3: the commits holding 4..6 only.
    expect(planRecovery(walDir, segs, 3).recovered.bytesPastSnapshot).toBe(commitFrame(4, 6, 30).length);
    expect([plan.cut, plan.dropEmpty, plan.restart, plan.drop]).toEqual([undefined, undefined, undefined, undefined]);
  });

  it('plans to cut a torn last commit, and deciding leaves the file as it was', () => {
    const whole = commitFrame(1, 2);
    const torn = commitFrame(3, 3).subarray(0, 20);
    const segs = segments([[1, withZeros(Buffer.concat([whole, torn]))]]);
    const before = contents();
    const plan = planRecovery(walDir, segs, 0);
    expect(plan.recovered.last).toBe(2);
    expect(plan.cut).toMatchObject({ path: segs[0]!.path, goodBytes: whole.length, end: whole.length + torn.length, torn: { bytes: torn.length, reason: 'crc mismatch' } });
    expect(contents()).toEqual(before);
  });

  it('drops an empty last segment beside one a roll did not seal yet, and appends to that one', () => {
    const first = commitFrame(1, 4);
    const segs = segments([[1, withZeros(first)], [5, Buffer.alloc(0)]]);
    const plan = planRecovery(walDir, segs, 0);
    expect(plan.dropEmpty).toBe(segs[1]!.path);
    expect(plan.recovered).toMatchObject({ segments: [segs[0]], last: 4, activeBytes: first.length });
  });

  it('keeps an empty last segment with its zeros after a sealed one, and refuses one without them', () => {
    const kept = segments([[1, commitFrame(1, 4)], [5, reserveZeros()]]);
    const plan = planRecovery(walDir, kept, 0);
    expect(plan.dropEmpty).toBeUndefined();
    expect(plan.recovered).toMatchObject({ segments: kept, last: 4, activeBytes: 0 });
    const emptied = segments([[1, commitFrame(1, 4)], [5, Buffer.alloc(100)]]);
    expect(() => planRecovery(walDir, emptied, 0)).toThrow(/holds no commit and 100 bytes.*00001\.seg is sealed/);
  });

  it('refuses a last segment without the zeros past its commits, and a segment before the last that kept them', () => {
    expect(() => planRecovery(walDir, segments([[1, commitFrame(1, 4)]]), 0)).toThrow(/ends at offset \d+, right after its last commit \(index 4\)/);
    const unsealed = segments([[1, withZeros(commitFrame(1, 2))], [3, withZeros(commitFrame(3, 3))]]);
    expect(() => planRecovery(walDir, unsealed, 0)).toThrow(/00001\.seg ends in 1048576 bytes of zeros after its last commit/);
  });

  it('takes an empty segment right after the snapshot as a log restarted there', () => {
    const restarted = segments([[6, Buffer.alloc(0)]]);
    expect(planRecovery(walDir, restarted, 5).recovered).toMatchObject({ segments: restarted, last: 5, activeBytes: 0 });
  });

  it('refuses a gap between segments and entries missing before the oldest one', () => {
    const gap = segments([[1, commitFrame(1, 2)], [4, commitFrame(4, 4)]]);
    expect(() => planRecovery(walDir, gap, 0)).toThrow(/index gap at .*00000004\.seg: expected a segment starting at 3/);
    rmSync(gap[0]!.path);
    const err: unknown = (() => { try { return planRecovery(walDir, [gap[1]!], 1); } catch (e) { return e; } })();
    expect(isLogDamaged(err)).toBe(true);
    expect((err as Error).message).toMatch(/entries 2\.\.3 are missing/);
  });

  it('restarts after a snapshot that holds a damaged last commit, dropping every segment', () => {
    const last = commitFrame(3, 5);
    last[8 + 3]! ^= 0x01;
    const segs = segments([[1, Buffer.concat([commitFrame(1, 2), last])]]);
    const plan = planRecovery(walDir, segs, 5);
    expect(plan.restart).toEqual({ first: 6, path: join(walDir, `${pad(6)}.seg`) });
    expect(plan.drop).toEqual(segs);
    expect(plan.recovered).toEqual({ segments: [plan.restart], last: 5, lastAtMs: 0, activeBytes: 0, bytesPastSnapshot: 0 });
    expect(plan.warning?.obj).toMatchObject({ firstIndex: 3, lastIndexSeen: 5, snapshot: 5 });
  });

  it('refuses a damaged last commit the snapshot holds only part of', () => {
    const last = commitFrame(3, 5);
    last[8 + 3]! ^= 0x01;
    const segs = segments([[1, Buffer.concat([commitFrame(1, 2), last])]]);
    expect(() => planRecovery(walDir, segs, 4)).toThrow(/entries 3\.\.5 at least/);
  });

  it('finishes an interrupted restart: an empty segment right after the snapshot makes the older ones droppable', () => {
    const segs = segments([[1, commitFrame(1, 5)], [6, Buffer.alloc(0)]]);
    const plan = planRecovery(walDir, segs, 5);
    expect(plan).toEqual({ recovered: { segments: [segs[1]], last: 5, lastAtMs: 0, activeBytes: 0, bytesPastSnapshot: 0 }, drop: [segs[0]] });
  });

  it('applies a plan: the torn commit is cut and said in the log, the empty segment deleted', async () => {
    const whole = commitFrame(1, 2);
    const segs = segments([[1, withZeros(Buffer.concat([whole, commitFrame(3, 3).subarray(0, 30)]))]]);
    const logger = capture();
    await applyPlan(walDir, planRecovery(walDir, segs, 0), logger);
    // Zeroed in place: the zeros the WAL keeps past the last commit are still there.
    expect(readFileSync(segs[0]!.path)).toEqual(withZeros(Buffer.concat([whole, Buffer.alloc(30)])));
    expect(logger.warns).toEqual([expect.objectContaining({ offset: whole.length, droppedBytes: 30, droppedEntries: 1, reason: 'crc mismatch' })]);
  });
});

describe('scanSegment', () => {
  let dir: string;
  beforeEach(() => {
    dir = mkdtempSync(join(tmpdir(), 'roster-scan-'));
  });
  afterEach(() => rmSync(dir, { recursive: true, force: true }));

  function scan(content: Buffer, isLast = true): ReturnType<typeof scanSegment> {
    const path = join(dir, `${pad(1)}.seg`);
    writeFileSync(path, content);
    return scanSegment({ first: 1, path }, isLast);
  }

  it('reads preallocated zeros after the last commit as unused space', () => {
    const whole = commitFrame(1, 3, 7);
    expect(scan(Buffer.concat([whole, Buffer.alloc(1000)]))).toEqual({
      next: 4, lastAtMs: 7, goodBytes: whole.length, size: whole.length + 1000, trailingZeros: 1000, bytesAfter: whole.length,
    });
  });

  it('judges a last commit whose write stopped part way as torn, one complete but altered as damaged', () => {
    const whole = commitFrame(1, 1);
    const last = commitFrame(2, 4);
    const stopped = Buffer.concat([whole, last.subarray(0, 40), Buffer.alloc(last.length - 40)]);
    expect(scan(stopped).tail).toMatchObject({ kind: 'torn', offset: whole.length, entries: 1, highest: 2 });
    const altered = Buffer.from(last);
    altered[8 + 5]! ^= 0x01;
    expect(scan(Buffer.concat([whole, altered])).tail).toMatchObject({ kind: 'damaged', offset: whole.length, reason: 'crc mismatch' });
  });

  it('refuses damage in a segment other than the last, and damage with an intact commit after it', () => {
    const first = commitFrame(1, 1);
    first[8 + 3]! ^= 0x01;
    expect(() => scan(Buffer.concat([first, commitFrame(2, 2)]), false)).toThrow(/at offset 0: crc mismatch/);
    expect(() => scan(Buffer.concat([first, commitFrame(2, 2)]))).toThrow(/an intact commit follows at offset/);
  });
});
