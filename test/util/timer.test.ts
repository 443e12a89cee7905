// Goal: setLongTimeout, setLongInterval, sleepMs and the SystemClock wait out delays past Node's 32-bit timer limit in full (Node itself
// takes such a delay as 1 ms), and clearing stops them at any step. Fake timers stand in for weeks.
import { afterEach, beforeEach, expect, test, vi } from 'vitest';
import { SystemClock } from '../../src/ports/clock.ts';
import { setLongInterval, setLongTimeout, sleepMs, timerStepMsMax } from '../../src/util/timer.ts';

beforeEach(() => { vi.useFakeTimers(); });
afterEach(() => { vi.useRealTimers(); });

const day = 24 * 60 * 60 * 1000;

test('a 30-day delay fires after 30 days, not before', () => {
  const fn = vi.fn();
  setLongTimeout(fn, 30 * day);
  vi.advanceTimersByTime(1);
  expect(fn).not.toHaveBeenCalled();
  vi.advanceTimersByTime(timerStepMsMax);
  expect(fn).not.toHaveBeenCalled();
  vi.advanceTimersByTime(30 * day - timerStepMsMax - 2);
  expect(fn).not.toHaveBeenCalled();
  vi.advanceTimersByTime(1);
  expect(fn).toHaveBeenCalledTimes(1);
});

test('short, zero and negative delays behave like setTimeout', () => {
  const calls: string[] = [];
  setLongTimeout(() => calls.push('10'), 10);
  setLongTimeout(() => calls.push('0'), 0);
  setLongTimeout(() => calls.push('-5'), -5);
  vi.advanceTimersByTime(9);
  expect(calls.sort()).toEqual(['-5', '0']);
  vi.advanceTimersByTime(1);
  expect(calls).toContain('10');
});

test('clear stops a long delay after its first step', () => {
  const fn = vi.fn();
  const t = setLongTimeout(fn, 100 * day);
  vi.advanceTimersByTime(timerStepMsMax + 5);
  t.clear();
  vi.advanceTimersByTime(200 * day);
  expect(fn).not.toHaveBeenCalled();
});

test('SystemClock.setTimer waits a 720h TTL in full and clearTimer cancels it', () => {
  const clock = new SystemClock();
  const fired = vi.fn();
  const cancelled = vi.fn();
  clock.setTimer(720 * 60 * 60 * 1000, fired);
  const h = clock.setTimer(720 * 60 * 60 * 1000, cancelled);
  vi.advanceTimersByTime(720 * 60 * 60 * 1000 - 1);
  expect(fired).not.toHaveBeenCalled();
  clock.clearTimer(h);
  vi.advanceTimersByTime(1);
  expect(fired).toHaveBeenCalledTimes(1);
  expect(cancelled).not.toHaveBeenCalled();
});

test('setLongInterval repeats a 30-day period in full each time, and clear stops it', () => {
  const fn = vi.fn();
  const t = setLongInterval(fn, 30 * day);
  vi.advanceTimersByTime(30 * day - 1);
  expect(fn).not.toHaveBeenCalled();
  vi.advanceTimersByTime(1);
  expect(fn).toHaveBeenCalledTimes(1);
  vi.advanceTimersByTime(30 * day - 1);
  expect(fn).toHaveBeenCalledTimes(1);
  vi.advanceTimersByTime(1);
  expect(fn).toHaveBeenCalledTimes(2);
  t.clear();
  vi.advanceTimersByTime(100 * day);
  expect(fn).toHaveBeenCalledTimes(2);
});

test('sleepMs resolves after a delay past the 32-bit limit, not after 1 ms', async () => {
  let done = false;
  void sleepMs(30 * day).then(() => { done = true; });
  await vi.advanceTimersByTimeAsync(timerStepMsMax + 1);
  expect(done).toBe(false);
  await vi.advanceTimersByTimeAsync(30 * day);
  expect(done).toBe(true);
});
