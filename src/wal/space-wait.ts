/**
 * The pieces of waiting out a full disk that do not touch files: the retry on a timer (one scheduled
 * or running at a time) and the listeners told when the log stops or starts again storing appends.
 */
import type { Clock, TimerHandle } from '../ports/clock.ts';

/** Runs `run` once `delayMs` after schedule(); a schedule() while one is pending does nothing. */
export class RetryTimer {
  private timer: TimerHandle | undefined;
  private running: Promise<void> | undefined;

  constructor(private readonly clock: Clock, private readonly delayMs: number, private readonly run: () => Promise<void>) {}

  /** `delayMs`: this once, another delay than the timer's own (0: on the next turn of the clock). */
  schedule(delayMs = this.delayMs): void {
    if (this.timer !== undefined) return;
    this.timer = this.clock.setTimer(delayMs, () => {
      this.timer = undefined;
      this.running = this.run().finally(() => { this.running = undefined; });
    });
  }

  /** Cancels a pending retry and waits for a running one. */
  async stop(): Promise<void> {
    if (this.timer !== undefined) this.clock.clearTimer(this.timer);
    this.timer = undefined;
    await this.running;
  }
}
