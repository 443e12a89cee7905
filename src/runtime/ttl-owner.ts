/**
 * The owner actor of session TTLs: one timer per session with a TTL, fired 2 × TTL after the entry
 * that (re)started it. When a timer fires it only *proposes* an expiry conditional on the renew it saw,
 * so a late or duplicated timer applies as a no-op.
 */
import { sessionTtlMultiplier } from '../domain/limits.ts';
import type { Clock, TimerHandle } from '../ports/clock.ts';

export type ProposeExpire = (id: string, renewIndex: number) => void;

export class TtlOwner {
  private readonly timers = new Map<string, TimerHandle>();

  constructor(private readonly clock: Clock, private readonly proposeExpire: ProposeExpire) {}

  get size(): number {
    return this.timers.size;
  }

  /** (Re)starts the session's timer for the full 2 × TTL from now. */
  arm(id: string, renewIndex: number, ttlMs: number): void {
    this.cancel(id);
    const handle = this.clock.setTimer(ttlMs * sessionTtlMultiplier, () => {
      this.timers.delete(id);
      this.proposeExpire(id, renewIndex);
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

  stop(): void {
    for (const handle of this.timers.values()) this.clock.clearTimer(handle);
    this.timers.clear();
  }
}
