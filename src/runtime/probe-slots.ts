/**
 * The slots of this agent's probes. Every probe holds a socket or a process while it runs, up to its timeout
 * (a check's Timeout has no cap, as in Consul): without a bound, enough checks against targets that never
 * answer would take every file descriptor the agent has, and with them its HTTP port and its log. So at most
 * `max` probes (limits.check_probes_max) run at once, each in a slot.
 *
 * A slot bounds descriptors, not time: a probe that its target keeps waiting must not keep the other checks
 * from being probed. When every slot is taken, a probe due to start takes back the slot of the probe that
 * has held its own longest, once that one has held it for reclaimAfterMs: that probe is stopped (its check
 * reads critical, saying why) and the new one starts at once. Younger probes are not stopped, so a burst of
 * due probes waits its turn, first come first served, for a slot to be freed or to become one to take back.
 *
 * A probe whose previous one (of the same check) had its slot taken back is a slow target's: it waits behind
 * the others and may take back only the slot of another slow target's probe, and the others take a slow
 * target's slot before any other. So checks against targets that never answer share out the slots among
 * themselves, and the other checks' probes start within about reclaimAfterMs whatever their number.
 */
import { intervalMs, type Clock, type TimerHandle } from '../ports/clock.ts';

/** How long a probe holds its slot before another probe, finding all taken, may take it back (see above). */
export const probeSlotReclaimAfterMs = 2000;

/** How a probe given to ProbeSlots.run ended: with its own result, stopped as its slot was taken back, or by the caller's abort first. */
export type SlotOutcome<T> = { ended: 'done'; value: T } | { ended: 'reclaimed' } | { ended: 'aborted' };

interface Holder {
  /** When it took its slot (interval clock). */
  sinceMs: number;
  slowTarget: boolean;
  /** Stops its probe: the slot is already someone else's. */
  reclaim: () => void;
}

interface Waiter {
  slowTarget: boolean;
  grant: (holder: Holder) => void;
}

export class ProbeSlots {
  /** The probes holding a slot, oldest first (a Set keeps the order they were added in). */
  private readonly holders = new Set<Holder>();
  /** Probes waiting for a slot: others', and slow targets' behind them. */
  private readonly waiting: Waiter[] = [];
  private readonly waitingSlow: Waiter[] = [];
  private timer: { handle: TimerHandle; atMs: number } | undefined;

  constructor(private max: number, private readonly clock: Clock, private readonly reclaimAfterMs = probeSlotReclaimAfterMs) {}

  /** Probes running now, and probes waiting for a slot. */
  get counts(): { running: number; waiting: number } {
    return { running: this.holders.size, waiting: this.waiting.length + this.waitingSlow.length };
  }

  /** The bound now in force. */
  get slots(): number {
    return this.max;
  }

  /** A new bound (limits.check_probes_max on reload): raising it starts waiting probes at once. */
  setMax(max: number): void {
    this.max = max;
    this.wake();
  }

  /**
   * Runs `work` in a slot: waits for one, then holds it until `work` settles, the slot is taken back or `signal`
   * aborts, whichever comes first; `work`'s signal aborts in the last two cases, and the slot is free at once
   * whatever the work goes on doing. `slowTarget`: this check's previous probe had its slot taken back. Rejects
   * as `work` does.
   */
  async run<T>(signal: AbortSignal, slowTarget: boolean, work: (signal: AbortSignal) => Promise<T>): Promise<SlotOutcome<T>> {
    const holder = await this.acquire(signal, slowTarget);
    if (holder === undefined) return { ended: 'aborted' };
    const stop = new AbortController();
    let cut: (outcome: SlotOutcome<T>) => void = () => {};
    const stopped = new Promise<SlotOutcome<T>>((resolve) => { cut = resolve; });
    const onAbort = () => { cut({ ended: 'aborted' }); stop.abort(); };
    holder.reclaim = () => { cut({ ended: 'reclaimed' }); stop.abort(); };
    if (signal.aborted) onAbort();
    else signal.addEventListener('abort', onAbort, { once: true });
    try {
      return await Promise.race([work(stop.signal).then((value): SlotOutcome<T> => ({ ended: 'done', value })), stopped]);
    } finally {
      signal.removeEventListener('abort', onAbort);
      this.release(holder);
    }
  }

  /** Resolves with this caller's slot, or undefined when `signal` aborts first. */
  private acquire(signal: AbortSignal, slowTarget: boolean): Promise<Holder | undefined> {
    if (signal.aborted) return Promise.resolve(undefined);
    const queue = slowTarget ? this.waitingSlow : this.waiting;
    // No probe goes before those waiting ahead of it (a slow target's before none).
    const first = this.waiting.length === 0 && (!slowTarget || this.waitingSlow.length === 0);
    if (first && this.free(slowTarget)) return Promise.resolve(this.hold(slowTarget));
    return new Promise((resolve) => {
      const waiter: Waiter = {
        slowTarget,
        grant: (holder) => {
          signal.removeEventListener('abort', abort);
          resolve(holder);
        },
      };
      const abort = () => {
        const at = queue.indexOf(waiter);
        if (at >= 0) queue.splice(at, 1);
        resolve(undefined);
      };
      queue.push(waiter);
      signal.addEventListener('abort', abort, { once: true });
      this.wake();
    });
  }

  /** Whether a slot is free for such a probe, taking one back if need be. */
  private free(slowTarget: boolean): boolean {
    if (this.holders.size < this.max) return true;
    const holder = this.reclaimable(slowTarget);
    if (holder === undefined) return false;
    this.holders.delete(holder);
    holder.reclaim();
    return true;
  }

  /** The holder whose slot such a probe may take back now: a slow target's first, oldest first. */
  private reclaimable(slowTarget: boolean): Holder | undefined {
    const before = intervalMs(this.clock) - this.reclaimAfterMs;
    let oldest: Holder | undefined;
    for (const holder of this.holders) {
      if (holder.sinceMs > before) break;
      if (holder.slowTarget) return holder;
      oldest ??= holder;
    }
    return slowTarget ? undefined : oldest;
  }

  private hold(slowTarget: boolean): Holder {
    const holder: Holder = { sinceMs: intervalMs(this.clock), slowTarget, reclaim: () => {} };
    this.holders.add(holder);
    return holder;
  }

  private release(holder: Holder): void {
    if (this.holders.delete(holder)) this.wake();
  }

  /** Gives slots to waiting probes, in order, while there are; then waits for the next slot that may be taken back. */
  private wake(): void {
    for (;;) {
      const queue = this.waiting.length > 0 ? this.waiting : this.waitingSlow;
      const next = queue[0];
      if (next === undefined || !this.free(next.slowTarget)) break;
      queue.shift();
      next.grant(this.hold(next.slowTarget));
    }
    this.armTimer();
  }

  /** A timer for when the oldest slot a waiting probe may take back has been held reclaimAfterMs; none without one. */
  private armTimer(): void {
    const next = this.waiting[0] ?? this.waitingSlow[0];
    let atMs: number | undefined;
    if (next !== undefined) {
      for (const holder of this.holders) {
        if (next.slowTarget && !holder.slowTarget) continue;
        atMs = holder.sinceMs + this.reclaimAfterMs;
        break;
      }
    }
    if (this.timer !== undefined && this.timer.atMs === atMs) return;
    if (this.timer !== undefined) this.clock.clearTimer(this.timer.handle);
    this.timer = undefined;
    if (atMs === undefined) return;
    const handle = this.clock.setTimer(Math.max(0, atMs - intervalMs(this.clock)), () => {
      this.timer = undefined;
      this.wake();
    });
    this.timer = { handle, atMs };
  }
}
