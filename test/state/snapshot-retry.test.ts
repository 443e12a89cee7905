// Goal: a node whose log refuses snapshots for a while asks again after a pause that doubles with each
// failure in a row (1 s, 2 s, 4 s … up to a minute), not at every applied entry, and logs one warning per
// attempt; once a save succeeds, snapshots follow the entry count again.
import { expect, test } from 'vitest';
import { ManualClock } from '../../src/ports/clock.ts';
import { silentLogger } from '../../src/ports/logger.ts';
import type { Snapshot } from '../../src/ports/log.ts';
import { Runtime } from '../../src/runtime/index.ts';
import { retryPauseMs } from '../../src/runtime/snapshots.ts';
import { createMemoryLogStore, MemoryLog } from '../../src/wal/index.ts';

const flush = async () => { for (let i = 0; i < 20; i++) await new Promise((r) => setImmediate(r)); };

class FlakySnapshots extends MemoryLog {
  failing = true;
  attempts = 0;
  saved = 0;
  override async saveSnapshot(s: Snapshot): Promise<void> {
    this.attempts += 1;
    if (this.failing) throw new Error('the store is unreachable');
    await super.saveSnapshot(s);
    this.saved += 1;
  }
}

test('failed snapshots are retried after a doubling pause, with one warning per attempt', async () => {
  const clock = new ManualClock();
  const log = new FlakySnapshots({ clock, store: createMemoryLogStore() });
  const warnings: unknown[] = [];
  const logger = { ...silentLogger, warn: (o: unknown) => void warnings.push(o) };
  const runtime = new Runtime({ log, clock, logger, nodeName: 'n1', nodeId: 'id', address: '127.0.0.1', snapshotEveryEntries: 2 });
  await runtime.start();
  let k = 0;
  const write = async (n: number) => {
    for (let i = 0; i < n; i++) await runtime.propose({ t: 'kv.set', key: 'hot', value: `v${k++}`, flags: '0' });
    await flush();
  };

  await write(20);
  expect(log.attempts).toBe(1);
  expect(warnings).toHaveLength(1);
  expect(warnings[0]).toMatchObject({ failuresInARow: 1, retryInMs: retryPauseMs.first });

  clock.advance(retryPauseMs.first - 1);
  await write(20);
  expect(log.attempts).toBe(1);
  clock.advance(1);
  await write(20);
  expect(log.attempts).toBe(2);
  expect(warnings[1]).toMatchObject({ failuresInARow: 2, retryInMs: 2 * retryPauseMs.first });

  // The pause doubles up to its most.
  for (let n = 3; n <= 10; n++) {
    clock.advance(retryPauseMs.max);
    await write(4);
    expect(log.attempts).toBe(n);
  }
  expect(warnings.at(-1)).toMatchObject({ failuresInARow: 10, retryInMs: retryPauseMs.max });
  expect(warnings).toHaveLength(10);

  // Saved again: back to a snapshot every few entries, with no pause.
  log.failing = false;
  clock.advance(retryPauseMs.max);
  await write(1);
  expect(log.saved).toBe(1);
  await write(4);
  expect(log.saved).toBeGreaterThanOrEqual(2);
  expect(warnings).toHaveLength(10);
  await runtime.stop();
});
