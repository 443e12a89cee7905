/**
 * When a node snapshots its state into the log: every `everyEntries` entries, one at a time, and once
 * more on a clean stop so the next start replays less.
 */
import type { Logger } from '../ports/logger.ts';
import type { ReplicatedLog } from '../ports/log.ts';
import { toSnapshotData, type RegistryState } from '../state/index.ts';

export class Snapshots {
  /** Index of the last snapshot saved or restored. */
  lastIndex = 0;
  private inFlight: Promise<void> | undefined;

  /** `state` is the runtime's state now: the log may ask for a snapshot of it (its data dir was removed). */
  constructor(private readonly log: ReplicatedLog, private readonly logger: Logger, private readonly everyEntries: number, state: () => RegistryState) {
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
    this.inFlight = this.save(state)
      .catch((err: unknown) => this.logger.warn({ err }, 'snapshot failed; will retry later'))
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
