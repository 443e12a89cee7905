/**
 * The cluster's replicated log on NATS JetStream (DESIGN §3), composed of its pieces:
 *
 * * setup.ts: connect, find or create the stream (file storage, `replicas` copies) and the snapshot bucket;
 * * publisher.ts: each group commit is one message with a message id unique per commit, retried
 *   through timeouts and elections and stored once; ack-inbox.ts publishes it and reads its PubAck;
 * * committer.ts: the next commit publishes once the previous one is acknowledged (commits grow with
 *   the load); each is read back here before its appends resolve;
 * * reader.ts: every node reads the stream in order and numbers the commands it reads, so indexes stay
 *   dense however many commands a message carries (format.ts); the registry index is not the stream
 *   sequence;
 * * audit.ts: checks that what this node read is what the stream holds, and fails the log when not;
 * * snapshots.ts and marks.ts: snapshots in the object store, each recording the mark (stream seq ↔
 *   index) at or before its index, so a node opening from it starts consuming right after that message;
 * * leadership.ts: the stream's leader and replicas, asked in the background;
 * * progress.ts: each node's applied index and nats server, reported over core NATS every second
 *   (for `status()`: /v1/operator/log and the roles /v1/status and /v1/agent/self report).
 *
 * Entry time: the proposer stamps `t` from its clock when it forms the batch; every reader takes
 * `atMs = max(previous atMs, t)`, so atMs never decreases along the log and is the same on every
 * node (a snapshot records the atMs at its mark, so a node starting from it computes the same).
 *
 * Correctness never rests on JetStream's own compare-and-set (expected-sequence headers, KV
 * revisions): the log only orders commands; conditional writes are decided by apply (DESIGN §3).
 * Durability is what nats-server 2.9.10 gives: a PubAck means the message is in memory on a quorum
 * of the stream's replicas (2.9 has no sync_interval setting); it reaches disk shortly after.
 *
 * * compaction.ts: the stream is purged below the oldest mark a live node may still start from (each
 *   node reports it with its progress); single messages are never deleted (the stream is created with
 *   deny_delete), and indexes are counted from a snapshot's mark, so a purge renumbers nothing.
 */
import type { NatsConnection } from '@nats-io/transport-node';
import type {
  EntriesListener, Leadership, LogEntry, LogObserver, LogStatus, Proposal, ReplicatedLog, Snapshot,
} from '../../src/ports/index.ts';
import {
  appendTo, CommitQueue, checkAfterIndex, refusal, replayBatchEntriesMax, WritableListeners, type EncodedProposal, type Phase,
} from '../../src/log/index.ts';
import { AckInbox } from './ack-inbox.ts';
import { attachmentsOf, type Attachments } from './attachments.ts';
import { Committer } from './committer.ts';
import { Compactor, firstIndexOf, startCompactor } from './compaction.ts';
import { DivergenceAudit, storedMessageId } from './audit.ts';
import { StreamDigests } from './digests.ts';
import { LeadershipWatch } from './leadership.ts';
import { Marks } from './marks.ts';
import { listObjects } from './object-list.ts';
import { ProgressBoard, progressSubject } from './progress.ts';
import { emptyStats, inFlightMaxOf, kind, settingsOf, type JetStreamLogOptions, type JetStreamLogStats, type Settings } from './options.ts';
import { encodeForMessage, ownIdPrefixOf, Publisher } from './publisher.ts';
import { Reader } from './reader.ts';
import { errorMessage, retrying, retryPauseMsMax, settlesWithin, streamGone } from './retry.ts';
import { connectNats, openStores, type Stores } from './setup.ts';
import { SnapshotStore, startMark } from './snapshots.ts';
import { watchSettings } from './settings-watch.ts';
import { StorageWatch } from './storage-full.ts';
import { ReachWatch } from './reach-watch.ts';

export type { JetStreamLogOptions, JetStreamLogStats } from './options.ts';

/** After close() had to stop waiting for delivery, how long the commit in flight gets to settle. */
const closeSettleMs = 1000;

/** What open() builds once connected. */
interface Parts {
  stores: Stores;
  marks: Marks;
  audit: DivergenceAudit;
  digests: StreamDigests;
  reader: Reader;
  publisher: Publisher;
  snapshots: SnapshotStore;
  commits: CommitQueue<EncodedProposal>;
  committer: Committer;
  compactor: Compactor;
}

export class JetStreamLog implements ReplicatedLog {
  readonly stats: JetStreamLogStats = emptyStats();
  /** Told false once the stream is found deleted (it does not come back: Publisher's `gone`) and while storage is full (storage-full.ts). */
  private readonly writable = new WritableListeners();
  readonly stream: string;
  private readonly settings: Settings;
  private observer: LogObserver | undefined;
  /** Unique per process start: the start of each of this node's commit message ids. */
  private readonly ownIdPrefix: string;
  private readonly leadershipWatch = new LeadershipWatch();
  private readonly progress: ProgressBoard;
  private readonly reach: ReachWatch;

  private phase: Phase = 'new';
  private opening = false;
  private failure: Error | undefined;
  private closing: Promise<void> | undefined;
  /** Set when the consumer must stop for good (close or failure). */
  private stopped = false;
  private nc: NatsConnection | undefined;
  private parts: Parts | undefined;
  private listener: EntriesListener | undefined;
  /** Entries consumed before `subscribe`, kept for its replay. */
  private buffered: LogEntry[] = [];
  private readonly attachments: Attachments;
  /** The stream's creation time, read when the log opens. */
  private streamCreated: string | undefined;
  /** A snapshot of the node's state, for when the log needs one (the snapshot bucket made again). */
  private source: (() => Snapshot) | undefined;

  constructor(private readonly opts: JetStreamLogOptions) {
    this.settings = settingsOf(opts);
    this.stream = this.settings.stream;
    this.attachments = attachmentsOf(this.settings, () => this.parts!.stores);
    this.observer = opts.observer;
    this.ownIdPrefix = ownIdPrefixOf(opts.nodeName);
    this.reach = new ReachWatch(this.stream, this.settings.logger, this.settings.unreachableAfterMs);
    this.progress = new ProgressBoard(this.settings.nodeName, () => ({
      server: this.serverName(), appliedIndex: this.lastIndex(), serverVersion: this.nc?.info?.version,
      startFrom: this.parts?.snapshots.oldestStart, compacted: this.parts?.compactor.compacted, digests: this.parts?.digests.latest(),
    }), (node, digests) => this.parts?.digests.heardFrom(node, digests));
  }

  // ---- ReplicatedLog ----------------------------------------------------------------------------

  async open(): Promise<Snapshot | undefined> {
    if (this.phase !== 'new' || this.opening) throw new Error(`${kind}.open: already opened`);
    this.opening = true;
    const deadline = performance.now() + this.settings.openTimeoutMs;
    // Waited for until the deadline, as the steps after it are: the nats-servers may start after the node.
    const nc = await retrying(this.settings.logger, `connecting to the nats-servers ${this.settings.servers.join(',')}`, deadline,
      () => connectNats(this.settings.servers, this.settings.nodeName, this.settings.auth), this.settings.openTimeoutMs);
    this.nc = nc;
    try {
      const snapshot = await this.setUp(nc, deadline);
      this.phase = 'open';
      this.reach.start();
      this.watchConnection(nc);
      return snapshot;
    } catch (err) {
      this.stopped = true;
      this.parts?.reader.stop();
      this.leadershipWatch.stop();
      this.progress.stop();
      this.parts?.compactor.stop();
      await nc.close().catch(() => undefined);
      this.phase = 'closed';
      throw err;
    }
  }

  subscribe(afterIndex: number, listener: EntriesListener): void {
    if (this.phase !== 'open') throw new Error(`${kind}.subscribe: log is not open`);
    if (this.listener !== undefined) throw new Error(`${kind}.subscribe: the log has a single consumer`);
    checkAfterIndex(kind, afterIndex, this.lastIndex());
    const skipThrough = this.parts!.reader.skipThrough;
    if (afterIndex < skipThrough) {
      throw new RangeError(`${kind}.subscribe: entries after ${afterIndex} are not kept: this node opened from `
        + `the snapshot at ${skipThrough}; subscribe from there`);
    }
    const replay = this.buffered.filter((e) => e.index > afterIndex);
    this.buffered = [];
    try {
      for (let k = 0; k < replay.length; k += replayBatchEntriesMax) listener(replay.slice(k, k + replayBatchEntriesMax));
    } catch (err) {
      this.fail(err);
      throw err;
    }
    this.listener = listener;
  }

  append(proposals: readonly Proposal[]): Promise<void> {
    const parts = this.parts;
    return appendTo(kind, this.phase, this.failure, parts?.commits, proposals,
      (ps) => encodeForMessage(ps, parts!.stores.bytesMax));
  }

  saveSnapshot(snapshot: Snapshot): Promise<void> {
    const refused = refusal(kind, this.phase, this.failure) ?? this.parts!.snapshots.refusal(snapshot, this.lastIndex());
    if (refused !== undefined) return Promise.reject(refused);
    const { snapshots, marks } = this.parts!;
    return snapshots.save(snapshot, () => this.lastIndex(), marks);
  }

  snapshotSource(source: () => Snapshot): void { this.source = source; }

  lastIndex(): number { return this.parts?.reader.cursor.index ?? 0; }

  /** The bytes of the stream messages this node read since it opened; a snapshot is due after snapshotDueBytes of them. */
  written(): { bytes: number; snapshotDueBytes: number } { return { bytes: this.stats.bytesConsumed, snapshotDueBytes: this.settings.snapshotDueBytes }; }

  observe(observer: LogObserver): void {
    this.observer = observer;
  }

  close(): Promise<void> {
    this.closing ??= this.shutdown();
    return this.closing;
  }

  /** Bytes too large for a message, in the object store (see attachments.ts); resolves with the name an entry carries. */
  storeAttachment(bytes: Buffer, sha256: string): Promise<string> {
    if (this.parts === undefined) return Promise.reject(new Error(`${kind}: not open yet, call open() first`));
    return this.attachments.put(bytes, sha256);
  }

  /** The bytes an entry names, fetched before the entry was delivered. */
  loadAttachment(name: string): Buffer {
    return this.attachments.take(name);
  }

  onWritable(listener: (writable: boolean) => void): void {
    this.writable.add(listener);
  }

  /** Told false when the stream has not answered this node for `unreachableAfterMs`, true when it answers again (reach-watch.ts). */
  onReachable(listener: (reachable: boolean) => void): void {
    this.reach.onChange(listener);
  }

  /** The stream's name and creation time: a stream deleted and created again under the same name is another log. */
  identity(): string | undefined {
    return this.streamCreated === undefined ? undefined : `${this.stream}@${this.streamCreated}`;
  }

  /** The stream's leader and replicas, for /v1/status and the index headers. */
  leadership(): Leadership {
    return this.leadershipWatch.current();
  }

  /**
   * Indexes, the stream's copies (as last asked in the background) and each node's reported progress.
   * The compaction point is index 1 while the stream still holds its first message; after a purge, the
   * index after the mark it was purged below, as the purging node reports it (unknown until then).
   */
  status(): LogStatus {
    const seen = this.leadershipWatch.streamSeen();
    return {
      kind: 'jetstream', lastIndex: this.lastIndex(), firstIndex: firstIndexOf(seen.firstSeq, this.progress.marks(), this.parts?.compactor.recent),
      snapshotIndex: this.parts?.snapshots.newest ?? 0,
      stream: {
        name: this.stream, leader: this.leadershipWatch.current().leader, replicas: seen.replicas,
        firstSeq: seen.firstSeq, lastSeq: seen.lastSeq, messages: seen.messages,
        server: this.serverName(), askedAgoMs: seen.askedAtMs === 0 ? 0 : Math.max(0, performance.now() - seen.askedAtMs),
      },
      nodes: this.progress.nodes(),
    };
  }

  /** The nats server this node is (or, while reconnecting, was last) connected to; '' once closed. */
  private serverName(): string {
    const nc = this.nc;
    return nc === undefined || nc.isClosed() ? '' : nc.info?.server_name ?? '';
  }

  // ---- open -------------------------------------------------------------------------------------

  /** Stream, bucket, snapshot, consumer, catch-up: everything open() does once connected. */
  private async setUp(nc: NatsConnection, deadline: number): Promise<Snapshot | undefined> {
    const s = this.settings;
    const stores = await openStores(nc, s, deadline);
    const { info, subject, strictSeq } = stores.stream;
    this.streamCreated = info.created;
    const snapshots = new SnapshotStore({
      store: stores.store, objects: () => listObjects(stores.jsm, s.bucket), stream: s.stream, nodeName: s.nodeName, logger: s.logger, streamCreated: info.created,
      publishTimeoutMs: s.publishTimeoutMs, openTimeoutMs: s.openTimeoutMs,
    });
    // Reporting from now on: until this node knows its start mark, its report holds compaction back, so
    // the messages after the snapshot it is choosing are not purged under it.
    this.progress.start(nc, progressSubject(s.stream));
    const record = await snapshots.startFrom(info, deadline);
    const start = startMark(info, record, s.stream);
    const marks = new Marks(start);
    const stopped = (): boolean => this.stopped;
    const audit = new DivergenceAudit({
      stream: s.stream, logger: s.logger, ownIdPrefix: this.ownIdPrefix, storedId: storedMessageId(stores.jsm, s.stream),
      purged: async (seq) => {
        const now = await stores.jsm.streams.info(s.stream);
        return now.config.deny_delete === true && seq < now.state.first_seq;
      },
      stopped, diverged: (err) => this.diverged(err),
    });
    const digests = new StreamDigests({
      verify: (reads) => audit.verify(reads),
      mismatch: (w, other, theirs) => s.logger.warn({ stream: s.stream, windowEnd: w.end, sha: w.sha, other, theirs },
        'JetStream log: another node read a window of the stream differently; checking this node\'s reads against the stream\'s leader'),
    }, start.seq);
    const reader = new Reader({
      js: stores.js, stream: s.stream, subject, strictSeq, consumerExpiresMs: s.consumerExpiresMs, stats: this.stats,
      logger: s.logger, marks, audit, digests, stopped, failure: () => this.failure, fail: (cause) => this.fail(cause),
      cannotFollow: (err) => this.diverged(err),
      fellBehind: (err) => this.diverged(err),
      deliver: (entries) => this.deliver(entries), attachments: this.attachments,
    }, start, record?.index ?? 0);
    const acks = new AckInbox(nc);
    const storage = new StorageWatch({
      stream: s.stream, logger: s.logger, probeEveryMs: retryPauseMsMax, tell: (w) => this.writable.tell(w),
      probe: (): Promise<void> => committer.commit([]), stopped: () => this.stopped || this.closing !== undefined,
    });
    const publisher = new Publisher({
      js: acks, stream: s.stream, subject, publishTimeoutMs: s.publishTimeoutMs, publishRetryMsMax: s.publishRetryMsMax,
      stats: this.stats, logger: s.logger, failed: () => this.failure !== undefined, observer: () => this.observer,
      streamGone: () => streamGone(stores.jsm, s.stream), onGone: () => this.writable.tell(false), storage, answered: () => this.reach.answered(),
    }, this.ownIdPrefix);
    const committer = new Committer({ reader, publisher, audit, clock: this.opts.clock, failure: () => this.failure });
    const commits = new CommitQueue<EncodedProposal>(kind, {
      entriesMax: s.batchEntriesMax, bytesMax: stores.bytesMax, queuedEntriesMax: s.queuedEntriesMax, inFlightMax: inFlightMaxOf(s),
      lingerMs: s.commitLingerMs,
    }, (batch) => committer.commit(batch));
    const saveNow = (): void => snapshots.saveNow(this.source, (snapshot) => this.saveSnapshot(snapshot));
    const compactor = new Compactor({
      stream: s.stream, nodeName: s.nodeName, logger: s.logger, nodes: () => this.progress.marks(),
      firstSeq: () => this.leadershipWatch.streamSeen().firstSeq,
      purgeBelow: async (seq) => (await stores.jsm.streams.purge(s.stream, { seq })).purged,
      covered: (seq) => stores.store.covers(s.stream, seq), newestSnapshotSeq: () => snapshots.newestSeq, saveNow,
    });
    stores.store.onRemade(() => { snapshots.bucketRemade(); saveNow(); });
    this.parts = { stores, marks, audit, digests, reader, publisher, snapshots, commits, committer, compactor };
    reader.start();
    this.leadershipWatch.start(() => stores.jsm.streams.info(s.stream), info, this.reach.answering(watchSettings(s, s.logger, stores.stream.differs)));
    if (s.compactEveryMs > 0) startCompactor(compactor, s, nc.info?.version);
    // Catching up gets a full open timeout of its own: reading a snapshot may have used the first.
    await reader.catchUp(info.state.last_seq, Math.max(deadline, performance.now() + s.openTimeoutMs), s.openTimeoutMs);
    if (reader.cursor.index < reader.skipThrough) {
      throw new Error(`${kind}: stream ${s.stream} ends at index ${reader.cursor.index}, before the snapshot at ${reader.skipThrough}`);
    }
    return record === undefined ? undefined : { index: record.index, data: record.data };
  }

  /** A connection that closes without close() (it never should: reconnects are unlimited) fails the log. */
  private watchConnection(nc: NatsConnection): void {
    void nc.closed().then((err) => {
      if (this.closing === undefined) this.fail(err ?? new Error('NATS connection closed'));
    });
  }

  // ---- reading ----------------------------------------------------------------------------------

  private deliver(entries: LogEntry[]): void {
    this.reach.answered();
    if (this.listener === undefined) {
      this.buffered.push(...entries);
      return;
    }
    try {
      this.listener(entries);
    } catch (err) {
      this.fail(err);
    }
  }

  // ---- failure and close ------------------------------------------------------------------------

  /** The consumer missed entries (a listener threw, messages vanished): stop taking appends. */
  private fail(cause: unknown): void {
    if (this.failure !== undefined) return;
    this.failure = new Error(`${kind} ${this.stream} failed, no further appends are accepted: ${errorMessage(cause)}`, { cause });
    this.settings.logger.error({ stream: this.stream, err: errorMessage(cause) }, 'JetStream log failed');
    this.stopped = true;
    this.parts?.reader.stop();
    this.parts?.reader.rejectWaiters(this.failure);
    this.parts?.commits.rejectQueued(this.failure);
  }

  /** The node's state has left the stream's: the log fails and `onDiverged` is told. */
  private diverged(err: Error): void {
    if (this.failure !== undefined) return;
    this.fail(err);
    this.opts.onDiverged?.(err);
  }

  private async shutdown(): Promise<void> {
    this.leadershipWatch.stop();
    this.reach.stop();
    this.progress.stop();
    this.parts?.compactor.stop();
    if (this.phase === 'new') {
      this.phase = 'closed';
      return;
    }
    if (this.phase === 'open') this.phase = 'closing';
    const { publishRetryMsMax, publishTimeoutMs } = this.settings;
    const idle = async (): Promise<void> => {
      await this.parts?.commits.idle();
      await this.parts?.committer.confirmed();
    };
    // Queued appends are committed, not dropped. A commit waits for its publish (bounded by the
    // retries) and then for the consumer; if the consumer cannot get there, stop waiting for it.
    const flushed = await settlesWithin(idle(), publishRetryMsMax + 2 * publishTimeoutMs);
    if (!flushed) {
      this.parts?.reader.rejectWaiters(new Error(`${kind}: closed before the commit was read back (it is stored in the stream)`));
      await settlesWithin(idle(), closeSettleMs);
    }
    await this.parts?.snapshots.settled();
    this.stopped = true;
    this.parts?.reader.stop();
    await this.parts?.reader.finish();
    await this.nc?.drain().catch(() => undefined);
    this.phase = 'closed';
  }
}
