// Goal: the in-memory twin passes the shared log contract, with a "restart" being a new MemoryLog over the same store.
import { describe, expect, it } from 'vitest';
import { ManualClock, SystemClock } from '../../src/ports/clock.ts';
import { createMemoryLogStore, MemoryLog } from '../../src/wal/index.ts';
import { logCompliance } from './compliance.ts';

logCompliance('MemoryLog', () => {
  const store = createMemoryLogStore();
  return {
    open: (clock) => new MemoryLog({ clock: clock ?? new SystemClock(), store }),
    cleanup: async () => undefined,
  };
});

describe('MemoryLog specifics', () => {
  it('groups same-tick appends into one commit', async () => {
    const log = new MemoryLog({ clock: new ManualClock() });
    await log.open();
    await Promise.all(Array.from({ length: 50 }, (_, k) => log.append([{ pid: `p${k}`, cmd: { t: 'barrier' } }])));
    expect(log.stats.entries).toBe(50);
    expect(log.stats.commits).toBeLessThan(log.stats.entries);
  });

  it('compacts the store on snapshot but keeps the last entry', async () => {
    const store = createMemoryLogStore();
    const log = new MemoryLog({ clock: new ManualClock(), store });
    await log.open();
    await log.append(Array.from({ length: 5 }, (_, k) => ({ pid: `p${k}`, cmd: { t: 'barrier' } })));
    await log.saveSnapshot({ index: 5, data: 'state' });
    expect(store.entries.map((e) => e.index)).toEqual([5]);
    expect(store.snapshot).toEqual({ index: 5, data: 'state' });
  });
});
