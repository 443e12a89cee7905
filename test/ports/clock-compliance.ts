// Goal: one behavioural contract (src/ports/clock.ts) that every Clock passes: the system clock, the
// manual clock of unit tests and the simulation's drifting clock. Timers fire no earlier than asked on
// the clock's own reading, in deadline order, once; a cleared timer never fires.
import { describe, expect, it } from 'vitest';
import type { Clock } from '../../src/ports/clock.ts';

export interface ClockHarness {
  clock: Clock;
  /** Lets `ms` of the clock's time pass (or a little more), running the timers that come due. */
  advance(ms: number): Promise<void>;
}

export interface ClockFactory {
  create(): ClockHarness;
  /** Delays the tests use, ms: small for a real clock, anything for a simulated one. */
  unitMs: number;
}

export function clockCompliance(name: string, factory: ClockFactory): void {
  describe(`Clock compliance: ${name}`, () => {
    readingAndFiring(factory);
    clearingAndOrder(factory);
  });
}

function readingAndFiring(factory: ClockFactory): void {
  const u = factory.unitMs;
  it('reads milliseconds since the epoch and never goes back', async () => {
    const { clock, advance } = factory.create();
    const first = clock.nowMs();
    expect(Number.isFinite(first)).toBe(true);
    expect(first).toBeGreaterThan(1_600_000_000_000);
    await advance(u);
    const second = clock.nowMs();
    expect(second).toBeGreaterThanOrEqual(first + u - 1);
  });

  it('fires a timer once, no earlier than its delay on the clock itself', async () => {
    const { clock, advance } = factory.create();
    const setAt = clock.nowMs();
    const fired: number[] = [];
    clock.setTimer(2 * u, () => fired.push(clock.nowMs()));
    await advance(u);
    expect(fired).toEqual([]);
    await advance(2 * u);
    expect(fired).toHaveLength(1);
    expect(fired[0]! - setAt).toBeGreaterThanOrEqual(2 * u - 1);
    await advance(2 * u);
    expect(fired).toHaveLength(1);
  });

}

function clearingAndOrder(factory: ClockFactory): void {
  const u = factory.unitMs;
  it('never fires a cleared timer; clearing twice or after firing is harmless', async () => {
    const { clock, advance } = factory.create();
    const fired: string[] = [];
    const a = clock.setTimer(u, () => fired.push('a'));
    const b = clock.setTimer(u, () => fired.push('b'));
    clock.clearTimer(a);
    clock.clearTimer(a);
    await advance(2 * u);
    expect(fired).toEqual(['b']);
    clock.clearTimer(b);
  });

  it('fires timers in deadline order, whatever order they were set in', async () => {
    const { clock, advance } = factory.create();
    const fired: number[] = [];
    for (const k of [3, 1, 2]) clock.setTimer(k * u, () => fired.push(k));
    await advance(4 * u);
    expect(fired).toEqual([1, 2, 3]);
  });

  it('takes a zero or negative delay as "as soon as time moves"', async () => {
    const { clock, advance } = factory.create();
    const fired: string[] = [];
    clock.setTimer(0, () => fired.push('zero'));
    clock.setTimer(-5, () => fired.push('negative'));
    await advance(u);
    expect(fired.sort()).toEqual(['negative', 'zero']);
  });

  it('runs a timer set from inside another timer', async () => {
    const { clock, advance } = factory.create();
    const fired: string[] = [];
    clock.setTimer(u, () => {
      fired.push('outer');
      clock.setTimer(u, () => fired.push('inner'));
    });
    await advance(u);
    await advance(2 * u);
    expect(fired).toEqual(['outer', 'inner']);
  });

  it('gives each timer its own handle', () => {
    const { clock } = factory.create();
    const a = clock.setTimer(u, () => {});
    const b = clock.setTimer(u, () => {});
    expect(a.id).not.toBe(b.id);
    clock.clearTimer(a);
    clock.clearTimer(b);
  });
}
