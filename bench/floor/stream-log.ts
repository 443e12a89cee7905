/**
 * The cluster floor's log: a JetStream stream replicated on the nats-servers (R3 on three), written and read the way
 * Roster's JetStream log does it, with none of its bookkeeping.
 *
 * * Writes are group-committed by Roster's own commit queue with Roster's defaults: one commit published
 *   at a time, lingering 1 ms while the node has concurrent writers, so commits grow with the load.
 * * A commit is one message, the JSON array of its entries, published with a message id and acknowledged
 *   through one reply subscription (Roster's AckInbox), on a stream configured as Roster's (file store, R3,
 *   the same duplicate window).
 * * Every node reads the whole stream in order with an ordered consumer (nats.js, as Roster) and applies
 *   each message's entries; a write is answered when its own node applies it.
 *
 * Left out, as the floor leaves out everything beyond the lock itself: numbering entries, snapshots and
 * compaction, the audit of what a consumer reads, retries and consumer replacement (any failure stops the
 * server), progress marks, metrics.
 */
import { randomBytes } from 'node:crypto';
import { setTimeout as sleep } from 'node:timers/promises';
import { connect, nanos, type NatsConnection } from '@nats-io/transport-node';
import {
  DiscardPolicy, jetstream, jetstreamManager, RetentionPolicy, StorageType, type ConsumerMessages, type JsMsg,
} from '@nats-io/jetstream';
import { AckInbox } from '../../cluster/jetstream/ack-inbox.ts';
import { CommitQueue, type Pending } from '../../src/log/index.ts';
import type { Entry } from './locks.ts';
import type { FloorLog } from './node.ts';

export const floorStream = 'FLOOR_LOG';
const subject = 'floor.log';
/** Roster's defaults (cluster/jetstream/options.ts, setup.ts). */
const publishTimeoutMs = 5_000;
const duplicateWindowMs = 120_000;
const lingerMs = 1;
const consumerBatchMessages = 256;
const consumerExpiresMs = 5_000;
/** A commit message stays below nats-server's default max_payload (1 MiB) with room for its headers. */
const commitBytesMax = 1024 * 1024 - 1024;
/** How long the stream may take to be created once the servers run (their JetStream elects a leader first). */
const setupMsMax = 30_000;

export class StreamLog implements FloorLog {
  private readonly acks: AckInbox;
  private readonly commits: CommitQueue<string>;
  private readonly idPrefix = `${randomBytes(6).toString('hex')}.`;
  private published = 0;
  /** Acknowledged commits not applied here yet, by stream sequence: settled when applied (the queue's linger counts them). */
  private readonly unapplied = new Map<number, Pending<string>[]>();
  private appliedSeq = 0;
  private messages: ConsumerMessages | undefined;

  private constructor(
    private readonly nc: NatsConnection,
    private readonly apply: (e: Entry) => void,
    private readonly fatal: (err: unknown) => void,
  ) {
    this.acks = new AckInbox(nc);
    this.commits = new CommitQueue<string>('floor stream', {
      entriesMax: 65_536, bytesMax: commitBytesMax, queuedEntriesMax: 65_536, inFlightMax: 1, lingerMs,
    }, (batch) => this.commit(batch));
  }

  /** Connects (to one of `servers`, as Roster does), creates the stream if it is missing, and follows it from its start. */
  static async open(servers: string[], node: string, apply: (e: Entry) => void, fatal: (err: unknown) => void): Promise<StreamLog> {
    const nc = await connect({ servers, name: `floor-${node}`, noAsyncTraces: true });
    await ensureStream(nc, Math.min(3, servers.length));
    const log = new StreamLog(nc, apply, fatal);
    await log.follow();
    return log;
  }

  append(entry: Entry): void {
    const json = JSON.stringify(entry);
    this.commits.enqueue([json], json.length).catch(this.fatal);
  }

  async close(): Promise<void> {
    this.messages?.stop();
    await this.nc.close();
  }

  private async commit(batch: Pending<string>[]): Promise<void> {
    const payload = `[${batch.map((p) => p.items[0]).join(',')}]`;
    this.published += 1;
    const ack = await this.acks.publish(subject, payload, { msgID: `${this.idPrefix}${this.published}`, timeout: publishTimeoutMs });
    if (ack.seq <= this.appliedSeq) for (const p of batch) p.resolve();
    else this.unapplied.set(ack.seq, batch);
  }

  private async follow(): Promise<void> {
    const js = jetstream(this.nc);
    const consumer = await js.consumers.get(floorStream, { opt_start_seq: 1, filter_subjects: subject });
    this.messages = await consumer.consume({
      max_messages: consumerBatchMessages, expires: consumerExpiresMs, callback: (m) => this.onMessage(m),
    });
    void this.messages.closed().then((err) => {
      if (!this.nc.isClosed()) this.fatal(err ?? new Error('the stream consumer stopped'));
    });
  }

  private onMessage(m: JsMsg): void {
    const entries = JSON.parse(Buffer.from(m.data.buffer, m.data.byteOffset, m.data.byteLength).toString('utf8')) as Entry[];
    for (const e of entries) this.apply(e);
    this.appliedSeq = m.seq;
    const batch = this.unapplied.get(m.seq);
    if (batch === undefined) return;
    this.unapplied.delete(m.seq);
    for (const p of batch) p.resolve();
  }
}

/** Creates the floor's stream as Roster creates its own, retrying while the servers' JetStream is not ready. */
async function ensureStream(nc: NatsConnection, replicas: number): Promise<void> {
  const deadline = Date.now() + setupMsMax;
  for (;;) {
    try {
      const jsm = await jetstreamManager(nc, { timeout: publishTimeoutMs });
      await jsm.streams.add({
        name: floorStream, subjects: [subject], storage: StorageType.File, num_replicas: replicas,
        retention: RetentionPolicy.Limits, discard: DiscardPolicy.Old, duplicate_window: nanos(duplicateWindowMs),
      });
      return;
    } catch (err) {
      if (Date.now() > deadline) throw err;
      await sleep(250);
    }
  }
}
