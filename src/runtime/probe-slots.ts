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

  /**
   * Runs `work` in a slot: waits for one, then holds it until `work` settles or `signal` aborts, whichever
   * comes first, so a caller that gives up on its work (a check deregistered or replaced) frees the slot at
   * once, whatever the work goes on doing. Resolves undefined when `signal` aborted first; rejects as `work` does.
   */
  async run<T>(signal: AbortSignal, work: () => Promise<T>): Promise<T | undefined> {
    if (!(await this.acquire(signal))) return undefined;
    let onAbort = () => {};
    const aborted = new Promise<undefined>((resolve) => { onAbort = () => resolve(undefined); });
    if (signal.aborted) onAbort();
    else signal.addEventListener('abort', onAbort, { once: true });
    try {
      return await Promise.race([work(), aborted]);
    } finally {
      signal.removeEventListener('abort', onAbort);
      this.release();
    }
  }

  release(): void {
    this.running--;
    this.wake();
  }

  private wake(): void {
    while (this.running < this.max && this.waiting.length > 0) this.waiting.shift()!();
  }
}
