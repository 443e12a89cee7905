/**
 * How many of this agent's probes run at once. Each check runs one probe at a time, but every probe
 * holds a socket or a process while it runs, up to its timeout: without a bound, enough checks against
 * targets that never answer would take every file descriptor the agent has, and with them its HTTP port
 * and its log. Past the bound a probe waits its turn, first come first served, and its check is probed
 * later than its interval says.
 */
export class ProbeSlots {
  private running = 0;
  private readonly waiting: Array<() => void> = [];

  constructor(private max: number) {}

  /** Probes running now, and probes waiting for a slot. */
  get counts(): { running: number; waiting: number } {
    return { running: this.running, waiting: this.waiting.length };
  }

  /** A new bound (limits.check_probes_max on reload): raising it starts waiting probes at once. */
  setMax(max: number): void {
    this.max = max;
    this.wake();
  }

  /** Resolves true once a slot is this caller's (it must `release` it), or false when `signal` aborts first. */
  acquire(signal: AbortSignal): Promise<boolean> {
    if (signal.aborted) return Promise.resolve(false);
    if (this.running < this.max) {
      this.running++;
      return Promise.resolve(true);
    }
    return new Promise((resolve) => {
      const turn = () => {
        signal.removeEventListener('abort', abort);
        this.running++;
        resolve(true);
      };
      const abort = () => {
        const at = this.waiting.indexOf(turn);
        if (at >= 0) this.waiting.splice(at, 1);
        resolve(false);
      };
      this.waiting.push(turn);
      signal.addEventListener('abort', abort, { once: true });
    });
  }

  release(): void {
    this.running--;
    this.wake();
  }

  private wake(): void {
    while (this.running < this.max && this.waiting.length > 0) this.waiting.shift()!();
  }
}
