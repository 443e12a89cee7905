/**
 * Writes that wait for the log to store writes again (an agent started on a full disk: this node's
 * registration, the config file's definitions), run in the order given; bounded by what start asks for.
 */
import type { Logger } from '../ports/logger.ts';
import { isLogUnavailable } from '../ports/log.ts';

export class DeferredWrites {
  /** False while the log cannot store writes (the WAL's disk is full, or the log failed). */
  logWritable = true;
  private readonly waiting: { what: string; write: () => Promise<void> }[] = [];
  private draining = false;
  /** Counts the log's turns back to writable, so a write refused just before one is not left waiting for the next. */
  private writableTurns = 0;

  /** `running`: false once the node stops or failed (waiting writes are then dropped). */
  constructor(private readonly logger: Logger, private readonly running: () => boolean) {}

  /** The log told whether it stores writes; on a turn back to writable the waiting writes run. */
  writableChanged(writable: boolean): void {
    this.logWritable = writable;
    if (!writable) return;
    this.writableTurns++;
    void this.runWaiting();
  }

  /**
   * Runs `write` now, or, while the log cannot store writes, sets it aside and runs it once the log
   * can again, after the writes waiting before it (so this node is registered before the services
   * defined on it). Resolves once `write` ran or was set aside; a failure other than "log unavailable"
   * rejects now, or is logged when it happens later.
   */
  async onceWritable(what: string, write: () => Promise<void>): Promise<void> {
    const turn = this.writableTurns;
    if (this.waiting.length === 0 && this.logWritable) {
      try {
        await write();
        return;
      } catch (err) {
        if (!isLogUnavailable(err)) throw err;
      }
    }
    this.waiting.push({ what, write });
    this.logger.warn({ what }, 'the log cannot store writes: deferred until it can');
    if (this.writableTurns !== turn) void this.runWaiting();
  }

  /** Runs the waiting writes in order; one refused as unavailable again stays first for the next writable turn. */
  private async runWaiting(): Promise<void> {
    if (this.draining) return;
    this.draining = true;
    try {
      while (this.waiting.length > 0 && this.running()) {
        const next = this.waiting[0]!;
        const turn = this.writableTurns;
        try {
          await next.write();
          this.logger.info({ what: next.what }, 'deferred write done: the log stores writes again');
        } catch (err) {
          // Writable again meanwhile (a turn this loop would otherwise miss): try again; else wait for the next turn.
          if (isLogUnavailable(err)) {
            if (this.writableTurns !== turn) continue;
            return;
          }
          this.logger.error({ err, what: next.what }, 'a deferred write failed; it is not retried');
        }
        this.waiting.shift();
      }
    } finally {
      this.draining = false;
    }
  }
}
