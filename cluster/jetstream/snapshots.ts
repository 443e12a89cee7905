/**
 * Snapshots in the object store (chunked, so a large state fits), two objects per node and stream
 * (`<stream>/<node>/0` and `/1`, each save replacing the older of the two, never the newest one this
 * node loaded or wrote): open() loads the newest usable one, whichever node wrote it, and the consumer
 * starts after the mark it records. Saves run one at a time.
 *
 * The older of a node's two is the mark it reports as the oldest it may still start from
 * (compaction.ts): it is in the store, and if the newest turns out unusable (a full-cluster crash cost
 * the stream its last messages, so the newest lies past the stream's end), the older one still is.
 * An object of the single-object layout (`<stream>/<node>`) is read like the others and removed once
 * its node has saved twice in the new one.
 */
import type { StreamInfo } from '@nats-io/jetstream';
import type { ObjectInfo } from '@nats-io/obj';
import type { BucketStore } from './bucket.ts';
import type { Logger, Snapshot } from '../../src/ports/index.ts';
import { snapshotRefusal, writtenFormatVersion } from '../../src/log/index.ts';
import { parseSnapshotRecord, type Mark, type SnapshotRecord } from './format.ts';
import type { Marks } from './marks.ts';
import type { SeqIndex } from './progress.ts';
import { kind } from './options.ts';
import { errorMessage, isTransient, retrying } from './retry.ts';

export interface SnapshotPorts {
  store: BucketStore;
  /** Every live object of the bucket; object-list.ts in production. @default store.list() */
  objects?: () => Promise<ObjectInfo[]>;
  stream: string;
  nodeName: string;
  logger: Logger;
  /** The stream's creation time, recorded in each snapshot: one taken on another incarnation is not used. */
  streamCreated: string;
  publishTimeoutMs: number;
  openTimeoutMs: number;
}

/** Why a snapshot cannot be the start of `stream` as `info` describes it, if it cannot. */
export function unusable(r: SnapshotRecord, info: StreamInfo, stream: string): string | undefined {
  if (r.stream !== stream) return `it belongs to stream ${r.stream}`;
  if (r.streamCreated !== info.created) return `it was taken on an earlier stream of this name (created ${r.streamCreated}, now ${info.created})`;
  const { first_seq: first, last_seq: last } = info.state;
  if (r.seq > last) return `it is at stream seq ${r.seq}, the stream ends at ${last}`;
  if (last > r.seq && first > r.seq + 1) return `the messages after it (from seq ${r.seq + 1}) were purged: the stream starts at ${first}`;
  return undefined;
}

/** Where the consumer starts: after the snapshot's mark, or at the stream's start. Throws if a message it needs is gone. */
export function startMark(info: StreamInfo, record: SnapshotRecord | undefined, stream: string): Mark {
  const start: Mark = record === undefined
    ? { seq: 0, index: 0, atMs: 0 }
    : { seq: record.seq, index: record.seqIndex, atMs: record.seqAtMs };
  const { first_seq: first, last_seq: last } = info.state;
  if (last > start.seq && first > start.seq + 1) {
    throw new Error(`${kind}: stream ${stream} starts at seq ${first} but this node needs it from ${start.seq + 1} `
      + `(${record === undefined ? 'no snapshot' : `snapshot at index ${record.index}`}): messages were removed`);
  }
  return start;
}

export class SnapshotStore {
  /** Index of the newest snapshot loaded or saved. */
  newest = 0;
  /**
   * The marks of the snapshot this node opened from (seq 0: none) and of the ones it saved since, the
   * last two kept: the older is where this node may still start from (compaction.ts), so a node that is
   * loading the newer one while it is replaced still finds its messages.
   */
  private readonly kept: SeqIndex[] = [{ seq: 0, index: 0 }];
  /** This node's objects by name, with the index each holds (as listed at open, then as saved). */
  private readonly own = new Map<string, number>();
  /** The object this node loaded or wrote last: a save never replaces it. */
  private protectedName: string | undefined;
  /** Saves since open: after two, an object of the single-object layout is no longer needed. */
  private savedSinceOpen = 0;

  /** The stream sequence of the newest snapshot this node loaded or saved (0: none, or none since the bucket was made again). */
  get newestSeq(): number {
    return this.kept[this.kept.length - 1]!.seq;
  }

  /** The mark this node reports as the oldest it may still start from. */
  get oldestStart(): SeqIndex {
    return this.kept[0]!;
  }
  private saves: Promise<void> = Promise.resolve();

  constructor(private readonly ports: SnapshotPorts) {}

  /**
   * The newest usable snapshot, or undefined to replay the stream from its start. The object store is
   * read through consumers that have been seen (nats-server 2.9.10) to stay silent for minutes after two
   * of three servers were killed and restarted, while the log's own stream was already taking writes:
   * when the snapshots cannot be read within half the open timeout and the stream still holds every
   * message (nothing is purged yet), the node replays the whole stream instead of not starting.
   */
  async startFrom(info: StreamInfo, deadline: number): Promise<SnapshotRecord | undefined> {
    const { logger, openTimeoutMs, stream } = this.ports;
    const complete = info.state.messages === 0 || info.state.first_seq <= 1;
    const budgetMs = complete ? Math.ceil(openTimeoutMs / 2) : openTimeoutMs;
    const until = Math.min(deadline, performance.now() + budgetMs);
    try {
      // A snapshot can be large: one attempt may take the whole budget.
      const record = await retrying(logger, 'snapshot', until, () => this.load(info), budgetMs);
      this.newest = record?.index ?? 0;
      if (record !== undefined) this.kept.splice(0, this.kept.length, { seq: record.seq, index: record.seqIndex });
      return record;
    } catch (err) {
      if (!complete || !isTransient((err as Error).cause ?? err)) throw err;
      logger.warn({ stream, err: errorMessage(err), messages: info.state.messages },
        'JetStream log: snapshots could not be read; replaying the stream from its first message');
      return undefined;
    }
  }

  /**
   * The bucket was made again (bucket.ts): the objects this node listed or saved went with the old one.
   * The start it reports goes back to the stream's start (holding compaction) until two of its saves are
   * in the new bucket.
   */
  bucketRemade(): void {
    this.own.clear();
    this.protectedName = undefined;
    this.kept.splice(0, this.kept.length, { seq: 0, index: 0 });
  }

  /**
   * Saves a snapshot from `source` now, after the saves under way, when it is newer than the newest: the
   * bucket was made again, or the stream was purged below every snapshot by hand.
   */
  saveNow(source: (() => Snapshot) | undefined, save: (s: Snapshot) => Promise<void>): void {
    const run = async (): Promise<void> => {
      await this.settled();
      const snapshot = source?.();
      if (snapshot !== undefined && snapshot.index > this.newest) await save(snapshot);
    };
    run().catch((err: unknown) => this.ports.logger.warn({ stream: this.ports.stream, err: errorMessage(err) },
      'JetStream log: the snapshot saved at once failed; the next one is saved as usual'));
  }

  /** Why `s` cannot be saved now (past `last`, or older than the newest), if it cannot. */
  refusal(s: Snapshot, last: number): Error | undefined {
    return snapshotRefusal(kind, s, last, this.newest);
  }

  /** Saves after the saves before it; `lastIndex` is asked again then. */
  save(s: Snapshot, lastIndex: () => number, marks: Marks): Promise<void> {
    const run = this.saves.then(() => this.write(s, lastIndex(), marks));
    this.saves = run.catch(() => undefined);
    return run;
  }

  /** Resolves once the saves so far have settled. */
  settled(): Promise<void> {
    return this.saves;
  }

  private async write(s: Snapshot, last: number, marks: Marks): Promise<void> {
    // Checked again: an earlier save in the chain may have moved the newest snapshot past this one.
    const refused = this.refusal(s, last);
    if (refused !== undefined) throw refused;
    const { stream, nodeName, streamCreated } = this.ports;
    const { mark, at } = marks.atOrBefore(s.index);
    const record: SnapshotRecord = {
      index: s.index, seq: mark.seq, seqIndex: mark.index, seqAtMs: mark.atMs, stream, streamCreated, node: nodeName, v: writtenFormatVersion, data: s.data,
    };
    const bytes = Buffer.from(JSON.stringify(record), 'utf8');
    const name = this.slotToWrite();
    await this.ports.store.putBlob({ name, metadata: { index: String(s.index), seq: String(mark.seq) } }, bytes,
      { timeout: this.ports.publishTimeoutMs });
    this.newest = s.index;
    this.own.set(name, s.index);
    this.protectedName = name;
    this.savedSinceOpen += 1;
    // Reported only now that the store has it: the older of the last two is where this node may start from.
    this.kept.push({ seq: mark.seq, index: mark.index });
    if (this.kept.length > 2) this.kept.shift();
    // Later snapshots have a larger index: marks before this one are no longer needed.
    marks.dropBefore(at);
    if (this.savedSinceOpen >= 2) await this.dropSingleObject();
  }

  /** The slot a save replaces: an empty one, else the older one, never the one loaded or written last. */
  private slotToWrite(): string {
    const { stream, nodeName } = this.ports;
    const slots = [`${stream}/${nodeName}/0`, `${stream}/${nodeName}/1`].filter((n) => n !== this.protectedName);
    return slots.find((n) => !this.own.has(n)) ?? slots.reduce((a, b) => (this.own.get(a)! <= this.own.get(b)! ? a : b));
  }

  /** Removes this node's object of the single-object layout, if it has one (best effort: a leftover is skipped at open). */
  private async dropSingleObject(): Promise<void> {
    const { store, stream, nodeName, logger } = this.ports;
    const name = `${stream}/${nodeName}`;
    if (!this.own.has(name)) return;
    this.own.delete(name);
    await store.delete(name).catch((err: unknown) => {
      logger.warn({ stream, object: name, err: errorMessage(err) }, 'JetStream log: could not remove a snapshot of the single-object layout');
    });
  }

  /** The newest readable snapshot of this stream, from any node; undefined if there is none. */
  private async load(info: StreamInfo): Promise<SnapshotRecord | undefined> {
    const { store, stream, nodeName, logger } = this.ports;
    const prefix = `${stream}/`;
    const candidates = (await (this.ports.objects ?? (() => store.list()))())
      .filter((o) => o.name.startsWith(prefix) && !o.deleted)
      // Newest first by the index in the object's metadata; one without a readable index last.
      .map((o) => ({ name: o.name, index: Number(o.metadata?.index ?? -1) || -1 }))
      .sort((x, y) => y.index - x.index);
    this.own.clear();
    for (const c of candidates) {
      if (c.name === `${prefix}${nodeName}` || c.name.startsWith(`${prefix}${nodeName}/`)) this.own.set(c.name, c.index);
    }
    for (const { name } of candidates) {
      const blob = await store.getBlob(name);
      const record = blob === null ? 'vanished' : parseSnapshotRecord(Buffer.from(blob).toString('utf8'));
      const why = typeof record === 'string' ? record : unusable(record, info, stream);
      if (why === undefined) {
        logger.info({ stream, object: name, index: (record as SnapshotRecord).index }, 'JetStream log: loaded a snapshot');
        this.protectedName = name;
        return record as SnapshotRecord;
      }
      logger.warn({ stream, object: name, reason: why }, 'JetStream log: skipping a snapshot');
    }
    // The stream was compacted, so some node saved a snapshot it starts from: not seeing one is a store
    // still recovering (retried until the open deadline), never a reason to start from nothing.
    if (info.state.first_seq > 1 && info.state.last_seq >= info.state.first_seq) {
      throw new Error(`no usable snapshot among ${candidates.length} in the bucket, and the stream starts at seq ${info.state.first_seq}`);
    }
    return undefined;
  }
}
