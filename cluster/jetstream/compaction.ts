/**
 * Compaction of the stream: messages below the oldest mark any live node may still start from are
 * purged. Each node reports, with its progress (progress.ts), the mark of the snapshot before its newest
 * one (snapshots.ts: a node loading the newest while it is replaced still finds its messages); the live
 * node with the smallest name purges the stream below the smallest of those marks, keeping the mark's
 * own message (the last one a node at that mark read: the divergence audit asks for it). A node unheard
 * for `progressForgetMs` no longer counts: it does not block compaction, and when it comes back it opens
 * from the newest snapshot in the bucket instead of replaying from its old cursor. A live node that has
 * not reported a mark yet (it has no snapshot) blocks compaction until it has one, and so does a node
 * connected to a nats-server that is not known to replay a purge safely (purgesSafely): on such a
 * cluster the stream is never purged, and each node says so once at start.
 *
 * Before purging, the purger checks that the bucket still holds a snapshot at or after the target (an
 * operator may have deleted the bucket since the marks were reported); without one it waits.
 *
 * Indexes survive the purge: they are counted from the snapshot's mark (seq ↔ index), never from seq 1.
 * The compaction point (the first index still in the stream) is the index after the mark purged below;
 * the purging node reports it, so every node's status() shows it.
 */
import type { Logger } from '../../src/ports/index.ts';
import { setLongInterval, type LongTimer } from '../../src/util/index.ts';
import type { NodeMarks, SeqIndex } from './progress.ts';
import { errorMessage } from './retry.ts';

/**
 * Where the stream may be compacted to, when this node is the one to do it: the smallest start mark of
 * the live nodes (`nodes` lists only those, this one included). Undefined when another node purges, a
 * live node has no mark yet, or the smallest mark is the stream's start.
 */
export function compactionTarget(nodes: readonly NodeMarks[], self: string): SeqIndex | undefined {
  const purger = nodes.reduce<string | undefined>((min, n) => (min === undefined || n.name < min ? n.name : min), undefined);
  if (purger !== self) return undefined;
  let target: SeqIndex | undefined;
  for (const n of nodes) {
    if (n.startFrom === undefined || !purgesSafely(n.serverVersion)) return undefined;
    if (target === undefined || n.startFrom.seq < target.seq) target = n.startFrom;
  }
  return target === undefined || target.seq <= 1 ? undefined : target;
}

/** The first nats-server release known to keep a purge's bounds when it replays it after a crash. */
export const purgeSafeSince = '2.10.0';

/**
 * True when a nats-server of `version` ("2.10.27", "v2.9.10", "2.11.0-beta.1") keeps a purge's bounds
 * when it replays it after a crash. Earlier releases (2.9.10, Debian 12's, tested) replay a purge of a
 * clustered stream below a sequence, or of one subject, as a purge of the whole stream when a server
 * restarts after a crash: the messages the purge kept are lost on that server, and after a full-cluster
 * crash on every one. A version not known is taken as not safe.
 */
export function purgesSafely(version: string | undefined): boolean {
  const m = /^v?(\d+)\.(\d+)\.(\d+)/.exec(version ?? '');
  if (m === null) return false;
  const [have, need] = [m.slice(1, 4).map(Number), purgeSafeSince.split('.').map(Number)];
  for (let k = 0; k < 3; k++) {
    if (have[k]! !== need[k]!) return have[k]! > need[k]!;
  }
  return true;
}

/**
 * The first index the stream still holds: 1 while it holds its first message; after a purge, the index
 * after the mark it was purged below (reported by the purging node, or among the purging node's own
 * `recent` purges: its view of the stream's start may lag a purge or two); undefined when none says.
 */
export function firstIndexOf(firstSeq: number, nodes: readonly NodeMarks[], recent: readonly SeqIndex[] = []): number | undefined {
  if (firstSeq <= 1) return 1;
  for (const m of [...nodes.map((n) => n.compacted), ...recent]) {
    if (m?.seq === firstSeq) return m.index + 1;
  }
  return undefined;
}

/** Purges remembered by the purging node, for its own compaction point. */
const recentMax = 8;

export interface CompactorPorts {
  stream: string;
  nodeName: string;
  logger: Logger;
  /** The live nodes' marks, this one included. */
  nodes(): NodeMarks[];
  /** The stream's first sequence as last seen. */
  firstSeq(): number;
  /** Purges the messages below `seq`; resolves with how many went. */
  purgeBelow(seq: number): Promise<number>;
  /**
   * Whether the snapshot bucket holds a snapshot a node can start from once the messages below `seq` are
   * gone (bucket.ts); a purge waits until it does. The marks the nodes report are of snapshots they saved,
   * but the bucket may have been deleted since.
   */
  covered(seq: number): Promise<boolean>;
  /** The stream sequence of this node's newest snapshot in the bucket (0: none). */
  newestSnapshotSeq(): number;
  /** Saves a snapshot of this node's state now: the stream was purged below messages no snapshot covers. */
  saveNow(): void;
}

export class Compactor {
  /** The mark this node last purged the stream below (the message at the mark is kept). */
  compacted: SeqIndex | undefined;
  /** The marks of this node's last few purges, newest last. */
  readonly recent: SeqIndex[] = [];
  private timer: LongTimer | undefined;
  private running = false;
  private refusedOnce = false;
  /** The stream's first sequence at the last look for purges this cluster did not make. */
  private firstSeen = 0;

  constructor(private readonly ports: CompactorPorts) {}

  start(everyMs: number): void {
    this.timer = setLongInterval(() => void this.runOnce(), everyMs);
  }

  stop(): void {
    this.timer?.clear();
  }

  /**
   * One look: every node looks for a purge this cluster did not make, then the purger purges when the
   * target is past the stream's start.
   */
  async runOnce(): Promise<void> {
    if (this.running) return;
    this.running = true;
    try {
      await this.snapshotAfterForeignPurge();
      await this.compact();
    } finally {
      this.running = false;
    }
  }

  /**
   * A purge this cluster did not make (an operator's `nats stream purge`, or a nats-server before
   * purgeSafeSince replaying one as a purge of everything) can leave a node started later nothing to start
   * from: no snapshot at or after the stream's new start. Every node that sees the start move past its own
   * newest snapshot asks the bucket, and when no snapshot there covers it, saves one at once.
   */
  private async snapshotAfterForeignPurge(): Promise<void> {
    const { ports } = this;
    const first = ports.firstSeq();
    if (first <= this.firstSeen) return;
    this.firstSeen = first;
    if (first <= 1 || first - 1 <= ports.newestSnapshotSeq() || await ports.covered(first - 1)) return;
    ports.logger.warn({ stream: ports.stream, firstSeq: first },
      'JetStream log: the stream was purged below messages no snapshot covers (not by this cluster\'s compaction); saving a snapshot now, so that a node started later can open');
    ports.saveNow();
  }

  private async compact(): Promise<void> {
    const { ports } = this;
    const target = compactionTarget(ports.nodes(), ports.nodeName);
    if (target === undefined || target.seq <= ports.firstSeq()) return;
    try {
      if (!(await ports.covered(target.seq))) {
        ports.logger.debug({ stream: ports.stream, belowSeq: target.seq }, 'JetStream log: not compacting: no snapshot in the bucket starts at or after the target');
        return;
      }
      const purged = await ports.purgeBelow(target.seq);
      this.compacted = target;
      this.recent.push(target);
      if (this.recent.length > recentMax) this.recent.shift();
      ports.logger.info({ stream: ports.stream, belowSeq: target.seq, firstIndex: target.index + 1, purged }, 'JetStream log: compacted the stream');
    } catch (err) {
      // A stream created with deny_purge refuses every time: said once, then at debug.
      const level = this.refusedOnce ? 'debug' : 'warn';
      this.refusedOnce = true;
      ports.logger[level]({ stream: ports.stream, belowSeq: target.seq, err: errorMessage(err) }, 'JetStream log: could not compact the stream');
    }
  }
}

/** Compacts every compactEveryMs; on a nats-server that does not replay purges safely, says once that it will not. */
export function startCompactor(compactor: Compactor, s: { stream: string; logger: Logger; compactEveryMs: number }, serverVersion: string | undefined): void {
  if (!purgesSafely(serverVersion)) {
    s.logger.warn({ stream: s.stream, serverVersion, purgeSafeSince },
      'JetStream log: the stream is not compacted: this nats-server replays a purge as a purge of the whole stream after a crash, '
      + 'and its copies of the stream were seen disagreeing after every server crashed at once; '
      + `run nats-server ${purgeSafeSince} or later (docs/cluster.md#nats-server-versions)`);
  }
  compactor.start(s.compactEveryMs);
}
