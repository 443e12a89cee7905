// Goal: the judgement of whether a node can use a shared log (src/log/reach.ts) — unreachable after a
// silence of unreachableAfterMs, not a millisecond earlier; reachable again only after answers for
// backAfterMs with no such silence among them, so a link that keeps failing stays out; a short gap
// neither cuts nor breaks a run of answers.
import { describe, expect, test } from 'vitest';
import { LogReach } from '../../src/log/index.ts';

const bounds = { unreachableAfterMs: 10_000, backAfterMs: 20_000 };

/** A log that answered at `t0` and every `everyMs` up to (not including) `untilMs`; judged at each answer. */
function answersFrom(reach: LogReach, t0: number, untilMs: number, everyMs: number): (boolean | undefined)[] {
  const changes: (boolean | undefined)[] = [];
  for (let t = t0; t < untilMs; t += everyMs) {
    reach.answered(t);
    changes.push(reach.look(t));
  }
  return changes.filter((c) => c !== undefined);
}

describe('LogReach', () => {
  test('reachable at start; unreachable after a silence of unreachableAfterMs, not before; told once', () => {
    const reach = new LogReach(bounds, 0);
    expect(reach.isReachable).toBe(true);
    expect(reach.look(9_999)).toBeUndefined();
    expect(reach.look(10_000)).toBe(false);
    expect(reach.isReachable).toBe(false);
    expect(reach.look(30_000)).toBeUndefined();
  });

  test('answers every 2 s keep it reachable', () => {
    const reach = new LogReach(bounds, 0);
    expect(answersFrom(reach, 0, 120_000, 2_000)).toEqual([]);
    expect(reach.isReachable).toBe(true);
  });

  test('once unreachable, it is reachable again after backAfterMs of answers, not before', () => {
    const reach = new LogReach(bounds, 0);
    expect(reach.look(10_000)).toBe(false);
    reach.answered(15_000);
    expect(reach.look(15_000)).toBeUndefined();
    for (let t = 17_000; t < 35_000; t += 2_000) {
      reach.answered(t);
      expect(reach.look(t)).toBeUndefined();
    }
    reach.answered(35_000);
    expect(reach.look(34_999)).toBeUndefined();
    expect(reach.look(35_000)).toBe(true);
    expect(reach.isReachable).toBe(true);
  });

  test('a gap shorter than unreachableAfterMs does not break the run of answers', () => {
    const reach = new LogReach(bounds, 0);
    reach.look(10_000);
    for (const t of [11_000, 20_000, 29_000]) { // 9 s apart
      reach.answered(t);
      expect(reach.look(t)).toBeUndefined();
    }
    reach.answered(31_000);
    expect(reach.look(31_000)).toBe(true);
  });

  test('a link that answers for less than backAfterMs between silences never counts again', () => {
    const reach = new LogReach(bounds, 0);
    expect(reach.look(10_000)).toBe(false);
    const changes: (boolean | undefined)[] = [];
    // 15 s of answers, then 12 s of silence, over and over.
    for (let cycle = 0, t = 10_000; cycle < 10; cycle++) {
      changes.push(...answersFrom(reach, t, t + 15_000, 1_000));
      t += 27_000;
      changes.push(reach.look(t - 1));
    }
    expect(changes.filter((c) => c !== undefined)).toEqual([]);
    expect(reach.isReachable).toBe(false);
  });

  test('a silence during the run starts it again', () => {
    const reach = new LogReach(bounds, 0);
    reach.look(10_000);
    expect(answersFrom(reach, 11_000, 25_000, 1_000)).toEqual([]); // answers up to 24 s
    expect(reach.look(35_000)).toBeUndefined(); // 11 s silent: the run is over
    expect(answersFrom(reach, 36_000, 56_000, 2_000)).toEqual([]);
    reach.answered(56_000);
    expect(reach.look(56_000)).toBe(true);
  });
});
