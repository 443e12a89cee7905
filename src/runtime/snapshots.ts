/**
 * When a node snapshots its state into the log: every `everyEntries` entries (or as many bytes as the log
 * asks for, see bytesDue), one at a time; right after a restore applies (its entry may name an attachment
 * of the log, a file as large as the state that the log keeps until two snapshots lie past the entry, and
 * replaying it costs a start as much as the restore did); and once more on a clean stop so the next start
 * replays less. A save that fails is tried again after a pause that doubles with each failure in a row
 * (1 s up to a minute), not at the next applied entry: a log that cannot take snapshots for a while (a full
 * disk, an unreachable store) would otherwise be asked, and log a warning, for every commit.
 */
import { intervalMs, type Clock } from '../ports/clock.ts';
import type { Logger } from '../ports/logger.ts';
import type { ReplicatedLog } from '../ports/log.ts';
import { stateBytes, toSnapshotData, type RegistryState } from '../state/index.ts';

/** The pause before a failed save is tried again: the first, and the most it doubles to. */
export const retryPauseMs = { first: 1_000, max: 60_000 };

export class Snapshots {
  /** Index of the last snapshot saved or restored. */
  lastIndex = 0;
  /** Index of the last restore applied: a snapshot is due while it is past lastIndex. */
  private restoredIndex = 0;
  /**
   * The log's count of bytes (`written`) when the last snapshot was saved; 0 at start, when the log's count is
   * what it holds past the snapshot it opened from (a start after a crash counts what the last process wrote).
   */
  private bytesAtSnapshot = 0;
  private inFlight: Promise<void> | undefined;
  /** Failed saves in a row, and when the next may start (the interval clock's ms). */
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

  /** Starts a snapshot in the background when enough entries applied since the last, or a restore (`restored`) did. */
  maybe(state: RegistryState, restored = false): void {
    if (restored) this.restoredIndex = state.index;
    if (this.inFlight !== undefined) return;
    // Every everyEntries entries, but never more often than once per state's worth of entries:
    // a snapshot costs time in proportion to the state, so this keeps its cost per entry bounded
    // (at 1M keys, a snapshot every 20,000 entries would write gigabytes while a client loads the keys).
    const stateItems = state.kv.size + state.sessions.size;
    const due = this.restoredIndex > this.lastIndex || state.index - this.lastIndex >= Math.max(this.everyEntries, stateItems);
    if (!due && !this.bytesDue(state)) return;
    if (intervalMs(this.clock) < this.notBeforeMs) return;
    this.inFlight = this.save(state)
      .then(() => { this.failures = 0; }, (err: unknown) => {
        const pauseMs = Math.min(retryPauseMs.first * 2 ** this.failures, retryPauseMs.max);
        this.failures += 1;
        this.notBeforeMs = intervalMs(this.clock) + pauseMs;
        this.logger.warn({ err, failuresInARow: this.failures, retryInMs: pauseMs }, 'snapshot failed; will retry later');
      })
      .finally(() => { this.inFlight = undefined; });
  }

  /**
   * Whether the bytes written since the last snapshot call for one, whatever their count of entries (the
   * log says how many: the embedded log, two segments' worth, 128 MiB, as it drops a segment once two
   * snapshots lie past it; the JetStream log as many of the stream's bytes read), so a log of large values is
   * compacted by its bytes as one of small values is by its entries. Never before twice the state's size has
   * been written, as a snapshot writes the whole state.
   */
  private bytesDue(state: RegistryState): boolean {
    const written = this.log.written?.();
    if (written === undefined || state.index <= this.lastIndex) return false;
    // The log's files made afresh: its count started again.
    if (written.bytes < this.bytesAtSnapshot) this.bytesAtSnapshot = 0;
    return written.bytes - this.bytesAtSnapshot >= Math.max(written.snapshotDueBytes, 2 * stateBytes(state));
  }

  /** Waits for a snapshot in progress. */
  async settled(): Promise<void> {
    await this.inFlight;
  }

  async save(state: RegistryState): Promise<void> {
    const index = state.index;
    const data = toSnapshotData(state);
    const written = this.log.written?.().bytes ?? 0;
    await this.log.saveSnapshot({ index, data });
    this.bytesAtSnapshot = written;
    this.lastIndex = index;
    this.logger.info({ index }, 'snapshot saved');
  }
}
