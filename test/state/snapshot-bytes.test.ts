// Goal: the runtime snapshots by bytes written as well as by entries. Large values written and deleted on
// ever-new keys (a small state, few entries against snapshot_every) keep the embedded log's files within a
// few segments; snapshotting by entries alone kept every segment until 20,000 entries, gigabytes at the
// largest values. What stays is recovered whole on the next start.
import { mkdtempSync, readdirSync, rmSync, statSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterEach, expect, test } from 'vitest';
import { SystemClock } from '../../src/ports/clock.ts';
import { silentLogger } from '../../src/ports/logger.ts';
import { Runtime } from '../../src/runtime/index.ts';
import { WalLog } from '../../src/wal/index.ts';

const KiB = 1024;
const segmentBytesMax = 256 * KiB;
const dirs: string[] = [];
afterEach(() => { for (const d of dirs.splice(0)) rmSync(d, { recursive: true, force: true }); });

function dirBytes(dir: string): number {
  return readdirSync(dir, { withFileTypes: true }).reduce((sum, e) => sum + (e.isDirectory() ? dirBytes(join(dir, e.name)) : statSync(join(dir, e.name)).size), 0);
}

async function boot(dir: string): Promise<Runtime> {
  const clock = new SystemClock();
  const runtime = new Runtime({ log: new WalLog({ dir, clock, segmentBytesMax }), clock, logger: silentLogger, nodeName: 'n1', nodeId: 'id', address: '127.0.0.1' });
  await runtime.start();
  return runtime;
}

test('large values written and deleted: the log is compacted by its bytes, not only its entries; the state survives a restart', async () => {
  const dir = mkdtempSync(join(tmpdir(), 'roster-snapshot-bytes-'));
  dirs.push(dir);
  let runtime = await boot(dir);
  const value = Buffer.alloc(48 * KiB, 7).toString('base64');
  const rounds = 600;
  let most = 0;
  for (let i = 0; i < rounds; i++) {
    expect((await runtime.propose({ t: 'kv.set', key: `big/${i}`, value, flags: '0' })).ok).toBe(true);
    if (i % 10 !== 0) expect((await runtime.propose({ t: 'kv.delete', key: `big/${i}` })).ok).toBe(true);
    if (i % 25 === 0) most = Math.max(most, dirBytes(join(dir, 'wal')));
  }
  // About 37 MiB went through the log. A snapshot is due every two segments (512 KiB) or, while one is being
  // saved, as soon as it is done; a segment goes once two snapshots lie past it: the log's files stay within
  // what a few snapshots' time of writes take (a few MiB here, where writes are as fast as snapshots).
  const written = rounds * 64 * KiB;
  // Besides: the zeros the current segment keeps ahead of its commits (1 MiB, four of these small segments).
  expect(most).toBeLessThan(written / 3 + 1024 * KiB);
  await runtime.stop();
  runtime = await boot(dir);
  const kept = [...runtime.state.kv.keys()].filter((k) => k.startsWith('big/')).sort();
  expect(kept).toEqual(Array.from({ length: rounds / 10 }, (_, j) => `big/${j * 10}`).sort());
  expect(runtime.state.kv.get('big/290')?.value).toBe(value);
  await runtime.stop();
}, 120_000);
