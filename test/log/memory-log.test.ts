// Goal: the in-memory twin passes the shared log contract, with a "restart" being a new MemoryLog over the same store.
import { describe, expect, it } from 'vitest';
import { ManualClock, SystemClock } from '../../src/ports/clock.ts';
import { createMemoryLogStore, isLogOverloaded, MemoryLog } from '../../src/wal/index.ts';
import { logCompliance } from './compliance.ts';

logCompliance('MemoryLog', () => {
  const store = createMemoryLogStore();
  return {
    open: (clock, limits) => new MemoryLog({ clock: clock ?? new SystemClock(), store, ...limits }),
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

  it('bounds the queue at 65536 waiting entries by default, flagging the refusal with isLogOverloaded', async () => {
    const log = new MemoryLog({ clock: new ManualClock() });
    await log.open();
    const batch = (from: number, n: number) => Array.from({ length: n }, (_, k) => ({ pid: `p${from + k}`, cmd: { t: 'barrier' } as const }));
    const admitted = [log.append(batch(0, 40_000)), log.append(batch(40_000, 25_536))];
    const refused = log.append(batch(65_536, 1));
    await expect(refused).rejects.toSatisfy(isLogOverloaded);
    await Promise.all(admitted);
    expect(log.lastIndex()).toBe(65_536);
    expect(isLogOverloaded(new Error('other'))).toBe(false);
    expect(isLogOverloaded(undefined)).toBe(false);
  });

  it('refuses an append that one commit frame could not hold, as the WAL does', async () => {
    const log = new MemoryLog({ clock: new ManualClock() });
    await log.open();
    const big = 'x'.repeat(15 * 1024 * 1024);
    const proposals = Array.from({ length: 5 }, (_, k) => ({ pid: `big${k}`, cmd: { t: 'kv.set', key: 'k', value: big, flags: '0' } as const }));
    await expect(log.append(proposals)).rejects.toThrow(/commit limit/);
    expect(log.lastIndex()).toBe(0);
  });
});
