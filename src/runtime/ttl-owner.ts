/**
 * The owner actor of session TTLs: one timer per session with a TTL, fired 2 × TTL after the entry
 * that (re)started it. When a timer fires it only *proposes* an expiry conditional on the renew it saw,
 * so a late or duplicated timer applies as a no-op.
 */
import { sessionTtlMultiplier } from '../domain/limits.ts';
import type { Clock, TimerHandle } from '../ports/clock.ts';

/**
 * Proposes the conditional expiry. Resolves undefined when done (applied, or made moot by a renew or an
 * invalidation), or with how long to wait before proposing it again: the log refused the proposal
 * (overloaded, failing disk), or the entry's time was still short of the TTL (clocks apart, see runtime.ts).
 */
export type ProposeExpire = (id: string, renewIndex: number) => Promise<number | undefined>;

/** Wait before proposing an expiry again when the log refused the proposal, and the least wait for any retry. */
export const expiryRetryMs = 1_000;

export class TtlOwner {
  private readonly timers = new Map<string, TimerHandle>();

  constructor(private readonly clock: Clock, private readonly proposeExpire: ProposeExpire) {}

  get size(): number {
    return this.timers.size;
  }

  has(id: string): boolean {
    return this.timers.has(id);
  }

  /** (Re)starts the session's timer for the full 2 × TTL from now. */
  arm(id: string, renewIndex: number, ttlMs: number): void {
    this.schedule(id, renewIndex, ttlMs * sessionTtlMultiplier);
  }

  /** An expiry that did not take is tried again until it does or the session is renewed (which re-arms). */
  private schedule(id: string, renewIndex: number, delayMs: number): void {
    this.cancel(id);
    const handle = this.clock.setTimer(delayMs, () => {
      this.timers.delete(id);
      void this.proposeExpire(id, renewIndex).then((againInMs) => {
        if (againInMs !== undefined && !this.stopped && !this.timers.has(id)) this.schedule(id, renewIndex, Math.max(expiryRetryMs, againInMs));
      });
    });
    this.timers.set(id, handle);
  }

  cancel(id: string): void {
    const handle = this.timers.get(id);
    if (handle !== undefined) {
      this.clock.clearTimer(handle);
      this.timers.delete(id);
    }
  }

  private stopped = false;

  stop(): void {
    this.stopped = true;
    for (const handle of this.timers.values()) this.clock.clearTimer(handle);
    this.timers.clear();
  }
}
