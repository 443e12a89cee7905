/**
 * When a node snapshots its state into the log: every `everyEntries` entries, one at a time, and once
 * more on a clean stop so the next start replays less. A save that fails is tried again after a pause
 * that doubles with each failure in a row (1 s up to a minute), not at the next applied entry: a log that
 * cannot take snapshots for a while (a full disk, an unreachable store) would otherwise be asked, and log
 * a warning, for every commit.
 */
import type { Clock } from '../ports/clock.ts';
import type { Logger } from '../ports/logger.ts';
import type { ReplicatedLog } from '../ports/log.ts';
import { toSnapshotData, type RegistryState } from '../state/index.ts';

/** The pause before a failed save is tried again: the first, and the most it doubles to. */
export const retryPauseMs = { first: 1_000, max: 60_000 };

export class Snapshots {
  /** Index of the last snapshot saved or restored. */
  lastIndex = 0;
  private inFlight: Promise<void> | undefined;
  /** Failed saves in a row, and when the next may start (clock ms). */
  private failures = 0;
  private notBeforeMs = 0;

  /** `state` is the runtime's state now: the log may ask for a snapshot of it (see ReplicatedLog.snapshotSource). */
  constructor(private readonly log: ReplicatedLog, private readonly logger: Logger, private readonly everyEntries: number, state: () => RegistryState,
    private readonly clock: Pick<Clock, 'nowMs'>) {
    log.snapshotSource?.(() => {
      const s = state();
      return { index: s.index, data: toSnapshotData(s) };
    });
  }

  /** Starts a snapshot in the background when enough entries applied since the last. */
  maybe(state: RegistryState): void {
    if (this.inFlight !== undefined) return;
    // Every everyEntries entries, but never more often than once per state's worth of entries:
    // a snapshot costs time in proportion to the state, so this keeps its cost per entry bounded
    // (at 1M keys, a snapshot every 20,000 entries would write gigabytes while a client loads the keys).
    const stateItems = state.kv.size + state.sessions.size;
    if (state.index - this.lastIndex < Math.max(this.everyEntries, stateItems)) return;
    if (this.clock.nowMs() < this.notBeforeMs) return;
    this.inFlight = this.save(state)
      .then(() => { this.failures = 0; }, (err: unknown) => {
        const pauseMs = Math.min(retryPauseMs.first * 2 ** this.failures, retryPauseMs.max);
        this.failures += 1;
        this.notBeforeMs = this.clock.nowMs() + pauseMs;
        this.logger.warn({ err, failuresInARow: this.failures, retryInMs: pauseMs }, 'snapshot failed; will retry later');
      })
      .finally(() => { this.inFlight = undefined; });
  }

  /** Waits for a snapshot in progress. */
  async settled(): Promise<void> {
    await this.inFlight;
  }

  async save(state: RegistryState): Promise<void> {
    const index = state.index;
    const data = toSnapshotData(state);
    await this.log.saveSnapshot({ index, data });
    this.lastIndex = index;
    this.logger.info({ index }, 'snapshot saved');
  }
}
