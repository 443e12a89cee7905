/**
 * About the log's time now, for deciding when to propose something apply judges on entry time (the end of
 * a lock delay, a critical service's deregistration). It is the wall clock, or, while the wall clock is
 * behind the entries (set back: see EntryClock), the last applied entry's time plus the interval clock's
 * time since this estimate first saw that entry. It may run ahead of the log's own time (which goes at
 * half speed while it waits for the wall clock): apply still decides, and a refusal is proposed again.
 */
import type { Clock } from '../ports/clock.ts';
import type { RegistryState } from '../state/index.ts';

export class EntryTimeEstimate {
  private seen = { atMs: 0, monotonicMs: 0 };

  constructor(private readonly clock: Clock, private readonly state: () => RegistryState) {}

  nowMs(): number {
    const wall = this.clock.nowMs();
    const mono = this.clock.monotonicMs?.();
    const atMs = this.state().atMs;
    if (mono === undefined) return Math.max(wall, atMs);
    if (atMs !== this.seen.atMs) this.seen = { atMs, monotonicMs: mono };
    return Math.max(wall, atMs + (mono - this.seen.monotonicMs));
  }
}
