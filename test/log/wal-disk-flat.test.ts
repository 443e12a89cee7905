// Goal: under a long write load with a snapshot now and then, the WAL's data dir stays under a bound
// that does not grow with the number of writes: segments behind the fallback snapshot are deleted and
// only two snapshots are kept. A WAL that kept old segments (or snapshots) fails the bound.
import { readdir, stat } from 'node:fs/promises';
import { join } from 'node:path';
import { describe, expect, it } from 'vitest';
import { proposals, WalFixture } from './wal-fixture.ts';

const KiB = 1024;
const MiB = 1024 * KiB;

/** Total bytes of the regular files under `dir`, recursively. */
async function diskBytes(dir: string): Promise<number> {
  let total = 0;
  for (const entry of await readdir(dir, { withFileTypes: true })) {
    const path = join(dir, entry.name);
    total += entry.isDirectory() ? await diskBytes(path) : (await stat(path)).size;
  }
  return total;
}

describe('WalLog disk use under a long write load', () => {
  const fx = WalFixture.use();
  const writes = Number(process.env.ROSTER_WAL_FLAT_WRITES ?? 1_000_000);
  const perCommit = 1000;
  const snapshotEvery = 20_000;
  const segmentBytesMax = 256 * KiB;

  it(`stays flat over ${writes} writes with a snapshot every ${snapshotEvery}`, async () => {
    const log = await fx.opened({ segmentBytesMax });
    // State of a fixed size, as a registry with a steady key count would snapshot.
    const state = 'x'.repeat(64 * KiB);
    const samples: { writes: number; bytes: number }[] = [];
    for (let done = 0; done < writes; done += perCommit) {
      await log.append(proposals(done + 1, perCommit));
      if ((done + perCommit) % snapshotEvery !== 0) continue;
      await log.saveSnapshot({ index: log.lastIndex(), data: { state } });
      samples.push({ writes: done + perCommit, bytes: await diskBytes(fx.dir) });
    }
    const written = await diskBytes(fx.dir);
    expect(log.lastIndex()).toBe(writes);
    // What one snapshot interval writes to the log, measured on the first interval.
    const status = log.status();
    expect(status.firstIndex).toBeGreaterThan(writes - 3 * snapshotEvery);
    // Kept: the log from the fallback snapshot on (two intervals), the current segment preallocated,
    // a partly used segment on each side, and two snapshots.
    const interval = samples[0]!.bytes;
    const bound = 3 * interval + 2 * segmentBytesMax + 2 * MiB;
    for (const s of samples) expect(s.bytes, `after ${s.writes} writes`).toBeLessThan(bound);
    // Flat: the last quarter's largest use is no larger than the second quarter's (plus a segment).
    const quarter = Math.floor(samples.length / 4);
    const peak = (part: typeof samples): number => Math.max(...part.map((s) => s.bytes));
    expect(peak(samples.slice(-quarter))).toBeLessThanOrEqual(peak(samples.slice(quarter, 2 * quarter)) + segmentBytesMax);
    expect(written).toBeLessThan(bound);
    // The load itself is many times the bound, so keeping old segments could not pass.
    expect(interval * samples.length).toBeGreaterThan(4 * bound);
    console.log(`wal disk-flat: ${writes} writes, data dir ${samples.map((s) => Math.round(s.bytes / KiB)).join(' ')} KiB after each snapshot`);
  }, 300_000);
});
