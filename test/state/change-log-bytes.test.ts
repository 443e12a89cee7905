// Goal: the ring of recent changes is bounded by the bytes of the names it holds as well as by its count:
// past the budget the oldest changes go and the floor moves past them (a resume from before it is refused),
// the newest change is held whatever its size, and what it counts goes down as changes are dropped.
import { describe, expect, it } from 'vitest';
import { ChangeLog } from '../../src/runtime/changes.ts';

const kv = (key: string) => ({ t: 'kv' as const, key });
/** One change of `n` keys of `chars` characters each (16 bytes counted per item besides its name). */
const keys = (tag: string, n: number, chars: number) => Array.from({ length: n }, (_, j) => kv(`${tag}/${j}/`.padEnd(chars, 'x')));

describe('ChangeLog byte budget', () => {
  it('drops the oldest changes past the budget and moves the floor past them', () => {
    const log = new ChangeLog({ bytesMax: 10_000 });
    // Each change: 4 keys of 984 characters, 4,000 bytes counted.
    for (let i = 1; i <= 6; i++) log.record(i, i, keys(`c${i}`, 4, 984));
    expect(log.bytes).toBe(8_000);
    expect(log.floor).toBe(4);
    expect(log.since(3)).toBeUndefined();
    expect(log.since(4)?.map((c) => c.index)).toEqual([5, 6]);
    expect(log.since(5)![0]!.kv).toEqual(keys('c6', 4, 984).map((e) => e.key));
  });

  it('holds the newest change whatever its size, and lets it go at the next one', () => {
    const log = new ChangeLog({ bytesMax: 1_000 });
    log.record(1, 1, [kv('a')]);
    log.record(2, 2, keys('big', 300, 100)); // held whole (over 256 items), 34,800 bytes alone
    expect(log.since(1)?.map((c) => c.kv.length)).toEqual([300]);
    expect(log.floor).toBe(1);
    log.record(3, 3, [kv('b')]);
    expect(log.since(2)?.map((c) => c.kv)).toEqual([['b']]);
    expect(log.bytes).toBe(17);
  });

  it('counts the names of every kind of item', () => {
    const log = new ChangeLog();
    log.record(1, 1, [
      kv('abc'), { t: 'session', id: 'sess' }, { t: 'check', node: 'n1', checkId: 'chk', serviceId: 'web' },
      { t: 'service', node: 'n1', serviceId: 'web' }, { t: 'node', node: 'n1' },
    ]);
    expect(log.bytes).toBe(5 * 16 + 3 + 4 + (2 + 3 + 3) + (2 + 3) + 2);
    log.startAt(5);
    expect(log.bytes).toBe(0);
  });

  it('keeps the count and item store bounds as before under many small changes', () => {
    const log = new ChangeLog({ changesMax: 100, bytesMax: 1_000_000 });
    for (let i = 1; i <= 1_000; i++) log.record(i, i, [kv(`k${i}`)]);
    expect(log.floor).toBe(900);
    expect(log.since(900)).toHaveLength(100);
    expect(log.bytes).toBe(100 * 16 + [...Array(100).keys()].reduce((n, j) => n + `k${901 + j}`.length, 0));
  });
});
