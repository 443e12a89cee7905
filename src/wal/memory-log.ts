/**
 * The in-memory twin of the WAL: same stamping, group commit, wire format and checks, with a plain
 * `MemoryLogStore` standing in for the disk so a test can "restart" by opening a new MemoryLog on it.
 */
import type { Clock } from '../ports/clock.ts';
import type { EntriesListener, LogEntry, LogStatus, Proposal, ReplicatedLog, Snapshot } from '../ports/log.ts';
import {
  appendTo, checkAfterIndex, CommitQueue, deliverCommit, parseSnapshot, positiveIntOption, queuedEntriesMaxDefault,
  refusal, replayBatchEntriesMax, snapshotPayload, snapshotRefusal, stampBatch, EntryClock, type EncodedProposal,
  type LogStats, type Pending, type Phase,
} from '../log/index.ts';

/** What survives a "restart": committed entries (compacted like the WAL) and the newest snapshot. */
export interface MemoryLogStore {
  /** Committed entries in index order. Compaction keeps at least the last one, as the WAL does. */
  entries: LogEntry[];
  snapshot?: Snapshot;
}

export function createMemoryLogStore(): MemoryLogStore {
  return { entries: [] };
}

export interface MemoryLogOptions {
  clock: Clock;
  /** Storage to open over; pass the same object to a new MemoryLog to simulate a restart. @default a fresh store */
  store?: MemoryLogStore;
  /** Most entries in one commit. @default 4096 */
  batchEntriesMax?: number;
  /**
   * Most entries waiting for the next commit. An append that would pass it is rejected at once with
   * an error whose `code` is 'LOG_OVERLOADED' (see `isLogOverloaded`); one larger than it with a
   * RangeError. Same rule as the WAL. @default 65536
   */
  queuedEntriesMax?: number;
}

const kind = 'MemoryLog';

export class MemoryLog implements ReplicatedLog {
  /** `commits` counts group commits (one per batch), like the WAL's fdatasyncs. */
  readonly stats: LogStats = { commits: 0, entries: 0 };
  readonly store: MemoryLogStore;
  private readonly entryClock: EntryClock;
  private readonly commits: CommitQueue<EncodedProposal>;
  private phase: Phase = 'new';
  private failure: Error | undefined;
  private listener: EntriesListener | undefined;
  private lastAtMs = 0;

  constructor(opts: MemoryLogOptions) {
    this.entryClock = new EntryClock(opts.clock);
    this.store = opts.store ?? createMemoryLogStore();
    const bounds = {
      entriesMax: positiveIntOption(kind, 'batchEntriesMax', opts.batchEntriesMax, 4096),
      bytesMax: Number.MAX_SAFE_INTEGER,
      queuedEntriesMax: positiveIntOption(kind, 'queuedEntriesMax', opts.queuedEntriesMax, queuedEntriesMaxDefault),
    };
    this.commits = new CommitQueue(kind, bounds, (batch) => this.commit(batch));
  }

  async open(): Promise<Snapshot | undefined> {
    if (this.phase !== 'new') throw new Error(`${kind}.open: already opened`);
    this.phase = 'open';
    this.lastAtMs = this.store.entries.at(-1)?.atMs ?? 0;
    const s = this.store.snapshot;
    return s === undefined ? undefined : roundTrip(s);
  }

  subscribe(afterIndex: number, listener: EntriesListener): void {
    if (this.phase !== 'open') throw new Error(`${kind}.subscribe: log is not open`);
    if (this.listener !== undefined) throw new Error(`${kind}.subscribe: the log has a single consumer`);
    checkAfterIndex(kind, afterIndex, this.lastIndex());
    this.replay(afterIndex, listener);
    this.listener = listener;
  }

  append(proposals: readonly Proposal[]): Promise<void> {
    return appendTo(kind, this.phase, this.failure, this.commits, proposals);
  }

  async saveSnapshot(snapshot: Snapshot): Promise<void> {
    const refused = refusal(kind, this.phase, this.failure)
      ?? snapshotRefusal(kind, snapshot, this.lastIndex(), this.store.snapshot?.index ?? 0);
    if (refused !== undefined) throw refused;
    this.store.snapshot = roundTrip(snapshot);
    this.compact(snapshot.index);
  }

  lastIndex(): number {
    return this.store.entries.at(-1)?.index ?? 0;
  }

  status(): LogStatus {
    const last = this.lastIndex();
    return { kind: 'memory', lastIndex: last, firstIndex: this.store.entries[0]?.index ?? last + 1, snapshotIndex: this.store.snapshot?.index ?? 0 };
  }

  async close(): Promise<void> {
    if (this.phase === 'open') this.phase = 'closing';
    await this.commits.idle();
    this.phase = 'closed';
  }

  private replay(afterIndex: number, listener: EntriesListener): void {
    const entries = this.store.entries;
    const first = entries[0]?.index ?? 1;
    if (afterIndex < this.lastIndex() && afterIndex + 1 < first) {
      throw new RangeError(`${kind}.subscribe: entries after ${afterIndex} were compacted; the first kept is ${first}`);
    }
    for (let k = Math.max(0, afterIndex + 1 - first); k < entries.length; k += replayBatchEntriesMax) {
      listener(entries.slice(k, k + replayBatchEntriesMax).map((e) => structuredClone(e)));
    }
  }

  /** Stamps, stores and delivers one batch. */
  private async commit(batch: Pending<EncodedProposal>[]): Promise<void> {
    let entries: LogEntry[];
    try {
      entries = this.stamp(batch);
    } catch (err) {
      this.fail(err, batch);
      return;
    }
    this.store.entries.push(...entries.map((e) => structuredClone(e)));
    this.lastAtMs = entries.at(-1)?.atMs ?? this.lastAtMs;
    deliverCommit(batch, entries, this.stats, this.listener, (err, b) => this.fail(err, b));
  }

  private stamp(batch: Pending<EncodedProposal>[]): LogEntry[] {
    const atMs = this.entryClock.stamp(this.lastAtMs);
    return stampBatch(batch, this.lastIndex(), atMs).entries;
  }

  /** A throwing listener means the consumer missed entries: stop accepting appends. */
  private fail(cause: unknown, batch: Pending<EncodedProposal>[]): void {
    const msg = cause instanceof Error ? cause.message : String(cause);
    this.failure ??= new Error(`${kind} failed, no further appends are accepted: ${msg}`, { cause });
    for (const p of batch) p.reject(this.failure);
    this.commits.rejectQueued(this.failure);
  }

  /** Drops entries the snapshot covers, keeping the last entry so lastIndex and atMs survive. */
  private compact(index: number): void {
    const entries = this.store.entries;
    const first = entries[0]?.index;
    if (first === undefined) return;
    const keepFrom = Math.min(index + 1, this.lastIndex());
    entries.splice(0, Math.max(0, keepFrom - first));
  }
}

/** A snapshot as it would come back from disk: through JSON. */
function roundTrip(s: Snapshot): Snapshot {
  const parsed = parseSnapshot(snapshotPayload(s));
  if (typeof parsed === 'string') throw new Error(`${kind}: snapshot does not survive JSON: ${parsed}`);
  return parsed;
}
