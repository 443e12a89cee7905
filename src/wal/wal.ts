/**
 * The embedded write-ahead log (DESIGN §3): segment files of checksummed frames, one frame per group
 * commit (format in record.ts); one write and one fdatasync per commit before anything in it is
 * acknowledged; snapshots that let old segments go; recovery that truncates a torn last commit and
 * refuses every other kind of damage (unless a snapshot holds it), deciding before it changes anything;
 * a full disk, a process out of file descriptors or a data dir it cannot use, waited out (appends refused
 * as unavailable, retried) rather than failing the log for good.
 *
 * WalLog composes the parts: recovery.ts (plan and apply at open, scan.ts reading each segment),
 * segments.ts (writing, rolling, compacting; preallocation.ts), snapshots.ts, replay.ts, space-wait.ts
 * and attachments.ts (told each commit, and each snapshot's fallback: what a start may still replay).
 * It keeps the commit queue, the log's phase and the decisions on a failed write.
 *
 * A data dir removed or moved, or the current segment cut short, is noticed after each commit's write
 * and once a second while idle (SegmentFiles.lost): that commit is refused, writes are refused meanwhile,
 * and the retry writes the log afresh (afresh.ts) from the state as of the last acknowledged commit.
 *
 * A clean close with a snapshot at the last index is recorded (clean-close.ts): the next open may start from it.
 */
import { mkdir } from 'node:fs/promises';
import { join } from 'node:path';
import type { TimerHandle } from '../ports/clock.ts';
import { silentLogger, type Logger } from '../ports/logger.ts';
import type { EntriesListener, LogEntry, LogStatus, Proposal, ReplicatedLog, Snapshot } from '../ports/log.ts';
import { failedError, outcomeUnknownError } from '../ports/log-errors.ts';
import type { LogObserver } from '../ports/observer.ts';
import {
  appendTo, checkAfterIndex, CommitQueue, commitBytesMax, deliverCommit, positiveIntOption, queuedEntriesMaxDefault,
  EntryClock, refusal, snapshotRefusal, stampBatch, WritableListeners, type EncodedProposal, type LogStats, type Pending,
  type Phase,
} from '../log/index.ts';
import { startAfresh } from './afresh.ts';
import { Attachments } from './attachments.ts';
import { clearCleanClose, readCleanClose, recordCleanClose } from './clean-close.ts';
import {
  kind, listIndexed, MiB, namedFile, SegmentLost, segmentPattern, snapName, syncDir, type SegmentLoss,
} from './files.ts';
import type { WalLogOptions } from './options.ts';
import { encodeFrame, frameBytesMax } from './record.ts';
import { applyPlan, operatorChoices, planRecovery } from './recovery.ts';
import { SegmentFiles } from './segments.ts';
import { Refusal, RetryTimer, type Shortage } from './space-wait.ts';
import { loadSnapshot, pruneSnapshots, removeUnfinishedSnapshots, writeSnapshotFile } from './snapshots.ts';

export type { WalLogOptions } from './options.ts';

export class WalLog implements ReplicatedLog {
  /** `commits` counts fdatasyncs of entry batches; `entries` counts entries they made durable. */
  readonly stats: LogStats = { commits: 0, entries: 0 };
  private readonly walDir: string;
  private readonly snapDir: string;
  private readonly segmentBytesMax: number;
  private readonly logger: Logger;
  private observer: LogObserver | undefined;
  private readonly commits: CommitQueue<EncodedProposal>;
  private phase: Phase = 'new';
  private failure: Error | undefined;
  private closing: Promise<void> | undefined;
  private listener: EntriesListener | undefined;
  /** The segment files, once open() has recovered them. */
  private files: SegmentFiles | undefined;
  private last = 0;
  private lastAtMs = 0;
  private snapIndex = 0;
  /** Snapshot saves run one at a time: each prunes files that the next must not race on. */
  private snapshots: Promise<void> = Promise.resolve();
  /** Appends refused while the log is short of something (space, descriptors, its files, a usable dir). */
  private readonly refusal: Refusal;
  /** Tries again while the log is short of something. */
  private readonly spaceRetry: RetryTimer;
  private readonly writable = new WritableListeners();
  private readonly attachments: Attachments;
  /** Stamps the commits (entry time goes on when the wall clock is set back). */
  private readonly entryClock: EntryClock;
  /** The state as of the last entry applied, for starting afresh in a data dir made again. */
  private source: (() => Snapshot) | undefined;
  /** True while a commit writes (the idle check leaves a commit's segment to that commit's own check). */
  private committing = false;
  private dirCheck: TimerHandle | undefined;
  /** The last cut of the current segment's tail after a failed write (retries wait for it). */
  private cutting: Promise<void> = Promise.resolve();

  constructor(private readonly opts: WalLogOptions) {
    this.walDir = join(opts.dir, 'wal');
    this.snapDir = join(opts.dir, 'snap');
    this.attachments = new Attachments(opts.dir, opts.logger ?? silentLogger);
    this.entryClock = new EntryClock(opts.clock);
    this.segmentBytesMax = opts.segmentBytesMax ?? 64 * MiB;
    if (!(this.segmentBytesMax > 0)) throw new RangeError(`${kind}: segmentBytesMax must be positive`);
    this.logger = opts.logger ?? silentLogger;
    this.refusal = new Refusal(opts.dir, this.logger);
    this.observer = opts.observer;
    const bounds = {
      entriesMax: positiveIntOption(kind, 'batchEntriesMax', opts.batchEntriesMax, 4096),
      // The entries' bounds of a batch within commitBytesMax keep its frame within frameBytesMax.
      bytesMax: Math.min(commitBytesMax, positiveIntOption(kind, 'batchBytesMax', opts.batchBytesMax, 16 * MiB, frameBytesMax)),
      queuedEntriesMax: positiveIntOption(kind, 'queuedEntriesMax', opts.queuedEntriesMax, queuedEntriesMaxDefault),
    };
    this.commits = new CommitQueue(kind, bounds, (batch) => this.commit(batch));
    const spaceRetryMs = positiveIntOption(kind, 'spaceRetryMs', opts.spaceRetryMs, 1000);
    this.spaceRetry = new RetryTimer(opts.clock, spaceRetryMs, () => this.retrySpace());
  }

  async open(): Promise<Snapshot | undefined> {
    if (this.phase !== 'new') throw new Error(`${kind}.open: already opened`);
    await mkdir(this.walDir, { recursive: true });
    await mkdir(this.snapDir, { recursive: true });
    await syncDir(this.opts.dir);
    // Decide first (reading only): a log that is refused is left exactly as it was found.
    const snapshot = await loadSnapshot(this.snapDir, this.logger);
    this.snapIndex = snapshot?.index ?? 0;
    const closedAt = await readCleanClose(this.snapDir);
    const plan = planRecovery(this.walDir, await listIndexed(this.walDir, segmentPattern), this.snapIndex, closedAt);
    await this.attachments.check(plan.attachments ?? [], this.snapIndex, operatorChoices(this.walDir, this.snapIndex));
    await removeUnfinishedSnapshots(this.snapDir, this.logger);
    await applyPlan(this.walDir, plan, this.logger);
    await this.attachments.prune();
    // Appends past the clean close follow: it no longer says the snapshot holds everything.
    await clearCleanClose(this.snapDir);
    const found = plan.recovered;
    this.files = await SegmentFiles.open(this.walDir, this.segmentBytesMax, found);
    this.last = found.last;
    this.lastAtMs = found.lastAtMs;
    this.phase = 'open';
    this.scheduleDirCheck();
    try {
      await this.files!.preallocate();
    } catch (err) {
      // Opened on a full disk: the log is read (replay serves reads) and waits for space to write.
      if (this.classify(err) === undefined) throw err;
      await this.writeFailed(err, []);
    }
    return snapshot;
  }

  subscribe(afterIndex: number, listener: EntriesListener): void {
    if (this.phase !== 'open') throw new Error(`${kind}.subscribe: log is not open`);
    if (this.listener !== undefined) throw new Error(`${kind}.subscribe: the log has a single consumer`);
    checkAfterIndex(kind, afterIndex, this.last);
    this.files!.replay(afterIndex, this.last, listener);
    this.listener = listener;
  }

  append(proposals: readonly Proposal[]): Promise<void> {
    const refused = this.refusal.error;
    if (refused !== undefined && this.failure === undefined && this.phase === 'open') return Promise.reject(refused);
    return appendTo(kind, this.phase, this.failure, this.commits, proposals);
  }

  snapshotSource(source: () => Snapshot): void { this.source = source; }

  /** Bytes of the log past the snapshot it opened from and written since (or since it was written afresh); a snapshot is due after two segments' worth. */
  written(): { bytes: number; snapshotDueBytes: number } { return { bytes: this.files?.written ?? 0, snapshotDueBytes: 2 * this.segmentBytesMax }; }

  /** Tells `listener` each time the log stops (disk full) or starts again (space back) storing appends. */
  onWritable(listener: (writable: boolean) => void): void {
    this.writable.add(listener);
  }

  saveSnapshot(snapshot: Snapshot): Promise<void> {
    const refused = refusal(kind, this.phase, this.failure)
      ?? snapshotRefusal(kind, snapshot, this.last, this.snapIndex);
    if (refused !== undefined) return Promise.reject(refused);
    const run = this.snapshots.then(() => this.writeSnapshot(snapshot));
    this.snapshots = run.catch(() => undefined);
    return run;
  }

  lastIndex(): number { return this.last; }

  /** Indexes from memory: the last commit, the oldest kept segment's start, the newest snapshot. */
  status(): LogStatus {
    const first = this.files?.firstIndex ?? this.snapIndex + 1;
    return { kind: 'wal', lastIndex: this.last, firstIndex: Math.min(first, this.last + 1), snapshotIndex: this.snapIndex };
  }

  /** Bytes too large for an entry, as a file of the data dir (see attachments.ts); refused while appends are. */
  storeAttachment(bytes: Buffer, sha256: string): Promise<string> {
    const refused = refusal(kind, this.phase, this.failure) ?? this.refusal.error;
    return refused === undefined ? this.attachments.store(bytes, sha256) : Promise.reject(refused);
  }

  loadAttachment(name: string): Buffer {
    return this.attachments.load(name);
  }

  observe(observer: LogObserver): void { this.observer = observer; }

  close(): Promise<void> { return (this.closing ??= this.shutdown()); }

  private async shutdown(): Promise<void> {
    if (this.phase === 'open') this.phase = 'closing';
    if (this.dirCheck !== undefined) this.opts.clock.clearTimer(this.dirCheck);
    await this.spaceRetry.stop();
    // Queued appends are committed, not dropped: the port promises pending appends are never lost silently.
    await this.commits.idle();
    await this.snapshots;
    if (this.failure === undefined && this.last > 0 && this.snapIndex === this.last) {
      await recordCleanClose(this.snapDir, this.last).catch((err: unknown) => this.logger.warn({ err, dir: this.opts.dir }, 'WAL: could not record the clean close'));
    }
    await this.files?.close();
    this.files = undefined;
    this.phase = 'closed';
  }

  /** One group commit: stamp, roll if due, one frame written, one fdatasync, then deliver and acknowledge. */
  private async commit(batch: Pending<EncodedProposal>[]): Promise<void> {
    let entries: LogEntry[];
    const startedMs = this.observer === undefined ? 0 : performance.now();
    this.committing = true;
    let framed = false;
    try {
      const stamped = stampBatch(batch, this.last, this.entryClock.stamp(this.lastAtMs));
      entries = stamped.entries;
      await this.files!.rollIfFull(this.last + 1);
      framed = true;
      await this.files!.write(encodeFrame(stamped.payload, frameBytesMax));
    } catch (err) {
      await this.writeFailed(err, batch, framed);
      return;
    } finally {
      this.committing = false;
    }
    this.observer?.committed(entries.length, (performance.now() - startedMs) / 1000);
    this.publish(batch, entries);
    // After acknowledging, before the next commit: about once per MiB of log.
    try {
      await this.files!.preallocate();
    } catch (err) {
      await this.writeFailed(err, []);
    }
  }

  /**
   * A full disk (ENOSPC, EDQUOT), a shortage of file descriptors (EMFILE, ENFILE: a segment roll opens a
   * file) or a data dir the agent cannot use (EACCES, ENOTDIR, ...: see shortageOf) is waited out: the
   * batch and the queue are refused as unavailable, and a retry tries again to roll and reserve space. So is
   * a current segment lost while the log ran (SegmentLost: removed, moved, cut short): the retry writes the
   * log afresh (afresh.ts). Any other error fails the log for good.
   *
   * Nothing of a batch answered as refused or failed stays where the next start reads it: the bytes past the
   * last acknowledged commit (a frame partly written, or written and synced before a check failed) are cut,
   * durably, through the open file (no access to the dir needed), before the batch is answered. A removed
   * segment has no name left, one cut short is deleted when the log is written afresh, one moved away is cut
   * where it can be. A frame (`framed`: its write began) that cannot be cut back may still be read by the
   * next start: its batch's outcome is unknown, and it is answered so (OUTCOME_UNKNOWN), never as failed.
   */
  private async writeFailed(cause: unknown, batch: Pending<EncodedProposal>[], framed = false): Promise<void> {
    let found = this.classify(cause);
    // Appends are refused from here on, before anything is awaited: no commit starts while the tail is cut.
    if (found === undefined) this.fail(cause);
    else this.refuse(found);
    const loss = found?.err instanceof SegmentLost ? found.err.loss : undefined;
    let uncut: unknown;
    if (loss !== 'removed' && loss !== 'cut') {
      try {
        await (this.cutting = this.files!.restoreTail());
      } catch (again) {
        if (found !== undefined && loss === undefined && again instanceof SegmentLost) this.refuse(found = { err: again, shortage: 'files' });
        else if (loss === undefined) uncut = again;
      }
    }
    if (uncut !== undefined) this.fail(found?.err ?? cause);
    // Its cause (`uncut`) is logged with the writers' answer.
    const answer = uncut === undefined || !framed ? this.failure ?? this.refusal.error!
      : outcomeUnknownError(`${kind}: a commit whose write failed could not be cut back from its segment: it may still take effect`, uncut);
    for (const p of batch) p.reject(answer);
  }

  /** Appends are refused for `found` until a retry succeeds (logged once, and when what they wait for changes). */
  private refuse(found: Shortage): void {
    this.commits.rejectQueued(this.refusal.refuse(found));
    this.writable.tell(false);
    // A lost segment is written afresh at once: until then, the acknowledged writes it held are in memory only.
    this.scheduleSpaceRetry(found.shortage === 'files' ? 0 : undefined);
  }

  private scheduleSpaceRetry(delayMs?: number): void {
    if (this.phase === 'open') this.spaceRetry.schedule(delayMs);
  }

  /** What a failed file operation leaves the log short of (Refusal.classify); undefined: it fails the log. */
  private classify(err: unknown): Shortage | undefined {
    return this.refusal.classify(err, () => {
      const loss = this.files === undefined ? undefined : this.filesLost();
      return loss === undefined ? undefined : this.files!.lostError(loss);
    });
  }

  /** Tries again to roll if due and reserve the next MiB; no commit runs meanwhile (appends are refused). */
  private async retrySpace(): Promise<void> {
    if (this.refusal.error === undefined || this.failure !== undefined || this.phase !== 'open') return;
    try {
      await this.commits.idle();
      await this.cutting.catch(() => undefined);
      const loss = this.filesLost() ?? this.refusal.loss;
      if (loss !== undefined) {
        await this.writeAfresh(loss);
        this.refusal.loss = undefined;
      }
      await this.files!.rollIfFull(this.last + 1);
      await this.files!.preallocate();
    } catch (err) {
      const found = this.classify(err);
      if (found === undefined) this.fail(err);
      else {
        this.refusal.refuse(found);
        this.scheduleSpaceRetry();
      }
      return;
    }
    this.refusal.clear();
    this.logger.info({ dir: this.opts.dir }, 'WAL: writes are accepted again');
    this.writable.tell(true);
  }

  /**
   * How the current segment was lost (removed, moved, cut short), or 'removed' when the newest snapshot,
   * which the older entries were dropped for, is gone: the next start could not rebuild what was acknowledged.
   */
  private filesLost(): SegmentLoss | undefined {
    const loss = this.files!.checkPathNext().lost();
    if (loss !== undefined) return loss;
    return this.snapIndex > 0 && namedFile(join(this.snapDir, snapName(this.snapIndex))) === undefined ? 'removed' : undefined;
  }

  /**
   * Once a second while the log is open: an idle log notices a lost segment, or a data dir it cannot look
   * at (EACCES), before its next write. Nothing thrown here escapes the timer: it is a write failure.
   */
  private scheduleDirCheck(): void {
    this.dirCheck = this.opts.clock.setTimer(this.opts.dirCheckMs ?? 1000, () => {
      if (this.phase !== 'open') return;
      this.scheduleDirCheck();
      this.files?.checkPathNext();
      if (this.committing || this.refusal.error !== undefined || this.failure !== undefined) return;
      let failed: unknown;
      try {
        const loss = this.filesLost();
        if (loss !== undefined) failed = this.files!.lostError(loss);
      } catch (err) {
        failed = err;
      }
      if (failed !== undefined) this.writeFailed(failed, []).catch((err: unknown) => this.fail(err));
    });
  }

  /**
   * The current segment was lost while the log ran: what the runtime holds in memory is all there is.
   * Writes the state as of the last commit as a snapshot and goes on in a new segment after it
   * (afresh.ts). No commit runs meanwhile (appends are refused).
   */
  private async writeAfresh(loss: SegmentLoss): Promise<void> {
    await this.snapshots;
    const old = this.files!;
    this.files = await startAfresh({
      dir: this.opts.dir, walDir: this.walDir, snapDir: this.snapDir, segmentBytesMax: this.segmentBytesMax, last: this.last,
      source: this.source, reclaimDir: this.opts.reclaimDir, logger: this.logger,
    }, loss);
    this.snapIndex = this.last;
    await old.close().catch(() => undefined);
  }

  private publish(batch: Pending<EncodedProposal>[], entries: LogEntry[]): void {
    this.last = entries.at(-1)!.index;
    this.lastAtMs = entries.at(-1)!.atMs;
    this.attachments.committed(entries);
    deliverCommit(batch, entries, this.stats, this.listener, (err, b) => this.fail(err, b));
  }

  /**
   * Never acknowledge after a failed write: reject this batch and everything queued, refuse the rest. The
   * failure is logged once, with its cause.
   */
  private fail(cause: unknown, batch: Pending<EncodedProposal>[] = []): void {
    if (this.failure === undefined) {
      this.failure = failedError(kind, cause);
      this.logger.error({ err: cause, dir: this.opts.dir }, 'WAL failed');
    }
    this.refusal.clear();
    this.writable.tell(false);
    for (const p of batch) p.reject(this.failure);
    this.commits.rejectQueued(this.failure);
  }

  private async writeSnapshot(s: Snapshot): Promise<void> {
    // Checked again: an earlier save in the chain may have moved the newest snapshot past this one.
    const refused = snapshotRefusal(kind, s, this.last, this.snapIndex);
    if (refused !== undefined) throw refused;
    // A snapshot dir removed by hand is made again: the next snapshot then holds everything once more.
    await mkdir(this.snapDir, { recursive: true });
    await writeSnapshotFile(this.snapDir, s);
    this.snapIndex = s.index;
    const fallback = await pruneSnapshots(this.snapDir, s.index);
    // Only what the previous snapshot covers: if the newest one turns out unreadable, recovery falls back
    // to the previous one and needs the entries from there on.
    if (fallback !== undefined) await this.files!.compact(fallback);
    await this.attachments.covered(fallback ?? 0);
  }
}
