/** The JetStream log's options, their defaults and bounds, and the counters it keeps. */
import { silentLogger, type Clock, type Logger, type LogObserver } from '../../src/ports/index.ts';
import { positiveIntOption, queuedEntriesMaxDefault } from '../../src/log/index.ts';
import { unreachableAfterMsMin } from './reach-watch.ts';

export const kind = 'JetStreamLog';

/** How often the purging node looks for messages to purge (compaction.ts). */
export const compactEveryMsDefault = 10_000;

/** How a node proves itself to its nats-servers: a user and password, or a token (nats-server's `authorization`). */
export type NatsAuth = { user: string; pass: string } | { token: string };

export interface JetStreamLogOptions {
  /** NATS urls (`nats://host:port`); the client connects to one and reconnects to any of them. */
  servers: string[];
  /** How the node authenticates to the servers (their `authorization` block). @default none */
  auth?: NatsAuth | undefined;
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
  /**
   * The identity (`<stream>@<creation time>`, `identity()`) of the log this node joined before: open()
   * refuses another stream of the name, or none (creating none), with an error whose `code` is 'LOG_FOREIGN'
   * (log-identity.ts). @default none: the stream found is taken, or created when missing
   */
  joined?: string | undefined;
  /** Most entries in one commit (one message). @default 4096 */
  batchEntriesMax?: number;
  /**
   * Most entries waiting for the next commit while one is in flight. An append that would pass it is
   * rejected at once with an error whose `code` is 'LOG_OVERLOADED'; one larger than it with a
   * RangeError. Same rule as the WAL. @default 65536
   */
  queuedEntriesMax?: number;
  /**
   * Commits published and not yet acknowledged at once. While they wait for their PubAcks, appends
   * pile up for the next commit, so commits grow with the load: one at a time makes the fewest, largest
   * messages. An acknowledged commit is read back while the next one publishes. Each is its own message
   * with its own id, so several in flight may be stored in any order; indexes are counted while
   * consuming, and atMs never decreases there, so the log stays the same on every node. @default 1
   */
  publishesInFlightMax?: number;
  /**
   * How long a commit waits for more appends while this node has concurrent writers (commit-queue.ts,
   * `lingerMs`: writes of earlier commits not answered yet, or a previous commit of several writes in the
   * last 50 × this): it is published this many ms later, or at once when the waiting appends fill a commit.
   * A commit is a message replicated to every server and delivered to every node, so under load fewer,
   * larger ones cost the cluster less CPU per entry; a lone writer is published at once. 0 publishes at
   * once always. @default 1
   */
  commitLingerMs?: number;
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
   * Called when the stream no longer holds a message this node already applied (see audit.ts), or no
   * longer holds the ones after it (the node fell behind the compaction point, compaction.ts): the
   * node's state has left the log's, and only a restart (from the newest snapshot, then the stream)
   * brings it back. The log has failed by then; the caller should stop the process. @default none (the log just fails)
   */
  onDiverged?: (err: Error) => void;
  /** How long open() may take: connect, create the stream and bucket, load the snapshot, catch up. @default 30000 */
  openTimeoutMs?: number;
  /** Told each of this node's commits, its size and its publish time (metrics); also settable with `observe`. @default none */
  observer?: LogObserver;
  /**
   * How often the node with the smallest name among the live ones purges the stream below the oldest
   * mark a live node may still start from (compaction.ts); 0 never purges. @default 10000
   */
  compactEveryMs?: number;
  /**
   * Bytes of stream messages read since this node's last snapshot that call for its next one (see
   * ReplicatedLog.written), so a stream of large values is compacted by its bytes as one of small values is by
   * its entries. @default 128 MiB, as the embedded log's two segments
   */
  snapshotDueBytes?: number;
  /**
   * How long the stream may give this node no answer (no commit acknowledged, no message delivered, no
   * answer from its leader) before the node counts as cut off from the log (onReachable, reach-watch.ts);
   * at least 6000 (three of the leadership watch's questions). The agent gives twice its suspicion timeout. @default 10000
   */
  unreachableAfterMs?: number;
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
  /** Their bytes. */
  bytesConsumed: number;
  /** Messages that were not a commit and were skipped (every node skips the same ones). */
  messagesSkipped: number;
  /** Times the consumer was (re)created by this log after it stopped, the first start included. */
  consumerStarts: number;
  /** Times the ordered consumer recreated itself after a gap, a missed heartbeat or a reconnect. */
  consumerResets: number;
  /** Times the consumer was replaced because it delivered nothing while a stored message was awaited. */
  consumerStalls: number;
}

/** The options with their defaults applied and their bounds checked. */
export interface Settings {
  servers: string[];
  auth: NatsAuth | undefined;
  stream: string;
  /** As configured; an existing stream with another single subject is used with its own (see setup.ts). */
  subject: string;
  replicas: number;
  nodeName: string;
  logger: Logger;
  bucket: string;
  joined: string | undefined;
  batchEntriesMax: number;
  queuedEntriesMax: number;
  /** Checked when the log opens (see `inFlightMaxOf`). */
  publishesInFlightMax: number | undefined;
  commitLingerMs: number;
  publishTimeoutMs: number;
  publishRetryMsMax: number;
  consumerExpiresMs: number;
  openTimeoutMs: number;
  /** 0: never compact. */
  compactEveryMs: number;
  snapshotDueBytes: number;
  unreachableAfterMs: number;
}

const streamDefault = 'ROSTER_LOG';
export const commitLingerMsDefault = 1;
const snapshotBucketDefault = 'ROSTER_SNAPSHOTS';

/** Checks the options and fills in the defaults; throws a RangeError for a bad one. */
export function settingsOf(opts: JetStreamLogOptions): Settings {
  if (!Array.isArray(opts.servers) || opts.servers.length === 0) throw new RangeError(`${kind}: servers must list at least one url`);
  if (typeof opts.nodeName !== 'string' || opts.nodeName === '') throw new RangeError(`${kind}: nodeName is required`);
  const stream = opts.stream ?? streamDefault;
  const consumerExpiresMs = positiveIntOption(kind, 'consumerExpiresMs', opts.consumerExpiresMs, 5000);
  if (consumerExpiresMs < 1000) throw new RangeError(`${kind}: consumerExpiresMs must be at least 1000`);
  return {
    servers: opts.servers,
    auth: opts.auth,
    stream,
    subject: opts.subject ?? `roster.log.${stream}`,
    replicas: positiveIntOption(kind, 'replicas', opts.replicas, 3, 5),
    nodeName: opts.nodeName,
    logger: opts.logger ?? silentLogger,
    bucket: opts.snapshotBucket ?? snapshotBucketDefault,
    joined: opts.joined,
    publishTimeoutMs: positiveIntOption(kind, 'publishTimeoutMs', opts.publishTimeoutMs, 5000),
    publishRetryMsMax: positiveIntOption(kind, 'publishRetryMsMax', opts.publishRetryMsMax, 30_000),
    consumerExpiresMs,
    openTimeoutMs: positiveIntOption(kind, 'openTimeoutMs', opts.openTimeoutMs, 30_000),
    batchEntriesMax: positiveIntOption(kind, 'batchEntriesMax', opts.batchEntriesMax, 4096),
    queuedEntriesMax: positiveIntOption(kind, 'queuedEntriesMax', opts.queuedEntriesMax, queuedEntriesMaxDefault),
    publishesInFlightMax: opts.publishesInFlightMax,
    commitLingerMs: lingerOf(opts.commitLingerMs),
    compactEveryMs: opts.compactEveryMs === 0 ? 0 : positiveIntOption(kind, 'compactEveryMs', opts.compactEveryMs, compactEveryMsDefault),
    snapshotDueBytes: positiveIntOption(kind, 'snapshotDueBytes', opts.snapshotDueBytes, 128 * 1024 * 1024),
    unreachableAfterMs: Math.max(unreachableAfterMsMin, positiveIntOption(kind, 'unreachableAfterMs', opts.unreachableAfterMs, 10_000)),
  };
}

function lingerOf(value: number | undefined): number {
  const v = value ?? commitLingerMsDefault;
  if (!Number.isSafeInteger(v) || v < 0 || v > 1000) throw new RangeError(`${kind}: commitLingerMs must be an integer in 0..1000, got ${v}`);
  return v;
}

/** Commits in flight at once: checked at open, where the commit queue is built. */
export function inFlightMaxOf(s: Settings): number {
  return positiveIntOption(kind, 'publishesInFlightMax', s.publishesInFlightMax, 1);
}

export function emptyStats(): JetStreamLogStats {
  return {
    commits: 0, entries: 0, publishRetries: 0, duplicates: 0, messagesConsumed: 0, bytesConsumed: 0, messagesSkipped: 0,
    consumerStarts: 0, consumerResets: 0, consumerStalls: 0,
  };
}
