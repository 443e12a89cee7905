/**
 * The pieces of waiting out a shortage that do not touch files: the retry on a timer (one scheduled or
 * running at a time), and the refusal of appends meanwhile — what they are refused with, how the current
 * segment was lost (if that is the shortage), and the line logged once for it.
 */
import type { Clock, TimerHandle } from '../ports/clock.ts';
import type { Logger } from '../ports/logger.ts';
import { lossLog } from './afresh.ts';
import { dirFaultLog, SegmentLost, shortageError, shortageLog, shortageOf, type SegmentLoss, type WalShortage } from './files.ts';

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

/** A failed file operation as the shortage it leaves the log in; `err` is the error that says so. */
export interface Shortage {
  err: unknown;
  shortage: WalShortage;
}

/** The refusal of appends while the log is short of something (shortageOf) and waits for it. */
export class Refusal {
  /** Set while appends are refused: they get it until a retry succeeds. */
  error: Error | undefined;
  /** How the current segment was lost, while appends are refused for it (the retry writes the log afresh). */
  loss: SegmentLoss | undefined;
  /** The line logged when appends started being refused; logged again only when it changes. */
  private logged: string | undefined;

  constructor(private readonly dir: string, private readonly logger: Logger) {}

  /**
   * What a failed file operation leaves the log short of; undefined when it fails the log for good. A file
   * of the data dir that is not there (ENOENT: a roll's open, a file written while the log is written afresh)
   * while the current segment is lost (`lost`: how, as SegmentLost, else undefined) only follows from the
   * loss: the dir was removed or moved (again, meanwhile), and is written afresh as for the loss itself.
   */
  classify(err: unknown, lost: () => SegmentLost | undefined): Shortage | undefined {
    const shortage = shortageOf(err, this.dir);
    if (shortage !== undefined) return { err, shortage };
    if ((err as NodeJS.ErrnoException | undefined)?.code !== 'ENOENT') return undefined;
    let loss: SegmentLost | undefined;
    try {
      loss = lost();
    } catch {
      return undefined;
    }
    return loss === undefined ? undefined : { err: loss, shortage: 'files' };
  }

  /** Appends are refused for `found` from now on; logged once, and again when what they wait for changes. */
  refuse(found: Shortage): Error {
    const { err, shortage } = found;
    if (err instanceof SegmentLost) this.loss ??= err.loss;
    this.error = shortageError(shortage);
    const line = shortage === 'files' ? lossLog[this.loss ?? 'removed'].refused
      : shortage === 'dir' ? dirFaultLog(err, this.dir) : shortageLog[shortage];
    if (line !== this.logged) this.logger.error({ err, dir: this.dir }, line);
    this.logged = line;
    return this.error;
  }

  /** Appends are taken again. */
  clear(): void {
    this.error = undefined;
    this.loss = undefined;
    this.logged = undefined;
  }
}
