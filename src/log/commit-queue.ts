/**
 * Group commit: while one commit is in flight, arriving appends queue; when it finishes, everything
 * queued (up to the batch bounds) goes into the next single commit. One append is never split.
 * The queue itself is bounded: an append that would make it hold more than `queuedEntriesMax`
 * entries is refused at once (LOG_OVERLOADED) instead of piling up memory and latency.
 */
import type { EntriesListener, LogEntry, Proposal } from '../ports/log.ts';
import { overloadedError } from '../ports/log-errors.ts';
import { encodeAppend, type EncodedProposal } from './commit-payload.ts';
import { refusal, type Phase } from './limits.ts';
import { setLongTimeout, type LongTimer } from '../util/timer.ts';

/** Counters that make group commit visible: `commits` is the number of fdatasyncs (WAL). */
export interface LogStats {
  commits: number;
  entries: number;
}

export interface Pending<T> {
  items: readonly T[];
  bytes: number;
  resolve(): void;
  reject(err: Error): void;
}

export interface CommitBounds {
  /** Most entries in one commit; an append larger than this still commits, alone. */
  entriesMax: number;
  /** Most payload bytes in one commit; an append larger than this still commits, alone. */
  bytesMax: number;
  /** Most entries waiting for the next commit (the batches in flight are not counted). */
  queuedEntriesMax: number;
  /**
   * Commits in flight at once. The WAL keeps 1 (a commit is written only after the previous one's
   * fdatasync); a replicated log may pipeline several. @default 1
   */
  inFlightMax?: number;
  /**
   * How long a commit waits for more appends while the log has concurrent writers: when a commit is
   * about to start and either entries of earlier commits are not settled yet (their writers, waiting
   * for an answer, are likely to write again as soon as they have it) or the previous commit, started
   * less than `lingerMs` × 50 ago, carried several appends, it starts this many ms later, or as soon as
   * the waiting appends fill a commit (`entriesMax` or `bytesMax`). A lone writer, or an idle log, is
   * committed at once: only concurrent writers trade this wait for fewer, larger commits. @default 0 (no wait)
   */
  lingerMs?: number;
}

/** `commit` must settle every pending of its batch (resolve after durable + delivered, or reject). */
export type CommitFn<T> = (batch: Pending<T>[]) => Promise<void>;

const resolved = Promise.resolve();

export class CommitQueue<T> {
  private readonly queue: Pending<T>[] = [];
  /** Entries in `queue`, and their bytes. */
  private queuedEntries = 0;
  private queuedBytes = 0;
  /** Entries queued or committed whose appends have not settled yet, queued ones included (counted only with `lingerMs`). */
  private unsettled = 0;
  /** The previous commit: how many appends it took, and when it started (ms, performance.now()). */
  private lastAppends = 0;
  private lastStartMs = 0;
  /** Set while the next commit lingers for more appends (see `lingerMs`). */
  private lingerTimer: LongTimer | undefined;
  private inFlight = 0;
  private pumpScheduled = false;
  private readonly idleWaiters: (() => void)[] = [];

  constructor(
    private readonly kind: string,
    private readonly bounds: CommitBounds,
    private readonly commit: CommitFn<T>,
  ) {}

  /**
   * Why an append of `entries` entries cannot be queued now, if it cannot: LOG_OVERLOADED while the
   * queue is too full for it, a RangeError if it is larger than the queue could ever hold.
   */
  refusal(entries: number): Error | undefined {
    const max = this.bounds.queuedEntriesMax;
    if (entries > max) {
      return new RangeError(`${this.kind}: an append of ${entries} entries is larger than queuedEntriesMax (${max}); split it`);
    }
    if (this.queuedEntries + entries > max) return overloadedError(this.kind, this.queuedEntries, entries, max);
    return undefined;
  }

  /** Queues one append; the caller checked `refusal` in the same tick. */
  enqueue(items: readonly T[], bytes: number): Promise<void> {
    const refused = this.refusal(items.length);
    if (refused !== undefined) return Promise.reject(refused);
    return new Promise<void>((resolve, reject) => {
      this.queue.push((this.bounds.lingerMs ?? 0) > 0 ? this.counted(items, bytes, resolve, reject) : { items, bytes, resolve, reject });
      this.queuedEntries += items.length;
      this.queuedBytes += bytes;
      this.schedulePump();
    });
  }

  /**
   * A pending append counted in `unsettled` until it settles (only a lingering queue asks). It settles
   * once: a commit that throws after settling part of its batch rejects all of it again.
   */
  private counted(items: readonly T[], bytes: number, resolve: () => void, reject: (err: Error) => void): Pending<T> {
    this.unsettled += items.length;
    let open = true;
    const settle = (): boolean => {
      if (!open) return false;
      open = false;
      this.unsettled -= items.length;
      return true;
    };
    return {
      items, bytes,
      resolve: () => { if (settle()) resolve(); },
      reject: (err) => { if (settle()) reject(err); },
    };
  }

  /** Resolves once nothing is queued or in flight. */
  idle(): Promise<void> {
    if (this.queue.length === 0 && this.inFlight === 0) return Promise.resolve();
    return new Promise((resolve) => this.idleWaiters.push(resolve));
  }

  /** Rejects everything still queued (not the batches in flight: their commits settle them). */
  rejectQueued(err: Error): void {
    this.queuedEntries = 0;
    this.queuedBytes = 0;
    this.lingerTimer?.clear();
    this.lingerTimer = undefined;
    for (const p of this.queue.splice(0)) p.reject(err);
    this.checkIdle();
  }

  /**
   * One microtask boundary first, so appends made in the same tick share a commit. A resolved
   * promise's reaction rather than queueMicrotask, which wraps each callback in an async resource.
   */
  private schedulePump(): void {
    if (this.pumpScheduled) return;
    this.pumpScheduled = true;
    void resolved.then(this.pumpNow);
  }

  private readonly pumpNow = (): void => {
    this.pumpScheduled = false;
    this.pump();
  };

  /**
   * Starts commits while there is work and room; each finished commit pumps again. A commit about to
   * start lingers first (once) while the log has concurrent writers (see `lingerMs`).
   */
  private pump(lingered = false): void {
    const max = this.bounds.inFlightMax ?? 1;
    if (this.lingerTimer !== undefined) {
      if (!this.full()) return;
      this.lingerTimer.clear();
      this.lingerTimer = undefined;
    } else if (!lingered && this.queue.length > 0 && this.inFlight < max && this.concurrent() && !this.full()) {
      this.lingerTimer = setLongTimeout(this.lingerEnded, this.bounds.lingerMs ?? 0, false);
      return;
    }
    while (this.queue.length > 0 && this.inFlight < max) {
      const batch = this.take();
      this.inFlight += 1;
      this.lastAppends = batch.length;
      this.lastStartMs = performance.now();
      this.commit(batch).catch((err: unknown) => {
        // A commit that throws instead of settling is a bug; its appends must still not hang.
        for (const p of batch) p.reject(err instanceof Error ? err : new Error(String(err)));
      }).finally(() => {
        this.inFlight -= 1;
        this.pump();
        this.checkIdle();
      });
    }
  }

  private readonly lingerEnded = (): void => {
    this.lingerTimer = undefined;
    this.pump(true);
  };

  /** Whether the log has concurrent writers now, so that a commit should linger (see `lingerMs`). */
  private concurrent(): boolean {
    const lingerMs = this.bounds.lingerMs ?? 0;
    if (lingerMs <= 0) return false;
    if (this.unsettled > this.queuedEntries) return true;
    return this.lastAppends > 1 && performance.now() - this.lastStartMs < lingerMs * 50;
  }

  /** The waiting appends fill a commit: no reason to wait for more. */
  private full(): boolean {
    return this.queuedEntries >= this.bounds.entriesMax || this.queuedBytes >= this.bounds.bytesMax;
  }

  private checkIdle(): void {
    if (this.queue.length > 0 || this.inFlight > 0) return;
    for (const resolve of this.idleWaiters.splice(0)) resolve();
  }

  private take(): Pending<T>[] {
    let count = 0;
    let entries = 0;
    let bytes = 0;
    for (const p of this.queue) {
      const fits = entries + p.items.length <= this.bounds.entriesMax && bytes + p.bytes <= this.bounds.bytesMax;
      if (count > 0 && !fits) break;
      count += 1;
      entries += p.items.length;
      bytes += p.bytes;
    }
    this.queuedEntries -= entries;
    this.queuedBytes -= bytes;
    return this.queue.splice(0, count);
  }
}

/** Encodes one append's proposals and sums their bytes, refusing an append one commit cannot carry. */
export type AppendEncoder = (proposals: readonly Proposal[]) => { items: EncodedProposal[]; bytes: number };

/**
 * The append path every log shares: refuse when the log is not open (no queue yet), has failed or its
 * queue is full (checked before encoding, so shedding load costs next to nothing), else encode and queue.
 * `encode` is the log's own size rule (the WAL's commit frame, the cluster's message payload).
 */
export function appendTo(
  kind: string, phase: Phase, failure: Error | undefined,
  commits: CommitQueue<EncodedProposal> | undefined, proposals: readonly Proposal[],
  encode: AppendEncoder = encodeAppend,
): Promise<void> {
  const refused = refusal(kind, commits === undefined ? 'new' : phase, failure);
  if (refused !== undefined || commits === undefined) return Promise.reject(refused);
  if (proposals.length === 0) return Promise.resolve();
  const full = commits.refusal(proposals.length);
  if (full !== undefined) return Promise.reject(full);
  try {
    const { items, bytes } = encode(proposals);
    return commits.enqueue(items, bytes);
  } catch (err) {
    return Promise.reject(err);
  }
}

/**
 * The end of a commit both logs share: count it, hand the entries to the consumer, then acknowledge
 * the appends. A consumer that throws fails the batch instead (the entries are stored; nothing acks).
 */
export function deliverCommit<T>(
  batch: Pending<T>[], entries: LogEntry[], stats: LogStats, listener: EntriesListener | undefined,
  fail: (cause: unknown, batch: Pending<T>[]) => void,
): void {
  stats.commits += 1;
  stats.entries += entries.length;
  try {
    listener?.(entries);
  } catch (err) {
    fail(err, batch);
    return;
  }
  for (const p of batch) p.resolve();
}
