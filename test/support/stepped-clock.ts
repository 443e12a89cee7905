/**
 * Clocks whose wall reading a test steps while their interval clock (monotonicMs) goes on untouched, as an
 * NTP step does: the manual clock of unit tests, and the system clock for code that runs on real timers.
 */
import { ManualClock, SystemClock } from '../../src/ports/clock.ts';

/** A ManualClock with an interval clock: `advance` moves both and runs the timers, `step` moves the wall clock alone. */
export class SteppedManualClock extends ManualClock {
  private offsetMs = 0;

  override nowMs(): number {
    return super.nowMs() + this.offsetMs;
  }

  monotonicMs(): number {
    return super.nowMs();
  }

  /** Sets the wall clock `ms` forward (negative: back); no timer fires. */
  step(ms: number): void {
    this.offsetMs += ms;
  }
}

/** The system clock, its wall reading moved by `step`; timers and monotonicMs stay real. */
export class SteppedSystemClock extends SystemClock {
  private offsetMs = 0;

  override nowMs(): number {
    return super.nowMs() + this.offsetMs;
  }

  step(ms: number): void {
    this.offsetMs += ms;
  }
}
