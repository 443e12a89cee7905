import { setLongTimeout, type LongTimer } from '../util/timer.ts';

/** Time is an input: the runtime and the logs read it only through this port. */
export interface Clock {
  /** Milliseconds since the epoch. */
  nowMs(): number;
  /**
   * Milliseconds from an arbitrary origin that never go back when the wall clock is set (the interval
   * clock). Absent, the logs stamp entries from nowMs alone (see EntryClock).
   */
  monotonicMs?(): number;
  /** Runs `fn` after `ms`; returns a handle for `clearTimer`. */
  setTimer(ms: number, fn: () => void): TimerHandle;
  clearTimer(handle: TimerHandle): void;
}

export interface TimerHandle { readonly id: number }

/**
 * The interval clock's reading, in ms from an arbitrary origin: `clock.monotonicMs()`, or `nowMs()` for a
 * clock without one (the manual clock of unit tests); without a clock, the process's own monotonic clock.
 * Local waits, windows and ages — a blocking query's deadline, a rate-limit window, how long a member has
 * been silent — are measured on it, so a wall clock set back or forward neither stretches nor cuts them.
 * Times that are stored, replicated or shown (entry times, timestamps, token expiries) stay on `nowMs`.
 */
export function intervalMs(clock?: Pick<Clock, 'nowMs' | 'monotonicMs'>): number {
  if (clock === undefined) return performance.now();
  return clock.monotonicMs?.() ?? clock.nowMs();
}

/**
 * The real clock. Timers are unref'd so a pending TTL timer never keeps a stopping process alive, and
 * delays beyond Node's 32-bit limit (check TTLs and intervals of weeks) are waited for in full.
 */
export class SystemClock implements Clock {
  private next = 1;

  nowMs(): number {
    return Date.now();
  }

  monotonicMs(): number {
    return performance.now();
  }

  /** The handle carries its timer: no table of timers that every wait would enter and leave (see SlotSet). */
  setTimer(ms: number, fn: () => void): TimerHandle {
    const handle: SystemTimerHandle = { id: this.next++, timer: undefined };
    handle.timer = setLongTimeout(() => {
      handle.timer = undefined;
      fn();
    }, ms);
    return handle;
  }

  clearTimer(handle: TimerHandle): void {
    const own = handle as SystemTimerHandle;
    own.timer?.clear();
    own.timer = undefined;
  }
}

interface SystemTimerHandle extends TimerHandle {
  /** Until it fires or is cleared. */
  timer: LongTimer | undefined;
}

/** Simulated clock for tests: time moves only when `advance` is called. */
export class ManualClock implements Clock {
  private now: number;
  private next = 1;
  private readonly timers = new Map<number, { at: number; fn: () => void }>();

  constructor(startMs = 1_700_000_000_000) {
    this.now = startMs;
  }

  nowMs(): number {
    return this.now;
  }

  setTimer(ms: number, fn: () => void): TimerHandle {
    const id = this.next++;
    this.timers.set(id, { at: this.now + Math.max(0, ms), fn });
    return { id };
  }

  clearTimer(handle: TimerHandle): void {
    this.timers.delete(handle.id);
  }

  /** Moves time forward, firing due timers in deadline order. */
  advance(ms: number): void {
    const target = this.now + ms;
    for (;;) {
      let dueId = -1;
      let dueAt = Infinity;
      for (const [id, t] of this.timers) {
        if (t.at <= target && t.at < dueAt) { dueAt = t.at; dueId = id; }
      }
      if (dueId < 0) break;
      const t = this.timers.get(dueId)!;
      this.timers.delete(dueId);
      this.now = Math.max(this.now, t.at);
      t.fn();
    }
    this.now = target;
  }
}
