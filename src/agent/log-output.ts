/**
 * Where the agent's log lines go: standard output, written as its reader takes them, and never held
 * without bound. On a pipe (a supervisor, a log collector) Node writes standard output asynchronously: a
 * reader slower than the lines come leaves them queued in the agent's memory. At most `backlogMax`
 * characters wait there; a line that would pass it is dropped and counted, and once the reader has caught
 * up (the queue drained) the count is logged: `N log lines dropped: the log reader is too slow`.
 *
 * On a pipe nothing is written synchronously, so no write can hold the process: a stop waits at most
 * `logDrainMsMax` for the queue to drain (`settle`), then exits whatever it still holds, and says how much
 * on standard error. A reader that goes away (EPIPE) drops the queue and every later line.
 */
import type { Writable } from 'node:stream';

/** Most characters of log lines queued for a reader that is behind (about bytes: log lines are mostly ASCII). */
export const logBacklogMax = 4 * 1024 * 1024;
/** Longest a stop waits for the log reader to take the lines still queued. */
export const logDrainMsMax = 3000;
/** How often `settle` looks whether the queue has drained. */
const settlePollMs = 20;

export interface LogOutputOptions {
  /** Standard output, or what stands for it. */
  out: Writable;
  /** Where the output's own trouble is told (standard error). */
  err: Writable;
  /** Turns pino's JSON line into the line written (pino-pretty); absent: written as it is. */
  format?: (line: string) => string;
  /** Told how many lines were dropped, once the reader has caught up; it logs the count. */
  dropped: (lines: number) => void;
  /** @default logBacklogMax */
  backlogMax?: number;
}

export class LogOutput {
  readonly #o: LogOutputOptions;
  readonly #backlogMax: number;
  /** Lines dropped since the count was last told. */
  #dropped = 0;
  /** Set when the output failed (its reader went away): every line is dropped from then on. */
  #failed: string | undefined;

  constructor(o: LogOutputOptions) {
    this.#o = o;
    this.#backlogMax = o.backlogMax ?? logBacklogMax;
    o.out.on('drain', () => this.#drained());
    o.out.on('error', (err: NodeJS.ErrnoException) => this.#fail(err));
    // Standard error may be the same broken pipe: its failure must not end the process either.
    o.err.on('error', () => {});
  }

  /** Characters queued for the reader. */
  get held(): number {
    return this.#failed === undefined ? this.#o.out.writableLength : 0;
  }

  write(line: string): void {
    if (this.#failed !== undefined) return;
    const text = this.#o.format === undefined ? line : this.#o.format(line);
    if (this.#o.out.writableLength + text.length > this.#backlogMax) {
      this.#dropped++;
      return;
    }
    // A drop the queue had room again for without a drain (a line longer than the bound alone) is told now.
    if (this.#dropped > 0 && !this.#o.out.writableNeedDrain) this.#tellDropped();
    this.#o.out.write(text);
  }

  /** Calls back once the queue is empty or `logDrainMsMax` has passed. pino's `logger.flush(cb)`. */
  flush(cb?: (err?: Error | null) => void): void {
    if (cb !== undefined) void this.settle().then(() => cb());
  }

  /**
   * Resolves once the queue is empty or `waitMs` has passed, with the characters still queued then. Lines
   * still queued when the process exits are lost: the caller says so (`lostText`).
   */
  async settle(waitMs = logDrainMsMax): Promise<number> {
    // Polled: 'drain' comes only after a write that found the queue past its high-water mark.
    for (const until = performance.now() + waitMs; this.held > 0 && performance.now() < until;) {
      await new Promise((resolve) => setTimeout(resolve, settlePollMs));
    }
    return this.held;
  }

  /** What a process about to exit writes to standard error about the `held` characters it could not write. */
  static lostText(held: number): string {
    return `roster: about ${held} bytes of log lines were not written: the log reader had not taken them ${logDrainMsMax / 1000} s after the agent stopped\n`;
  }

  /** The reader has taken the whole queue. */
  #drained(): void {
    if (this.#dropped > 0) this.#tellDropped();
  }

  #tellDropped(): void {
    const lines = this.#dropped;
    this.#dropped = 0;
    this.#o.dropped(lines);
  }

  /** The reader went away (EPIPE) or the output failed otherwise: nothing more can be written there. */
  #fail(err: NodeJS.ErrnoException): void {
    if (this.#failed !== undefined) return;
    this.#failed = err.code ?? err.message;
    this.#o.err.write(`roster: the log output failed (${this.#failed}): log lines are dropped from now on\n`);
  }
}
