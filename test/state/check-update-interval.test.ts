// Goal: the check owner's check_update_interval over the in-memory log and a simulated clock — a result that
// changes only the output is held back and written when its wait ends (the latest output then), while the agent's
// view of the check shows it at once; a status change, or a result that moves a threshold counter, is written at
// once and drops what was held back, so a held-back result never lands after a later one; 0 writes every change.
import { describe, expect, test } from 'vitest';
import type { CheckRegistration } from '../../src/domain/commands.ts';
import type { CheckStatus } from '../../src/domain/types.ts';
import { ManualClock } from '../../src/ports/clock.ts';
import { silentLogger } from '../../src/ports/logger.ts';
import { Runtime } from '../../src/runtime/index.ts';
import { passiveDefinition } from '../../src/state/index.ts';
import { createMemoryLogStore, MemoryLog } from '../../src/wal/index.ts';

const flush = async () => { for (let i = 0; i < 20; i++) await new Promise((r) => setImmediate(r)); };

/** A runtime whose check `c` (probed every second, the first probe after 0.5 s) answers the scripted results in turn. */
async function boot(updateIntervalMs: number, results: Array<[CheckStatus, string]>, failuresBeforeCritical = 0) {
  const clock = new ManualClock();
  let next = 0;
  const runtime = new Runtime({
    log: new MemoryLog({ clock, store: createMemoryLogStore() }), clock, logger: silentLogger, nodeName: 'n1', nodeId: 'id', address: '127.0.0.1',
    random: () => 0.5, checks: { updateIntervalMs },
    probeFor: () => async () => {
      const [status, output] = results[Math.min(next++, results.length - 1)]!;
      return { status, output };
    },
  });
  await runtime.start();
  const check: CheckRegistration = {
    checkId: 'c', name: 'c', notes: '', status: 'critical', output: '', serviceId: '', type: 'http',
    definition: { ...passiveDefinition, intervalMs: 1_000, interval: '1s', timeoutMs: 1_000, timeout: '1s', http: 'http://n1/health', failuresBeforeCritical, failuresBeforeWarning: failuresBeforeCritical },
  };
  expect((await runtime.propose({ t: 'check.register', node: 'n1', check })).ok).toBe(true);
  const stored = () => runtime.state.checkOf('n1', 'c')!;
  const shown = () => runtime.checkOwner.latest(stored());
  /** Moves the clock to `atMs` after registration, second by second; returns the stored outputs seen after each step. */
  let nowMs = 0;
  const runTo = async (atMs: number) => {
    const seen: string[] = [];
    while (nowMs < atMs) {
      const step = Math.min(atMs - nowMs, 500);
      clock.advance(step);
      nowMs += step;
      await flush();
      seen.push(stored().output);
    }
    return seen;
  };
  return { runtime, stored, shown, runTo };
}

describe('check_update_interval (CheckOwner)', () => {
  test('an output-only change waits for the interval; the agent view shows it meanwhile; the latest output is written', async () => {
    const a = await boot(10_000, [['passing', 'one'], ['passing', 'two'], ['passing', 'three'], ['passing', 'four']]);
    await a.runTo(500);
    expect([a.stored().status, a.stored().output]).toEqual(['passing', 'one']);
    const writtenAt = a.stored().modifyIndex;
    const seen = await a.runTo(2_500);
    expect(seen.every((o) => o === 'one')).toBe(true);
    expect(a.stored().modifyIndex).toBe(writtenAt);
    expect(a.shown().output).toBe('three');
    // Written 10 s after the first write (random 0.5: exactly the interval), with the output latest by then.
    expect((await a.runTo(10_000)).every((o) => o === 'one')).toBe(true);
    await a.runTo(10_500);
    expect([a.stored().status, a.stored().output]).toEqual(['passing', 'four']);
    expect(a.shown().output).toBe('four');
    await a.runtime.stop();
  });

  test('a result that moves only a counter keeps what is held back, which is never written after a later result', async () => {
    const a = await boot(10_000, [['passing', 'a'], ['passing', 'b'], ['critical', 'x'], ['passing', 'c'], ['passing', 'c']], 3);
    await a.runTo(500);
    expect(a.stored().output).toBe('a');
    await a.runTo(1_500);
    expect([a.stored().output, a.shown().output]).toEqual(['a', 'b']);
    // One failure of three: the counter moves (written at once, no output); 'b' stays the agent's latest output.
    await a.runTo(2_500);
    expect([a.stored().status, a.stored().failuresCounter, a.stored().output, a.shown().output]).toEqual(['passing', 1, 'a', 'b']);
    // The next success resets the counter: written at once with its output.
    await a.runTo(3_500);
    expect([a.stored().status, a.stored().output, a.stored().failuresCounter]).toEqual(['passing', 'c', 0]);
    const seen = await a.runTo(20_000);
    expect(seen.every((o) => o === 'c')).toBe(true);
    await a.runtime.stop();
  });

  test('a status change is written at once, with its output, however recent the last write', async () => {
    const a = await boot(10_000, [['passing', 'up'], ['passing', 'up 2'], ['warning', 'slow'], ['warning', 'slow 2']]);
    await a.runTo(1_500);
    expect([a.stored().status, a.stored().output, a.shown().output]).toEqual(['passing', 'up', 'up 2']);
    await a.runTo(2_500);
    expect([a.stored().status, a.stored().output]).toEqual(['warning', 'slow']);
    await a.runTo(3_500);
    expect([a.stored().output, a.shown().output]).toEqual(['slow', 'slow 2']);
    await a.runtime.stop();
  });

  test('a reload that shortens the interval shortens a wait under way; 0 writes the next result at once', async () => {
    const a = await boot(60_000, [['passing', 'r1'], ['passing', 'r2'], ['passing', 'r3'], ['passing', 'r4'], ['passing', 'r5'], ['passing', 'r6']]);
    await a.runTo(1_500);
    expect([a.stored().output, a.shown().output]).toEqual(['r1', 'r2']);
    // 60 s → 2 s: the wait, drawn at 1 × the interval, is now 2 s after the write at 0.5 s.
    a.runtime.checkOwner.updateIntervalMs = 2_000;
    await a.runTo(2_500);
    expect([a.stored().output, a.shown().output]).toEqual(['r3', 'r3']);
    await a.runTo(3_500);
    expect([a.stored().output, a.shown().output]).toEqual(['r3', 'r4']);
    a.runtime.checkOwner.updateIntervalMs = 0;
    await a.runTo(4_500);
    expect(a.stored().output).toBe('r5');
    await a.runtime.stop();
  });

  test('0 writes every output change as it comes', async () => {
    const a = await boot(0, [['passing', 'p1'], ['passing', 'p2'], ['passing', 'p3']]);
    expect(await a.runTo(2_500)).toEqual(['p1', 'p1', 'p2', 'p2', 'p3']);
    await a.runtime.stop();
  });
});
