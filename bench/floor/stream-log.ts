/**
 * The cluster floor's log: a JetStream stream replicated on the nats-servers (R3 on three), written and read the way
 * Roster's JetStream log does it, with none of its bookkeeping.
 *
 * * The settings are Roster's JetStream log defaults (settingsOf), the connection Roster's (connectNats).
 * * Writes are group-committed by Roster's own commit queue with those settings: one commit published
 *   at a time, lingering 1 ms while the node has concurrent writers, so commits grow with the load.
 * * A commit is one message, the JSON array of its entries, published with a message id and acknowledged
 *   through one reply subscription (Roster's AckInbox), on a stream Roster's ensureStream creates (file
 *   store, R3, the same duplicate window).
 * * Every node reads the whole stream in order with an ordered consumer (nats.js, as Roster) and applies
 *   each message's entries; a write is answered when its own node applies it.
 *
 * Left out, as the floor leaves out everything beyond the lock itself: numbering entries, snapshots and
 * compaction, the audit of what a consumer reads, retries and consumer replacement (any failure stops the
 * server), progress marks, metrics.
 */
import { randomBytes } from 'node:crypto';
import type { NatsConnection } from '@nats-io/transport-node';
import { jetstream, jetstreamManager, type ConsumerMessages, type JsMsg } from '@nats-io/jetstream';
import { AckInbox } from '../../cluster/jetstream/ack-inbox.ts';
import { inFlightMaxOf, settingsOf, type Settings } from '../../cluster/jetstream/options.ts';
import { consumerBatchMessages } from '../../cluster/jetstream/reader.ts';
import { retrying } from '../../cluster/jetstream/retry.ts';
import { connectNats, ensureStream, messageBytesMax } from '../../cluster/jetstream/setup.ts';
import { CommitQueue, type Pending } from '../../src/log/index.ts';
import { SystemClock } from '../../src/ports/clock.ts';
import type { Entry } from './locks.ts';
import type { FloorLog } from './node.ts';

export const floorStream = 'FLOOR_LOG';

/** Roster's JetStream log settings with their defaults (cluster/jetstream/options.ts), for the floor's stream. */
function floorSettings(servers: string[], node: string): Settings {
  return settingsOf({
    servers, nodeName: `floor-${node}`, stream: floorStream, subject: 'floor.log', replicas: Math.min(3, servers.length), clock: new SystemClock(),
  });
}

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
    private readonly s: Settings,
    private readonly apply: (e: Entry) => void,
    private readonly fatal: (err: unknown) => void,
  ) {
    this.acks = new AckInbox(nc);
    this.commits = new CommitQueue<string>('floor stream', {
      entriesMax: s.batchEntriesMax, bytesMax: messageBytesMax(nc.info?.max_payload), queuedEntriesMax: s.queuedEntriesMax,
      inFlightMax: inFlightMaxOf(s), lingerMs: s.commitLingerMs,
    }, (batch) => this.commit(batch));
  }

  /**
   * Connects as a Roster node does (to one of `servers`), creates the stream as Roster creates its own
   * (retried while JetStream is not ready, within Roster's open timeout), and follows it from its start.
   */
  static async open(servers: string[], node: string, apply: (e: Entry) => void, fatal: (err: unknown) => void): Promise<StreamLog> {
    const s = floorSettings(servers, node);
    const nc = await connectNats(s.servers, s.nodeName);
    const deadline = Date.now() + s.openTimeoutMs;
    const jsm = await retrying(s.logger, 'JetStream', deadline, () => jetstreamManager(nc, { timeout: s.publishTimeoutMs }), s.publishTimeoutMs);
    await retrying(s.logger, `stream ${s.stream}`, deadline, () => ensureStream(jsm, s, s.logger), 3 * s.publishTimeoutMs);
    const log = new StreamLog(nc, s, apply, fatal);
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
    const ack = await this.acks.publish(this.s.subject, payload, { msgID: `${this.idPrefix}${this.published}`, timeout: this.s.publishTimeoutMs });
    if (ack.seq <= this.appliedSeq) for (const p of batch) p.resolve();
    else this.unapplied.set(ack.seq, batch);
  }

  private async follow(): Promise<void> {
    const js = jetstream(this.nc);
    const consumer = await js.consumers.get(this.s.stream, { opt_start_seq: 1, filter_subjects: this.s.subject });
    this.messages = await consumer.consume({
      max_messages: consumerBatchMessages, expires: this.s.consumerExpiresMs, callback: (m) => this.onMessage(m),
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
