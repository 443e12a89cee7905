// Goal: the ring of recent changes that stream subscribers resume from: what an entry's effects record,
// the entry times it answers, and the changes after an index, also once the ring has wrapped around or
// dropped changes by age.
import { describe, expect, it } from 'vitest';
import { ChangeLog } from '../../src/runtime/changes.ts';

const kv = (key: string) => ({ t: 'kv' as const, key });

describe('ChangeLog', () => {
  it('records only what a stream can show, each kind in its own list', () => {
    const log = new ChangeLog();
    const seen: unknown[] = [];
    log.subscribe((c) => seen.push(c));
    log.record(1, 100, [{ t: 'ttl.cancel', id: 's' }, { t: 'sessions' }]);
    log.record(2, 110, [kv('a'), { t: 'session', id: 's1' }, kv('b'), { t: 'check', node: 'n', checkId: 'c', serviceId: '' }]);
    log.record(3, 120, [{ t: 'service', node: 'n', serviceId: 'web' }, { t: 'node', node: 'n' }]);
    expect(seen).toEqual([
      { index: 2, atMs: 110, kv: ['a', 'b'], sessions: ['s1'], checks: [{ node: 'n', checkId: 'c', serviceId: '' }], services: [], nodes: [] },
      { index: 3, atMs: 120, kv: [], sessions: [], checks: [], services: [{ node: 'n', serviceId: 'web' }], nodes: ['n'] },
    ]);
    expect(log.since(0)?.map((c) => c.index)).toEqual([2, 3]);
  });

  it('answers entry times and the changes after an index once the ring has wrapped', () => {
    const log = new ChangeLog({ changesMax: 4 });
    for (let i = 1; i <= 10; i++) log.record(i * 2, i * 1000, [kv(`k${i}`)]);
    // Held: the changes at 14, 16, 18 and 20; everything up to 12 is gone.
    expect(log.floor).toBe(12);
    expect([12, 13, 14, 16, 19, 20, 21].map((i) => log.timeOf(i))).toEqual([undefined, undefined, 7000, 8000, undefined, 10_000, undefined]);
    expect(log.since(11)).toBeUndefined();
    expect(log.since(12)?.map((c) => c.index)).toEqual([14, 16, 18, 20]);
    expect(log.since(15)?.map((c) => c.index)).toEqual([16, 18, 20]);
    expect(log.since(18)?.map((c) => c.index)).toEqual([20]);
    expect(log.since(20)).toEqual([]);
  });

  it('drops changes older than the age bound and moves the floor past them', () => {
    const log = new ChangeLog({ ageMsMax: 1000 });
    log.record(1, 0, [kv('a')]);
    log.record(2, 500, [kv('b')]);
    log.record(3, 1600, [kv('c')]);
    expect(log.floor).toBe(2);
    expect(log.since(2)?.map((c) => c.index)).toEqual([3]);
    expect(log.timeOf(1)).toBeUndefined();
    expect(log.timeOf(3)).toBe(1600);
  });

  it('starts afresh at an index', () => {
    const log = new ChangeLog();
    log.record(1, 0, [kv('a')]);
    log.startAt(5);
    expect(log.since(4)).toBeUndefined();
    expect(log.since(5)).toEqual([]);
    expect(log.timeOf(1)).toBeUndefined();
  });
});

describe('ChangeLog item store', () => {
  const check = (i: number) => ({ t: 'check' as const, node: `n${i}`, checkId: `c${i}`, serviceId: i % 2 === 0 ? `s${i}` : '' });

  it('gives back every kind of item as recorded, after its store has grown several times', () => {
    const log = new ChangeLog({ changesMax: 50 });
    const seen: unknown[] = [];
    log.subscribe((c) => seen.push(c));
    for (let i = 1; i <= 120; i++) {
      log.record(i, i, [kv(`k${i}`), { t: 'session', id: `s${i}` }, check(i), { t: 'service', node: `n${i}`, serviceId: `w${i}` },
        { t: 'node', node: `n${i}` }, ...Array.from({ length: i % 40 }, (_, j) => kv(`k${i}/${j}`))]);
    }
    // The last 50 changes are held, each exactly as its listener saw it when it was recorded.
    expect(log.floor).toBe(70);
    expect(log.since(70)).toEqual(seen.slice(70));
    expect(log.since(100)).toEqual(seen.slice(100));
  });

  it('shrinks its item store again once the large changes are gone, and still gives back what it holds', () => {
    const log = new ChangeLog({ changesMax: 50 });
    const seen: unknown[] = [];
    log.subscribe((c) => seen.push(c));
    for (let i = 1; i <= 50; i++) log.record(i, i, Array.from({ length: 200 }, (_, j) => kv(`t${i}/${j}`)));
    const grown = log.itemSlots;
    expect(grown).toBeGreaterThanOrEqual(50 * 200);
    for (let i = 51; i <= 200; i++) log.record(i, i, [kv(`k${i}`), { t: 'session', id: `s${i}` }]);
    expect(log.itemSlots).toBeLessThan(grown / 8);
    expect(log.since(150)).toEqual(seen.slice(150));
  });

  it('holds a change with more items than the flat store takes as it is, and drops it in turn', () => {
    const log = new ChangeLog({ changesMax: 3 });
    const many = Array.from({ length: 1000 }, (_, j) => kv(`big/${j}`));
    log.record(1, 1, [kv('a')]);
    log.record(2, 2, many);
    log.record(3, 3, [kv('b')]);
    expect(log.since(0)!.map((c) => c.kv.length)).toEqual([1, 1000, 1]);
    expect(log.since(1)![0]!.kv[999]).toBe('big/999');
    log.record(4, 4, [kv('c')]);
    log.record(5, 5, [kv('d')]);
    expect(log.floor).toBe(2);
    expect(log.since(2)!.map((c) => c.kv)).toEqual([['b'], ['c'], ['d']]);
  });
});
