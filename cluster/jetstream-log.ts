/**
 * The cluster's replicated log on NATS JetStream (DESIGN §3).
 *
 * One stream (file storage, `replicas` copies) is the log. Each group commit is one message on the
 * stream's subject whose payload is a JSON array of proposals, `[{"p":pid,"c":cmd,"t":atMs},...]`,
 * with a `Nats-Msg-Id` header unique per commit (node name, boot id, counter) so that a publish
 * retried after a lost PubAck is stored once: JetStream drops the duplicate within the stream's
 * duplicate window and acknowledges it with the original sequence.
 *
 * The registry index is not the stream sequence. Every node reads the stream in order with an
 * ordered consumer and numbers the commands it reads consecutively (index = previous index + 1 for
 * each command of each message), so indexes stay dense however many commands a message carries.
 * Each node keeps the mapping "stream seq of a consumed message ↔ index of its last command" (a
 * `Mark`); a snapshot records the mark at or before its index, so a node that opens from it starts
 * consuming right after that message and skips the commands the snapshot already covers.
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
 * Snapshots go to an object store (chunked, so a large state fits), one object per node and stream
 * (`<stream>/<node>`); open() loads the newest of them, whichever node wrote it.
 *
 * Stream messages are never purged or deleted (the stream is created with deny_delete): a node that
 * is behind, or opens from an older snapshot, must still find every message after its mark, and a
 * removed message would shift every index counted after it. Safe compaction needs to know the
 * oldest mark any node may still start from; it is left for later.
 */
import { randomBytes } from 'node:crypto';
import { setTimeout as sleep } from 'node:timers/promises';
import {
  AuthorizationError, ClosedConnectionError, connect, DrainingConnectionError, InvalidArgumentError, nanos,
  PermissionViolationError, type NatsConnection,
} from '@nats-io/transport-node';
import {
  DiscardPolicy, JetStreamApiCodes, JetStreamApiError, jetstream, jetstreamManager, RetentionPolicy, StorageType,
  type Consumer, type ConsumerMessages, type JetStreamClient, type JetStreamManager, type JsMsg, type PubAck,
  type StreamConfig, type StreamInfo,
} from '@nats-io/jetstream';
import { Objm, type ObjectStore } from '@nats-io/obj';
import {
  silentLogger, type Clock, type EntriesListener, type Leadership, type LogEntry, type Logger, type LogObserver,
  type Proposal, type ReplicatedLog, type Snapshot,
} from '../src/ports/index.ts';
import {
  CommitQueue, checkAfterIndex, encodeProposal, positiveIntOption, queuedEntriesMaxDefault, refusal,
  replayBatchEntriesMax, snapshotRefusal, stampMs, type EncodedProposal, type Pending, type Phase,
} from '../src/log/index.ts';
import { backoffMs, parseCommitMessage, parseSnapshotRecord, type Mark, type SnapshotRecord } from './jetstream-format.ts';


export interface JetStreamLogOptions {
  /** NATS urls (`nats://host:port`); the client connects to one and reconnects to any of them. */
  servers: string[];
  /** The stream that is the log. @default 'ROSTER_LOG' */
  stream?: string;
  /** The stream's subject, where commits are published. @default `roster.log.<stream>` */
  subject?: string;
  /** Copies of the stream and of the snapshot bucket, when this node creates them. @default 3 */
  replicas?: number;
  /** Stamps each commit's time; retries and timeouts use real time, not this clock. */
  clock: Clock;
  /** This node's name: in commit message ids, the snapshot object's name and the connection name. */
  nodeName: string;
  /** @default silent */
  logger?: Logger;
  /** Object store bucket holding the snapshots. @default 'ROSTER_SNAPSHOTS' */
  snapshotBucket?: string;
  /** Most entries in one commit (one message). @default 4096 */
  batchEntriesMax?: number;
  /**
   * Most entries waiting for the next commit while one is in flight. An append that would pass it is
   * rejected at once with an error whose `code` is 'LOG_OVERLOADED'; one larger than it with a
   * RangeError. Same rule as the WAL. @default 65536
   */
  queuedEntriesMax?: number;
  /**
   * Commits published and not yet read back at once. Each is its own message with its own id, so
   * they may be stored in any order; indexes are counted while consuming, and atMs never decreases
   * there, so the log stays the same on every node. @default 8
   */
  publishesInFlightMax?: number;
  /** How long one publish attempt waits for its PubAck. @default 5000 */
  publishTimeoutMs?: number;
  /**
   * How long a commit keeps retrying its publish (same message id, backoff) through timeouts and
   * leader elections before its appends are rejected. @default 30000
   */
  publishRetryMsMax?: number;
  /**
   * Lifetime of one pull request of the consumer; the server sends idle heartbeats every half of it,
   * and two missed heartbeats make the consumer check itself and recreate. @default 5000
   */
  consumerExpiresMs?: number;
  /**
   * Called when the stream no longer holds a message this node already applied (see verifyCursor): the
   * node's state has left the log's, and only a restart (a replay from the stream) brings it back. The
   * log has failed by then; the caller should stop the process. @default none (the log just fails)
   */
  onDiverged?: (err: Error) => void;
  /** How long open() may take: connect, create the stream and bucket, load the snapshot, catch up. @default 30000 */
  openTimeoutMs?: number;
  /** Told each of this node's commits, its size and its publish time (metrics); also settable with `observe`. @default none */
  observer?: LogObserver;
}

/** Counters for tests and metrics. */
export interface JetStreamLogStats {
  /** Commits published and acknowledged by this node (duplicates included). */
  commits: number;
  /** Entries in those commits. */
  entries: number;
  /** Publish attempts repeated after a failure (timeout, no responders). */
  publishRetries: number;
  /** PubAcks that said the message was a duplicate of one already stored: a retry after a lost ack. */
  duplicates: number;
  /** Stream messages this node consumed (its own and other nodes'). */
  messagesConsumed: number;
  /** Messages that were not a commit and were skipped (every node skips the same ones). */
  messagesSkipped: number;
  /** Times the consumer was (re)created by this log after it stopped, the first start included. */
  consumerStarts: number;
  /** Times the ordered consumer recreated itself after a gap, a missed heartbeat or a reconnect. */
  consumerResets: number;
}

/** How often the stream's leadership is asked. */
const leadershipPollMs = 2_000;
/** Client pings to its server: a silent server (partitioned, paused) is left after about 2 s × 3. */
const natsPingIntervalMs = 2_000;
const natsMaxPingOut = 3;
/** Unanswered leadership requests in a row after which the leader is taken as unknown. */
const leadershipFailuresMax = 3;
const kind = 'JetStreamLog';
const streamDefault = 'ROSTER_LOG';
const snapshotBucketDefault = 'ROSTER_SNAPSHOTS';
/** JetStream drops a repeated message id within this window; it must outlast a commit's retries. */
const duplicateWindowMsMin = 120_000;
/** Bytes kept free in a message for the headers (message id) and the protocol line. */
const messageHeadroomBytes = 1024;
/** JetStream's error code for "stream name already in use" (not in the client's JetStreamApiCodes). */
const streamNameInUseCode = 10058;
/** Messages one pull request of the consumer asks for. */
const consumerBatchMessages = 256;
/**
 * Heartbeat intervals without a word from the consumer's server after which the consumer is
 * replaced (its server is likely gone). The client checks on it after two; this is the backstop.
 */
const consumerSilentHeartbeatsMax = 4;
/** Messages read last that are remembered ([seq, message id]), and how many of them are checked after a client-side recreation. */
const recentReadMax = 64;
const recentAuditMax = 16;
/** Own commits read and awaiting their commit()'s check, at most (more than the commits in flight can be). */
const ownReadMax = 65_536;
/** Consumer notifications that only come from a live server. */
const aliveSignals: ReadonlySet<string> = new Set(['heartbeat', 'discard', 'debug', 'flow_control', 'ordered_consumer_recreated']);
/** Marks kept between snapshots; above it every other one is dropped (a snapshot then replays a little more). */
const marksMax = 4096;
/** Pause between restarts of a consumer that stopped, and between retries of a setup step, at most. */
const retryPauseMsMax = 2000;
/** After close() had to stop waiting for delivery, how long the commit in flight gets to settle. */
const closeSettleMs = 1000;

export class JetStreamLog implements ReplicatedLog {
  readonly stats: JetStreamLogStats = {
    commits: 0, entries: 0, publishRetries: 0, duplicates: 0, messagesConsumed: 0, messagesSkipped: 0,
    consumerStarts: 0, consumerResets: 0,
  };
  readonly stream: string;
  private subject: string;
  private readonly replicas: number;
  private readonly logger: Logger;
  private observer: LogObserver | undefined;
  private readonly bucket: string;
  private readonly publishTimeoutMs: number;
  private readonly publishRetryMsMax: number;
  private readonly consumerExpiresMs: number;
  private readonly openTimeoutMs: number;
  private readonly batchEntriesMax: number;
  private readonly queuedEntriesMax: number;
  /** Unique per process start: with the node name and a counter it makes each commit's message id. */
  private readonly bootId = randomBytes(6).toString('hex');
  private commitCounter = 0;

  private phase: Phase = 'new';
  private opening = false;
  private failure: Error | undefined;
  private closing: Promise<void> | undefined;
  /** Set when the consumer must stop for good (close or failure). */
  private stopped = false;

  private nc: NatsConnection | undefined;
  /** The stream's leadership as last asked (refreshed in the background; read synchronously). */
  private seenLeadership: Leadership = { leader: undefined, peers: [], lastContactMs: 0 };
  private leadershipTimer: NodeJS.Timeout | undefined;
  private js: JetStreamClient | undefined;
  private store: ObjectStore | undefined;
  private commits: CommitQueue<EncodedProposal> | undefined;
  /** Most bytes of entries in one commit message (from the server's max_payload). */
  private bytesMax = 0;
  /** Stream creation time: a snapshot taken on another incarnation of the stream is not used. */
  private streamCreated = '';
  /** True when the stream carries only our subject: then a jump in sequence numbers is lost data. */
  private strictSeq = true;

  private consumer: Consumer | undefined;
  private messages: ConsumerMessages | undefined;
  private following: Promise<void> | undefined;
  /** When the server last showed the consumer is alive (a message, a heartbeat, an expired pull). */
  private aliveAtMs = 0;

  /** The last consumed message. */
  private cursor: Mark = { seq: 0, index: 0, atMs: 0 };
  /** The last messages read, as [seq, message id], oldest first (at most `recentReadMax`). */
  private recentRead: [number, string][] = [];
  /** This node's own commits read and not yet confirmed by their commit(): message id → the sequence they were read at. */
  private readonly ownReadAt = new Map<string, number>();
  /**
   * The check of the last messages read after the client re-created its consumer by itself; commits wait
   * for it before they resolve (resolves false when it found a divergence).
   */
  private auditing: Promise<boolean> = Promise.resolve(true);
  private jsm: JetStreamManager | undefined;
  /** Marks of consumed messages, oldest first; marks[0] is at or before the newest snapshot. */
  private marks: Mark[] = [];
  /** Commands up to this index are covered by the snapshot open() returned and are not delivered. */
  private skipThrough = 0;
  /** Index of the newest snapshot loaded or saved. */
  private snapIndex = 0;
  private listener: EntriesListener | undefined;
  /** Entries consumed before `subscribe`, kept for its replay. */
  private buffered: LogEntry[] = [];
  /** Promises waiting for the consumer to pass a stream sequence. */
  private waiters: { seq: number; resolve(): void; reject(err: Error): void }[] = [];
  /** Snapshot saves run one at a time. */
  private snapshots: Promise<void> = Promise.resolve();

  constructor(private readonly opts: JetStreamLogOptions) {
    if (!Array.isArray(opts.servers) || opts.servers.length === 0) throw new RangeError(`${kind}: servers must list at least one url`);
    if (typeof opts.nodeName !== 'string' || opts.nodeName === '') throw new RangeError(`${kind}: nodeName is required`);
    this.stream = opts.stream ?? streamDefault;
    this.subject = opts.subject ?? `roster.log.${this.stream}`;
    this.replicas = positiveIntOption(kind, 'replicas', opts.replicas, 3, 5);
    this.logger = opts.logger ?? silentLogger;
    this.observer = opts.observer;
    this.bucket = opts.snapshotBucket ?? snapshotBucketDefault;
    this.publishTimeoutMs = positiveIntOption(kind, 'publishTimeoutMs', opts.publishTimeoutMs, 5000);
    this.publishRetryMsMax = positiveIntOption(kind, 'publishRetryMsMax', opts.publishRetryMsMax, 30_000);
    this.consumerExpiresMs = positiveIntOption(kind, 'consumerExpiresMs', opts.consumerExpiresMs, 5000);
    if (this.consumerExpiresMs < 1000) throw new RangeError(`${kind}: consumerExpiresMs must be at least 1000`);
    this.openTimeoutMs = positiveIntOption(kind, 'openTimeoutMs', opts.openTimeoutMs, 30_000);
    this.batchEntriesMax = positiveIntOption(kind, 'batchEntriesMax', opts.batchEntriesMax, 4096);
    this.queuedEntriesMax = positiveIntOption(kind, 'queuedEntriesMax', opts.queuedEntriesMax, queuedEntriesMaxDefault);
  }

  // ---- ReplicatedLog ----------------------------------------------------------------------------

  async open(): Promise<Snapshot | undefined> {
    if (this.phase !== 'new' || this.opening) throw new Error(`${kind}.open: already opened`);
    this.opening = true;
    const deadline = Date.now() + this.openTimeoutMs;
    const nc = await connect({
      servers: this.opts.servers,
      name: `roster-${this.opts.nodeName}`,
      maxReconnectAttempts: -1,
      reconnectTimeWait: 250,
      // A server cut off without closing the socket (a partition) is noticed after about
      // pingInterval × maxPingOut and the client moves to another server; nats.js's default is 2 minutes
      // per ping, during which every write of this node would time out (seen in the partition fault test).
      pingInterval: natsPingIntervalMs,
      maxPingOut: natsMaxPingOut,
      // nats.js otherwise builds an Error (a stack capture) ahead of every request in case it fails:
      // several per cent of a cluster node's busy time under load (profiled); a failure's own error says enough.
      noAsyncTraces: true,
    });
    this.nc = nc;
    try {
      const snapshot = await this.setUp(nc, deadline);
      this.phase = 'open';
      this.watchConnection(nc);
      return snapshot;
    } catch (err) {
      this.stopped = true;
      this.messages?.stop();
      await nc.close().catch(() => undefined);
      this.phase = 'closed';
      throw err;
    }
  }

  subscribe(afterIndex: number, listener: EntriesListener): void {
    if (this.phase !== 'open') throw new Error(`${kind}.subscribe: log is not open`);
    if (this.listener !== undefined) throw new Error(`${kind}.subscribe: the log has a single consumer`);
    checkAfterIndex(kind, afterIndex, this.lastIndex());
    if (afterIndex < this.skipThrough) {
      throw new RangeError(`${kind}.subscribe: entries after ${afterIndex} are not kept: this node opened from `
        + `the snapshot at ${this.skipThrough}; subscribe from there`);
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
    const refused = refusal(kind, this.phase, this.failure);
    if (refused !== undefined) return Promise.reject(refused);
    if (proposals.length === 0) return Promise.resolve();
    const commits = this.commits!;
    const full = commits.refusal(proposals.length);
    if (full !== undefined) return Promise.reject(full);
    try {
      const items = proposals.map((p) => encodeProposal(p, this.bytesMax));
      const bytes = items.reduce((sum, p) => sum + p.bytes, 0);
      if (bytes > this.bytesMax) {
        throw new RangeError(`${kind}: an append of ${items.length} proposals needs ${bytes} bytes, above the `
          + `${this.bytesMax}-byte commit limit (the server's max_payload; one append is one message); split it`);
      }
      return commits.enqueue(items, bytes);
    } catch (err) {
      return Promise.reject(err);
    }
  }

  saveSnapshot(snapshot: Snapshot): Promise<void> {
    const refused = refusal(kind, this.phase, this.failure)
      ?? snapshotRefusal(kind, snapshot, this.lastIndex(), this.snapIndex);
    if (refused !== undefined) return Promise.reject(refused);
    const run = this.snapshots.then(() => this.writeSnapshot(snapshot));
    this.snapshots = run.catch(() => undefined);
    return run;
  }

  lastIndex(): number {
    return this.cursor.index;
  }

  observe(observer: LogObserver): void {
    this.observer = observer;
  }

  close(): Promise<void> {
    this.closing ??= this.shutdown();
    return this.closing;
  }

  // ---- open -------------------------------------------------------------------------------------

  /** Stream, bucket, snapshot, consumer, catch-up: everything open() does once connected. */
  private async setUp(nc: NatsConnection, deadline: number): Promise<Snapshot | undefined> {
    const jsm = await this.retrying('JetStream', deadline, () => jetstreamManager(nc, { timeout: this.publishTimeoutMs }));
    this.jsm = jsm;
    this.js = jetstream(nc, { timeout: this.publishTimeoutMs });
    const info = await this.retrying(`stream ${this.stream}`, deadline, () => this.ensureStream(jsm));
    this.store = await this.retrying(`bucket ${this.bucket}`, deadline,
      () => new Objm(this.js!).create(this.bucket, { replicas: this.replicas, storage: StorageType.File }));
    const record = await this.snapshotToStartFrom(info, deadline);
    this.startFrom(info, record);
    this.bytesMax = Math.max(1, (nc.info?.max_payload ?? 1024 * 1024) - messageHeadroomBytes);
    this.commits = new CommitQueue(kind, {
      entriesMax: this.batchEntriesMax,
      bytesMax: this.bytesMax,
      queuedEntriesMax: this.queuedEntriesMax,
      inFlightMax: positiveIntOption(kind, 'publishesInFlightMax', this.opts.publishesInFlightMax, 8),
    }, (batch) => this.commit(batch));
    this.following = this.follow();
    this.watchLeadership(jsm, info);
    // Catching up gets a full open timeout of its own: reading a snapshot may have used the first.
    await this.catchUp(info.state.last_seq, Math.max(deadline, Date.now() + this.openTimeoutMs));
    if (this.cursor.index < this.skipThrough) {
      throw new Error(`${kind}: stream ${this.stream} ends at index ${this.cursor.index}, before the snapshot at ${this.skipThrough}`);
    }
    return record === undefined ? undefined : { index: record.index, data: record.data };
  }

  /** Creates the stream if missing; an existing one is used as it is (differences are logged). */
  private async ensureStream(jsm: JetStreamManager): Promise<StreamInfo> {
    const want: Partial<StreamConfig> & { name: string } = {
      name: this.stream,
      subjects: [this.subject],
      storage: StorageType.File,
      num_replicas: this.replicas,
      retention: RetentionPolicy.Limits,
      discard: DiscardPolicy.Old,
      duplicate_window: nanos(this.duplicateWindowMs()),
      // Indexes are counted from the messages: deleting one would renumber everything after it.
      deny_delete: true,
    };
    let info: StreamInfo;
    try {
      info = await jsm.streams.info(this.stream);
    } catch (err) {
      if (!isApiError(err, JetStreamApiCodes.StreamNotFound)) throw err;
      try {
        info = await jsm.streams.add(want);
        this.logger.info({ stream: this.stream, subject: this.subject, replicas: this.replicas }, 'JetStream log: created the stream');
      } catch (addErr) {
        // Another node created it between our info and add: use theirs.
        if (!isApiError(addErr, streamNameInUseCode)) throw addErr;
        info = await jsm.streams.info(this.stream);
      }
    }
    this.adoptStream(info);
    return info;
  }

  /** Takes an existing stream's settings as they are, saying where they differ from ours. */
  private adoptStream(info: StreamInfo): void {
    const c = info.config;
    const differs: Record<string, unknown> = {};
    if (c.storage !== StorageType.File) differs.storage = c.storage;
    if (c.num_replicas !== this.replicas) differs.replicas = c.num_replicas;
    if ((c.duplicate_window ?? 0) < nanos(this.publishRetryMsMax + this.publishTimeoutMs)) differs.duplicateWindowNs = c.duplicate_window;
    if (!c.subjects.includes(this.subject)) {
      const only = c.subjects.length === 1 ? c.subjects[0]! : undefined;
      if (only === undefined || /[*>]/.test(only)) {
        throw new Error(`${kind}: stream ${this.stream} exists without the subject ${this.subject} (it has ${c.subjects.join(', ')})`);
      }
      differs.subject = only;
      this.subject = only;
    }
    if (Object.keys(differs).length > 0) {
      this.logger.warn({ stream: this.stream, differs }, 'JetStream log: using the existing stream as it is, its settings differ from ours');
    }
    this.strictSeq = c.subjects.length === 1;
    this.streamCreated = info.created;
  }

  private duplicateWindowMs(): number {
    return Math.max(duplicateWindowMsMin, 2 * (this.publishRetryMsMax + this.publishTimeoutMs));
  }

  /** The newest readable snapshot of this stream, from any node; undefined if there is none. */
  private async loadSnapshot(info: StreamInfo): Promise<SnapshotRecord | undefined> {
    const store = this.store!;
    const prefix = `${this.stream}/`;
    const candidates = (await store.list())
      .filter((o) => o.name.startsWith(prefix) && !o.deleted)
      // Newest first by the index in the object's metadata; one without a readable index last.
      .map((o) => ({ name: o.name, index: Number(o.metadata?.index ?? -1) || -1 }))
      .sort((x, y) => y.index - x.index);
    for (const { name } of candidates) {
      const blob = await store.getBlob(name);
      const record = blob === null ? 'vanished' : parseSnapshotRecord(Buffer.from(blob).toString('utf8'));
      const why = typeof record === 'string' ? record : this.unusable(record, info);
      if (why === undefined) {
        this.logger.info({ stream: this.stream, object: name, index: (record as SnapshotRecord).index }, 'JetStream log: loaded a snapshot');
        return record as SnapshotRecord;
      }
      this.logger.warn({ stream: this.stream, object: name, reason: why }, 'JetStream log: skipping a snapshot');
    }
    return undefined;
  }

  /**
   * The newest usable snapshot, or undefined to replay the stream from its start. The object store is
   * read through consumers that have been seen to stay silent for minutes after two of three
   * nats-servers were killed and restarted (the log's own stream was already taking writes): when the
   * snapshots cannot be read within half the open timeout and the stream still holds every message
   * (nothing is purged yet), the node replays the whole stream instead of not starting.
   */
  private async snapshotToStartFrom(info: StreamInfo, deadline: number): Promise<SnapshotRecord | undefined> {
    const complete = info.state.messages === 0 || info.state.first_seq <= 1;
    const budgetMs = complete ? Math.ceil(this.openTimeoutMs / 2) : this.openTimeoutMs;
    const until = Math.min(deadline, Date.now() + budgetMs);
    try {
      // A snapshot can be large: one attempt may take the whole budget.
      return await this.retrying('snapshot', until, () => this.loadSnapshot(info), budgetMs);
    } catch (err) {
      if (!complete || !isTransient((err as Error).cause ?? err)) throw err;
      this.logger.warn({ stream: this.stream, err: errorMessage(err), messages: info.state.messages },
        'JetStream log: snapshots could not be read; replaying the stream from its first message');
      return undefined;
    }
  }

  /** Why a snapshot cannot be the start of this stream, if it cannot. */
  private unusable(r: SnapshotRecord, info: StreamInfo): string | undefined {
    if (r.stream !== this.stream) return `it belongs to stream ${r.stream}`;
    if (r.streamCreated !== info.created) return `it was taken on an earlier stream of this name (created ${r.streamCreated}, now ${info.created})`;
    if (r.seq > info.state.last_seq) return `it is at stream seq ${r.seq}, the stream ends at ${info.state.last_seq}`;
    return undefined;
  }

  /** Positions the consumer after the snapshot's mark (or at the stream's start) and checks nothing needed is gone. */
  private startFrom(info: StreamInfo, record: SnapshotRecord | undefined): void {
    const start: Mark = record === undefined
      ? { seq: 0, index: 0, atMs: 0 }
      : { seq: record.seq, index: record.seqIndex, atMs: record.seqAtMs };
    const { first_seq: first, last_seq: last } = info.state;
    if (last > start.seq && first > start.seq + 1) {
      throw new Error(`${kind}: stream ${this.stream} starts at seq ${first} but this node needs it from ${start.seq + 1} `
        + `(${record === undefined ? 'no snapshot' : `snapshot at index ${record.index}`}): messages were removed`);
    }
    this.cursor = start;
    this.marks = [start];
    this.skipThrough = record?.index ?? 0;
    this.snapIndex = record?.index ?? 0;
  }

  /** Resolves once the consumer has read up to `seq` (the stream's end when open() began). */
  private async catchUp(seq: number, deadline: number): Promise<void> {
    const caught = this.waitFor(seq);
    let timer: NodeJS.Timeout | undefined;
    const late = new Promise<never>((_, reject) => {
      timer = setTimeout(() => reject(new Error(`${kind}.open: not caught up with stream ${this.stream} `
        + `(seq ${this.cursor.seq} of ${seq}) within ${this.openTimeoutMs} ms`)), Math.max(0, deadline - Date.now()));
    });
    try {
      await Promise.race([caught, late]);
    } finally {
      clearTimeout(timer);
    }
  }

  /**
   * Retries a setup step through transient failures (no JetStream leader yet, timeouts) until the
   * deadline. Each attempt is bounded too (by default 3 request timeouts): the object store's list and
   * get read through a consumer that can wait without end when the stream's leader changes under it (a
   * node restarted while the nats-servers restarted printed nothing for 90 s); such an attempt counts as
   * a transient failure.
   */
  private async retrying<T>(what: string, deadline: number, step: () => Promise<T>, attemptMsMax = 3 * this.publishTimeoutMs): Promise<T> {
    for (let attempt = 0; ; attempt += 1) {
      try {
        const attemptMs = Math.max(1, Math.min(attemptMsMax, deadline - Date.now()));
        return await withinMs(step(), attemptMs, `${what}: no answer within ${attemptMs} ms`);
      } catch (err) {
        if (!isTransient(err) || Date.now() >= deadline) {
          throw new Error(`${kind}.open: ${what}: ${errorMessage(err)}`, { cause: err });
        }
        this.logger.warn({ step: what, err: errorMessage(err) }, 'JetStream log: setup step failed, retrying');
        await sleep(Math.min(backoffMs(attempt, retryPauseMsMax), Math.max(0, deadline - Date.now())));
      }
    }
  }

  /** A connection that closes without close() (it never should: reconnects are unlimited) fails the log. */
  private watchConnection(nc: NatsConnection): void {
    void nc.closed().then((err) => {
      if (this.closing === undefined) this.fail(err ?? new Error('NATS connection closed'));
    });
  }

  // ---- consuming --------------------------------------------------------------------------------

  /**
   * Runs the ordered consumer from the message after the cursor. It recreates itself after gaps,
   * missed heartbeats and reconnects (resuming after the last message it delivered); if it gives
   * up, this loop starts a new one after the cursor, so nothing is skipped or read twice.
   */
  private async follow(): Promise<void> {
    for (let attempt = 0; !this.stopped; attempt += 1) {
      try {
        await this.consumeOnce();
        attempt = 0;
      } catch (err) {
        if (this.stopped) break;
        this.logger.warn({ stream: this.stream, err: errorMessage(err), seq: this.cursor.seq }, 'JetStream log: consumer failed, restarting');
      }
      if (!this.stopped) await sleep(backoffMs(attempt, retryPauseMsMax));
    }
  }

  private async consumeOnce(): Promise<void> {
    this.stats.consumerStarts += 1;
    if (!(await this.verifyCursor())) return;
    const consumer = await this.js!.consumers.get(this.stream, {
      opt_start_seq: this.cursor.seq + 1,
      filter_subjects: this.subject,
    });
    this.consumer = consumer;
    const messages = await consumer.consume({
      max_messages: consumerBatchMessages,
      expires: this.consumerExpiresMs,
      callback: (m) => this.onMessage(m),
    });
    this.messages = messages;
    void this.watchConsumer(messages);
    const stopWatchdog = this.watchdog(messages);
    if (this.stopped) messages.stop();
    const err = await messages.closed().finally(stopWatchdog);
    if (!this.stopped) {
      this.logger.warn({ stream: this.stream, err: err === undefined ? undefined : errorMessage(err), seq: this.cursor.seq },
        'JetStream log: consumer stopped, restarting it after the last message read');
    }
  }

  /**
   * Before resuming after the cursor: is the message this node read last still the one at its sequence?
   * A consumer hosted by a stream leader that was cut off or killed has been seen to deliver a message
   * that the stream, once a new leader took over, does not hold at that sequence (the minority partition
   * and kill fault tests: the node then numbered every later command one lower than the others, and a CAS
   * decided by index differed between nodes). Resuming after such a message would skip the real one, so
   * the log fails instead and `onDiverged` is told. Resolves false when it failed; throws on a transient
   * error (the caller retries).
   */
  private async verifyCursor(): Promise<boolean> {
    const last = this.recentRead.at(-1);
    if (last === undefined || last[0] !== this.cursor.seq) return true; // not read here (a snapshot's mark)
    return this.stillHolds(last[0], last[1]);
  }

  /**
   * verifyCursor for the last messages read (after the client recreated its consumer by itself),
   * retried while the stream cannot be asked: commits wait for it. Resolves false on a divergence.
   */
  private async auditRecent(): Promise<boolean> {
    const recent = this.recentRead.slice(-recentAuditMax);
    for (let attempt = 0; !this.stopped; attempt += 1) {
      try {
        for (const [seq, read] of recent) {
          if (this.stopped || !(await this.stillHolds(seq, read))) return false;
        }
        return true;
      } catch (err) {
        this.logger.warn({ stream: this.stream, err: errorMessage(err) }, 'JetStream log: could not check the messages read last, retrying');
        await sleep(backoffMs(attempt, retryPauseMsMax));
      }
    }
    return false;
  }

  /**
   * Whether the stream holds message `read` at `seq`; when it does not, the log fails and `onDiverged` is
   * told. Throws when the stream cannot be asked (the callers retry or log it).
   */
  private async stillHolds(seq: number, read: string): Promise<boolean> {
    let stored: string | undefined;
    try {
      stored = (await this.jsm!.streams.getMessage(this.stream, { seq }))?.header.get('Nats-Msg-Id') || undefined;
    } catch (err) {
      if (!/no message found/i.test(errorMessage(err))) throw err;
    }
    if (stored === read) return true;
    if (this.stopped) return false;
    this.diverged(new Error(`stream ${this.stream} changed under this node: seq ${seq} was read as commit ${read} and now holds `
      + `${stored === undefined ? 'nothing' : `commit ${stored}`}; this node's state no longer follows the log, restart it to replay the stream`));
    return false;
  }

  /** The node's state has left the stream's: the log fails and `onDiverged` is told. */
  private diverged(err: Error): void {
    if (this.failure !== undefined) return;
    this.fail(err);
    this.opts.onDiverged?.(err);
  }

  /** `<node>.<boot>.`: the start of every message id this process publishes. */
  private get ownIdPrefix(): string {
    return `${this.opts.nodeName}.${this.bootId}.`;
  }

  /**
   * Called by commit() once the cursor has passed `acked`, the sequence this node's commit `msgID` was
   * stored at by its PubAck: resolves true when this node read the commit there, or read it earlier at a
   * sequence the stream holds it at too (a copy stored twice, harmless: every node reads both). Anything
   * else means this node read a message the stream does not hold where it read it, and the log fails.
   * That is what a nats-server cut off with the stream's old leader did in the partition fault test: it
   * delivered this node's own publish at a sequence that the majority then gave to another message; the
   * node applied the wrong message and skipped the right one, so every later index was one off. The
   * commit's proposers are answered only after this check, so none is told of a result computed on a
   * message the stream does not hold.
   */
  private async confirmOwnRead(msgID: string, acked: number): Promise<boolean> {
    const readAt = this.ownReadAt.get(msgID);
    this.ownReadAt.delete(msgID);
    if (readAt === acked) return true;
    if (readAt !== undefined) return this.stillHolds(readAt, msgID);
    // Passed its sequence without reading it there: what was read there is not what the stream holds.
    const there = this.recentRead.find(([seq]) => seq === acked);
    if (there !== undefined) return this.stillHolds(acked, there[1]);
    this.diverged(new Error(`stream ${this.stream} changed under this node: commit ${msgID} is stored at seq ${acked} but this `
      + 'node read another message there; this node\'s state no longer follows the log, restart it to replay the stream'));
    return false;
  }

  /**
   * Counts the ordered consumer's own recreations and notes every sign of life from the server
   * (heartbeats, expired pulls), so the watchdog can tell a consumer that went silent.
   */
  private async watchConsumer(messages: ConsumerMessages): Promise<void> {
    for await (const s of messages.status()) {
      if (s.type === 'ordered_consumer_recreated') {
        this.stats.consumerResets += 1;
        this.logger.info({ stream: this.stream, consumer: s.name, seq: this.cursor.seq }, 'JetStream log: consumer recreated');
        // The client resumed on its own after its last message: check the last ones read afterwards
        // (commits resolve only once this is done).
        const previous = this.auditing;
        this.auditing = previous.then((ok) => ok && this.auditRecent());
      }
      if (aliveSignals.has(s.type)) this.aliveAtMs = Date.now();
    }
  }

  /**
   * Replaces a consumer the server stopped talking to. The client recreates an ordered consumer the
   * server says is gone, but one hosted by a server that died (2.9 does not move an R1 consumer)
   * never answers the client's info request, and the client waits on it forever, heartbeat monitor
   * paused. Silence for `consumerSilentHeartbeatsMax` heartbeat intervals means that: stop it, and
   * `follow` starts a new one right after the cursor.
   */
  private watchdog(messages: ConsumerMessages): () => void {
    const heartbeatMs = this.consumerExpiresMs / 2;
    this.aliveAtMs = Date.now();
    const timer = setInterval(() => {
      const silentMs = Date.now() - this.aliveAtMs;
      if (this.stopped || silentMs < consumerSilentHeartbeatsMax * heartbeatMs) return;
      this.logger.warn({ stream: this.stream, silentMs, seq: this.cursor.seq }, 'JetStream log: consumer silent, replacing it');
      void this.consumer?.delete().catch(() => undefined);
      messages.stop();
    }, heartbeatMs);
    timer.unref();
    return () => clearInterval(timer);
  }

  /** One stream message: number its commands, deliver them, settle whoever waited for it. */
  private onMessage(m: JsMsg): void {
    if (this.stopped) return;
    const seq = m.seq;
    // The ordered consumer resumes after the last message it delivered; a restarted one after ours.
    this.aliveAtMs = Date.now();
    if (seq <= this.cursor.seq) return;
    if (this.strictSeq && seq !== this.cursor.seq + 1) {
      this.fail(new Error(`${kind}: stream ${this.stream} skips from seq ${this.cursor.seq} to ${seq}: messages were removed`));
      return;
    }
    this.stats.messagesConsumed += 1;
    const items = parseCommitMessage(m.data);
    let index = this.cursor.index;
    let atMs = this.cursor.atMs;
    const entries: LogEntry[] = [];
    if (typeof items === 'string') {
      // Every node reads the same bytes and skips them alike, so indexes stay the same everywhere.
      this.stats.messagesSkipped += 1;
      this.logger.error({ stream: this.stream, seq, reason: items }, 'JetStream log: skipping a message that is not a commit');
    } else {
      for (const item of items) {
        atMs = Math.max(atMs, item.t);
        index += 1;
        if (index > this.skipThrough) entries.push({ index, atMs, pid: item.p, cmd: item.c });
      }
    }
    this.cursor = { seq, index, atMs };
    const msgID = m.headers?.get('Nats-Msg-Id');
    if (msgID) {
      this.recentRead.push([seq, msgID]);
      if (this.recentRead.length > recentReadMax) this.recentRead.shift();
      if (msgID.startsWith(this.ownIdPrefix) && !this.ownReadAt.has(msgID)) {
        this.ownReadAt.set(msgID, seq);
        // Commits whose publish failed but were stored after all are never confirmed: forget the oldest.
        if (this.ownReadAt.size > ownReadMax) this.ownReadAt.delete(this.ownReadAt.keys().next().value!);
      }
    }
    this.mark(this.cursor);
    if (entries.length > 0) this.deliver(entries);
    this.settleWaiters();
  }

  private deliver(entries: LogEntry[]): void {
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

  private mark(m: Mark): void {
    this.marks.push(m);
    if (this.marks.length <= marksMax) return;
    // Thin out, keeping the first (needed by a snapshot at the newest index) and the last.
    const last = this.marks.at(-1)!;
    this.marks = this.marks.filter((_, k) => k % 2 === 0);
    if (this.marks.at(-1) !== last) this.marks.push(last);
  }

  /** The newest mark at or before `index`: where a node opening from a snapshot at `index` starts. */
  private markAtOrBefore(index: number): { mark: Mark; at: number } {
    let at = 0;
    for (let k = this.marks.length - 1; k >= 0; k -= 1) {
      if (this.marks[k]!.index <= index) {
        at = k;
        break;
      }
    }
    return { mark: this.marks[at]!, at };
  }

  private waitFor(seq: number): Promise<void> {
    if (this.cursor.seq >= seq) return Promise.resolve();
    if (this.failure !== undefined) return Promise.reject(this.failure);
    return new Promise((resolve, reject) => this.waiters.push({ seq, resolve, reject }));
  }

  private settleWaiters(): void {
    if (this.waiters.length === 0) return;
    const ready = this.waiters.filter((w) => w.seq <= this.cursor.seq);
    this.waiters = this.waiters.filter((w) => w.seq > this.cursor.seq);
    for (const w of ready) w.resolve();
  }

  private rejectWaiters(err: Error): void {
    for (const w of this.waiters.splice(0)) w.reject(err);
  }

  // ---- committing -------------------------------------------------------------------------------

  /** One group commit: one message, published until acknowledged (same id), then read back here. */
  private async commit(batch: Pending<EncodedProposal>[]): Promise<void> {
    try {
      const atMs = stampMs(this.cursor.atMs, this.opts.clock.nowMs());
      const payload = `[${batch.flatMap((p) => p.items.map((i) => `{"p":${i.pidJson},"c":${i.cmdJson},"t":${atMs}}`)).join(',')}]`;
      const entries = batch.reduce((sum, p) => sum + p.items.length, 0);
      this.commitCounter += 1;
      const msgID = `${this.ownIdPrefix}${this.commitCounter}`;
      const startedMs = this.observer === undefined ? 0 : performance.now();
      let ack: PubAck;
      try {
        ack = await this.publish(payload, msgID);
      } catch (err) {
        // Not acknowledged, yet read here: the stream may hold it there or not (checked; a mismatch fails the log).
        const readAt = this.ownReadAt.get(msgID);
        this.ownReadAt.delete(msgID);
        if (readAt !== undefined) {
          this.stillHolds(readAt, msgID).catch((e: unknown) => this.logger.warn({ stream: this.stream, msgID, seq: readAt, err: errorMessage(e) },
            'JetStream log: could not check where an unacknowledged own commit was read'));
        }
        throw err;
      }
      this.stats.commits += 1;
      this.stats.entries += entries;
      if (ack.duplicate) this.stats.duplicates += 1;
      this.observer?.committed(entries, (performance.now() - startedMs) / 1000);
      // The proposer sees its own write applied before its append resolves (the port's promise)...
      await this.waitFor(ack.seq);
      // ...read where the stream stored it, after any check of a consumer's resumption has passed.
      if (!(await this.confirmOwnRead(msgID, ack.seq)) || !(await this.auditing)) {
        throw this.failure ?? new Error(`${kind}: commit ${msgID} could not be confirmed`);
      }
    } catch (err) {
      const e = err instanceof Error ? err : new Error(String(err));
      for (const p of batch) p.reject(e);
      return;
    }
    for (const p of batch) p.resolve();
  }

  /**
   * Publishes one commit, retrying timeouts and missing responders (a stream leader election, a
   * reconnect) with backoff and the same message id, for at most `publishRetryMsMax`. A commit that
   * finally fails is rejected; its message may still have been stored (the ack was lost), so the
   * outcome is unknown to the caller and the entries may appear in the log later.
   */
  private async publish(payload: string, msgID: string): Promise<PubAck> {
    const started = Date.now();
    for (let attempt = 0; ; attempt += 1) {
      let ack: PubAck;
      try {
        ack = await this.js!.publish(this.subject, payload, { msgID, timeout: this.publishTimeoutMs, retries: 1 });
      } catch (err) {
        const pause = backoffMs(attempt, retryPauseMsMax);
        const spent = Date.now() - started;
        if (!isTransient(err) || this.failure !== undefined || spent + pause > this.publishRetryMsMax) {
          throw new Error(`${kind}: publishing commit ${msgID} failed after ${attempt + 1} attempts in ${spent} ms `
            + `(it may still have been stored: outcome unknown): ${errorMessage(err)}`, { cause: err });
        }
        this.stats.publishRetries += 1;
        this.logger.warn({ stream: this.stream, msgID, attempt: attempt + 1, err: errorMessage(err) }, 'JetStream log: publish failed, retrying');
        await sleep(pause);
        continue;
      }
      if (ack.stream !== this.stream) throw new Error(`${kind}: ${this.subject} is stored by stream ${ack.stream}, not ${this.stream}`);
      return ack;
    }
  }

  // ---- snapshots --------------------------------------------------------------------------------

  private async writeSnapshot(s: Snapshot): Promise<void> {
    // Checked again: an earlier save in the chain may have moved the newest snapshot past this one.
    const refused = snapshotRefusal(kind, s, this.lastIndex(), this.snapIndex);
    if (refused !== undefined) throw refused;
    const { mark, at } = this.markAtOrBefore(s.index);
    const record: SnapshotRecord = {
      index: s.index, seq: mark.seq, seqIndex: mark.index, seqAtMs: mark.atMs,
      stream: this.stream, streamCreated: this.streamCreated, node: this.opts.nodeName, data: s.data,
    };
    const bytes = Buffer.from(JSON.stringify(record), 'utf8');
    await this.store!.putBlob({ name: `${this.stream}/${this.opts.nodeName}`, metadata: { index: String(s.index) } }, bytes,
      { timeout: this.publishTimeoutMs });
    this.snapIndex = s.index;
    // Later snapshots have a larger index: marks before this one are no longer needed.
    this.marks.splice(0, at);
  }

  // ---- failure and close ------------------------------------------------------------------------

  /** The consumer missed entries (a listener threw, messages vanished): stop taking appends. */
  private fail(cause: unknown): void {
    if (this.failure !== undefined) return;
    this.failure = new Error(`${kind} ${this.stream} failed, no further appends are accepted: ${errorMessage(cause)}`, { cause });
    this.logger.error({ stream: this.stream, err: errorMessage(cause) }, 'JetStream log failed');
    this.stopped = true;
    this.messages?.stop();
    this.rejectWaiters(this.failure);
    this.commits?.rejectQueued(this.failure);
  }

  /** The stream's leader and replicas, for /v1/status and the index headers. */
  leadership(): Leadership {
    return this.seenLeadership;
  }

  /** Asks the stream's cluster info every few seconds: who leads, who holds copies, how fresh. */
  private watchLeadership(jsm: JetStreamManager, first: StreamInfo): void {
    const record = (info: StreamInfo) => {
      const cluster = info.cluster;
      const replicas = (cluster?.replicas ?? []).map((r) => r.name);
      const leader = cluster?.leader;
      this.seenLeadership = {
        leader,
        peers: [...(leader ? [leader] : []), ...replicas].sort(),
        lastContactMs: leader === undefined ? this.seenLeadership.lastContactMs + leadershipPollMs : 0,
      };
    };
    record(first);
    let failures = 0;
    this.leadershipTimer = setInterval(() => {
      jsm.streams.info(this.stream).then((info) => { failures = 0; record(info); }, () => {
        // One unanswered request under load is not an election: forget the leader only when it lasts.
        failures++;
        const leader = failures >= leadershipFailuresMax ? undefined : this.seenLeadership.leader;
        this.seenLeadership = { ...this.seenLeadership, leader, lastContactMs: this.seenLeadership.lastContactMs + leadershipPollMs };
      });
    }, leadershipPollMs);
    this.leadershipTimer.unref();
  }

  private async shutdown(): Promise<void> {
    clearInterval(this.leadershipTimer);
    if (this.phase === 'new') {
      this.phase = 'closed';
      return;
    }
    if (this.phase === 'open') this.phase = 'closing';
    // Queued appends are committed, not dropped. A commit waits for its publish (bounded by the
    // retries) and then for the consumer; if the consumer cannot get there, stop waiting for it.
    const flushed = await settlesWithin(this.commits?.idle() ?? Promise.resolve(), this.publishRetryMsMax + 2 * this.publishTimeoutMs);
    if (!flushed) {
      this.rejectWaiters(new Error(`${kind}: closed before the commit was read back (it is stored in the stream)`));
      await settlesWithin(this.commits?.idle() ?? Promise.resolve(), closeSettleMs);
    }
    await this.snapshots;
    this.stopped = true;
    this.messages?.stop();
    await this.following;
    await this.consumer?.delete().catch(() => undefined);
    await this.nc?.drain().catch(() => undefined);
    this.phase = 'closed';
  }
}

// ---- helpers ----------------------------------------------------------------------------------

function errorMessage(err: unknown): string {
  return err instanceof Error ? err.message : String(err);
}

function isApiError(err: unknown, code: number): boolean {
  return err instanceof JetStreamApiError && err.code === code;
}

/**
 * Failures worth retrying: timeouts, no responders, connection trouble, JetStream saying it is
 * temporarily unavailable (no leader yet). Not: our own close, bad arguments (a payload above
 * max_payload), permissions, or an API error the server means (a 4xx status).
 */
function isTransient(err: unknown): boolean {
  if (err instanceof ClosedConnectionError || err instanceof DrainingConnectionError) return false;
  if (err instanceof InvalidArgumentError || err instanceof PermissionViolationError || err instanceof AuthorizationError) return false;
  if (err instanceof JetStreamApiError) return err.status >= 500;
  return true;
}

/** `p`, or a rejection with `message` if it has not settled within `ms` (p's late outcome is ignored). */
async function withinMs<T>(p: Promise<T>, ms: number, message: string): Promise<T> {
  let timer: NodeJS.Timeout | undefined;
  const late = new Promise<never>((_, reject) => {
    timer = setTimeout(() => reject(new Error(message)), ms);
  });
  p.catch(() => undefined);
  try {
    return await Promise.race([p, late]);
  } finally {
    clearTimeout(timer);
  }
}

/** True if `p` settled (either way) within `ms`. */
async function settlesWithin(p: Promise<unknown>, ms: number): Promise<boolean> {
  let timer: NodeJS.Timeout | undefined;
  const timeout = new Promise<false>((resolve) => {
    timer = setTimeout(() => resolve(false), ms);
  });
  try {
    return await Promise.race([p.then(() => true, () => true), timeout]);
  } finally {
    clearTimeout(timer);
  }
}
