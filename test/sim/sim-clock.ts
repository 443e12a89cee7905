/**
 * A node's clock in the simulation: its hardware clock reads `base + offset + t × (1 + drift)` at true
 * time t (ms since the run began), floored to whole ms, so it never goes back and runs fast or slow by
 * `drift`. Timers are events at the true instant the node's clock reaches their deadline; they belong
 * to one incarnation of the node (a crash drops them) and a paused node runs them late, on resume —
 * what a SIGSTOPped process does with its timers.
 */
import type { Clock, TimerHandle } from '../../src/ports/clock.ts';
import type { Scheduler } from './scheduler.ts';

/** Epoch of true time 0, so clocks read plausible wall-clock values. */
export const simEpochMs = 1_700_000_000_000;

export interface Hardware {
  /** Rate error: +0.02 runs 2 % fast. */
  drift: number;
  /** Constant offset from true time, ms. */
  offsetMs: number;
}

export function localAt(hw: Hardware, trueMs: number): number {
  return Math.floor(simEpochMs + hw.offsetMs + trueMs * (1 + hw.drift));
}

/** The first true instant at which the clock reads at least `localMs`. */
export function trueWhen(hw: Hardware, localMs: number): number {
  let t = Math.max(0, Math.ceil((localMs - simEpochMs - hw.offsetMs) / (1 + hw.drift)));
  while (localAt(hw, t) < localMs) t++;
  return t;
}

export class SimClock implements Clock {
  private next = 1;
  private readonly live = new Set<number>();

  constructor(
    private readonly sched: Scheduler,
    private readonly hw: Hardware,
    private readonly node: string,
    private readonly inc: number,
  ) {}

  nowMs(): number {
    return localAt(this.hw, this.sched.now);
  }

  /** The interval clock: the same oscillator (its drift), without the wall clock's offset. */
  monotonicMs(): number {
    return this.sched.now * (1 + this.hw.drift);
  }

  setTimer(ms: number, fn: () => void): TimerHandle {
    const id = this.next++;
    const deadline = this.nowMs() + Math.max(0, Math.ceil(ms));
    this.live.add(id);
    this.sched.at(trueWhen(this.hw, deadline), `timer ${this.node}`, () => {
      if (!this.live.delete(id)) return;
      fn();
    }, this.node, this.inc);
    return { id };
  }

  clearTimer(handle: TimerHandle): void {
    this.live.delete(handle.id);
  }
}
