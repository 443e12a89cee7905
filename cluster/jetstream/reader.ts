/**
 * Reads the stream in order with an ordered consumer from the message after the cursor, numbers the
 * commands it reads (format.ts), hands them on and settles whoever waits for a sequence. The consumer
 * recreates itself after gaps, missed heartbeats and reconnects (resuming after the last message it
 * delivered); if it gives up or goes silent, the reader starts a new one after the cursor, so nothing
 * is skipped or read twice, once the divergence audit has checked the message read last.
 *
 * A consumer reads the copy of the stream on the server that hosts it, which need not be the stream
 * leader. A copy that stopped following the leader (seen on nats-server 2.9 after servers were killed)
 * keeps the consumer alive, heartbeats and all, but never delivers what the leader stored. So while
 * someone waits for a sequence the stream is known to hold (the end of the stream at open, a commit
 * the leader acknowledged) and nothing at all is delivered for `stallMs`, the reader replaces the
 * consumer, as it does a silent one; the new one may be placed on another server.
 */
import type { Consumer, ConsumerMessages, JetStreamClient, JsMsg } from '@nats-io/jetstream';
import type { LogEntry, Logger } from '../../src/ports/index.ts';
import type { DivergenceAudit } from './audit.ts';
import { numberCommit, parseCommitMessage, type Mark } from './format.ts';
import { ConsumerLiveness } from './liveness.ts';
import type { Marks } from './marks.ts';
import { kind, type JetStreamLogStats } from './options.ts';
import { backoffMs, errorMessage, retryPauseMsMax } from './retry.ts';
import { setLongInterval, setLongTimeout, sleepMs, type LongTimer } from '../../src/util/index.ts';

/** Messages one pull request of the consumer asks for. */
export const consumerBatchMessages = 256;
/** How long a waited-for sequence may see no delivery at all before the consumer is replaced. */
export const consumerStallMsDefault = 4_000;

export interface ReaderPorts {
  js: JetStreamClient;
  stream: string;
  subject: string;
  /** True when the stream carries only our subject: then a jump in sequence numbers is lost data. */
  strictSeq: boolean;
  consumerExpiresMs: number;
  /** @default consumerStallMsDefault */
  stallMs?: number;
  stats: JetStreamLogStats;
  logger: Logger;
  marks: Marks;
  audit: DivergenceAudit;
  /** Told every message read, in order (digests.ts compares what the nodes read). */
  digests?: { read(seq: number, msgID: string | undefined): void };
  /** True once the log has stopped for good (closed or failed). */
  stopped(): boolean;
  /** Why the log failed, if it did. */
  failure(): Error | undefined;
  /** The reader missed entries (messages vanished, the consumer of the entries threw): the log fails. */
  fail(cause: unknown): void;
  /**
   * A message this node cannot follow past (a commit of a newer format version): its state can only
   * go on after an upgrade, so the node stops as on a divergence. @default fail
   */
  cannotFollow?(cause: Error): void;
  /**
   * Messages after the cursor are gone (the node fell behind the compaction point): its state can only
   * come back from a snapshot, so this is told instead of `fail` when given. @default fail
   */
  fellBehind?(cause: Error): void;
  /** Numbered entries, in order. */
  deliver(entries: LogEntry[]): void;
  /** Attachments entries name: fetched before those entries are delivered (see attachments.ts). */
  attachments?: { missing(entries: readonly LogEntry[], seq: number): string[]; fetch(names: readonly string[]): Promise<void> };
}

export class Reader {
  /** The last consumed message. */
  cursor: Mark;
  private consumer: Consumer | undefined;
  private messages: ConsumerMessages | undefined;
  private following: Promise<void> | undefined;
  private readonly liveness = new ConsumerLiveness();
  /** Promises waiting for the consumer to pass a stream sequence, with when each began to wait. */
  private waiters: { seq: number; sinceMs: number; resolve(): void; reject(err: Error): void }[] = [];
  /** When the consumer last delivered a message (or was last replaced for delivering none). */
  private progressAtMs = 0;
  private stallTimer: LongTimer | undefined;
  /** Set while an entry waits for its attachments: the messages that came after it, in order. */
  private backlog: JsMsg[] | undefined;

  /** Starts after `start`; commands up to `skipThrough` (a snapshot's index) are numbered, not delivered. */
  constructor(private readonly ports: ReaderPorts, start: Mark, readonly skipThrough: number) {
    this.cursor = start;
  }

  start(): void {
    this.following = this.follow();
    const stallMs = this.ports.stallMs ?? consumerStallMsDefault;
    this.stallTimer = setLongInterval(() => this.checkStalled(stallMs), Math.max(10, Math.floor(stallMs / 4)));
  }

  /** Stops the consumer in use (the log has set stopped: no other starts). */
  stop(): void {
    this.stallTimer?.clear();
    this.messages?.stop();
  }

  /** After stop(): waits for the loop to end and removes the consumer from the server. */
  async finish(): Promise<void> {
    await this.following;
    await this.consumer?.delete().catch(() => undefined);
  }

  /** Resolves once the consumer has passed `seq`. */
  waitFor(seq: number): Promise<void> {
    if (this.cursor.seq >= seq) return Promise.resolve();
    const failure = this.ports.failure();
    if (failure !== undefined) return Promise.reject(failure);
    return new Promise((resolve, reject) => this.waiters.push({ seq, sinceMs: performance.now(), resolve, reject }));
  }

  /**
   * Replaces the consumer when the oldest waiter and the last delivery are both `stallMs` old: the
   * stream holds what is awaited, and the server hosting the consumer is not handing it over.
   */
  private checkStalled(stallMs: number): void {
    const oldest = this.waiters[0];
    if (oldest === undefined || this.ports.stopped() || this.consumer === undefined) return;
    const now = performance.now();
    if (now - Math.max(this.progressAtMs, oldest.sinceMs) < stallMs) return;
    this.progressAtMs = now;
    this.ports.stats.consumerStalls += 1;
    this.ports.logger.warn({ stream: this.ports.stream, seq: this.cursor.seq, awaited: oldest.seq, stallMs },
      'JetStream log: consumer delivered nothing while a stored message was awaited, replacing it');
    this.replaceConsumer();
  }

  /** Deletes the consumer on the server and ends its loop: follow() starts a new one after the cursor. */
  private replaceConsumer(): void {
    void this.consumer?.delete().catch(() => undefined);
    this.messages?.stop();
  }

  rejectWaiters(err: Error): void {
    for (const w of this.waiters.splice(0)) w.reject(err);
  }

  /** Resolves once the consumer has read up to `seq` (the stream's end when open() began), else rejects at `deadline` (performance.now()). */
  async catchUp(seq: number, deadline: number, openTimeoutMs: number): Promise<void> {
    const caught = this.waitFor(seq);
    let timer: LongTimer | undefined;
    const late = new Promise<never>((_, reject) => {
      timer = setLongTimeout(() => reject(new Error(`${kind}.open: not caught up with stream ${this.ports.stream} `
        + `(seq ${this.cursor.seq} of ${seq}) within ${openTimeoutMs} ms`)), Math.max(0, deadline - performance.now()), false);
    });
    try {
      await Promise.race([caught, late]);
    } finally {
      timer?.clear();
    }
  }

  private async follow(): Promise<void> {
    const { ports } = this;
    for (let attempt = 0; !ports.stopped(); attempt += 1) {
      try {
        await this.consumeOnce();
        attempt = 0;
      } catch (err) {
        if (ports.stopped()) break;
        ports.logger.warn({ stream: ports.stream, err: errorMessage(err), seq: this.cursor.seq }, 'JetStream log: consumer failed, restarting');
      }
      if (!ports.stopped()) await sleepMs(backoffMs(attempt, retryPauseMsMax));
    }
  }

  private async consumeOnce(): Promise<void> {
    const { ports } = this;
    ports.stats.consumerStarts += 1;
    if (!(await ports.audit.beforeResume(this.cursor.seq))) return;
    const consumer = await ports.js.consumers.get(ports.stream, { opt_start_seq: this.cursor.seq + 1, filter_subjects: ports.subject });
    this.consumer = consumer;
    const messages = await consumer.consume({
      max_messages: consumerBatchMessages,
      expires: ports.consumerExpiresMs,
      callback: (m) => this.onMessage(m),
    });
    this.messages = messages;
    if (ports.stats.consumerStarts > 1) ports.logger.info({ stream: ports.stream, seq: this.cursor.seq }, 'JetStream log: consumer restarted');
    void this.liveness.watch(messages, (name) => this.onRecreated(name));
    const stopWatchdog = this.liveness.watchdog(ports.consumerExpiresMs / 2, ports.stopped, (silentMs) => {
      ports.logger.warn({ stream: ports.stream, silentMs, seq: this.cursor.seq }, 'JetStream log: consumer silent, replacing it');
      this.replaceConsumer();
    });
    if (ports.stopped()) messages.stop();
    const err = await messages.closed().finally(stopWatchdog);
    if (!ports.stopped()) {
      ports.logger.warn({ stream: ports.stream, err: err === undefined ? undefined : errorMessage(err), seq: this.cursor.seq },
        'JetStream log: consumer stopped, restarting it after the last message read');
    }
  }

  /** The client resumed on its own after its last message: the audit checks the last ones read (commits wait for it). */
  private onRecreated(consumer: string): void {
    this.ports.stats.consumerResets += 1;
    this.ports.logger.info({ stream: this.ports.stream, consumer, seq: this.cursor.seq }, 'JetStream log: consumer recreated');
    this.ports.audit.afterRecreate();
  }

  /** One stream message: in order behind an entry waiting for its attachments, else at once. */
  private onMessage(m: JsMsg): void {
    if (this.ports.stopped()) return;
    this.liveness.alive();
    this.progressAtMs = performance.now();
    if (this.backlog !== undefined) this.backlog.push(m);
    else this.read(m);
  }

  /** Numbers the message's commands, delivers them (once their attachments are here), settles whoever waited for it. */
  private read(m: JsMsg): void {
    const { ports } = this;
    const seq = m.seq;
    // The ordered consumer resumes after the last message it delivered; a restarted one after ours.
    if (seq <= this.cursor.seq) return;
    if (ports.strictSeq && seq !== this.cursor.seq + 1) {
      const err = new Error(`${kind}: stream ${ports.stream} skips from seq ${this.cursor.seq} to ${seq}: messages were removed `
        + '(compacted past this node); restart it to open from the newest snapshot');
      (ports.fellBehind ?? ports.fail)(err);
      return;
    }
    ports.stats.messagesConsumed += 1;
    ports.stats.bytesConsumed += m.data.length;
    let items: ReturnType<typeof parseCommitMessage>;
    try {
      items = parseCommitMessage(m.data);
    } catch (err) {
      // A commit of a newer format than this node reads (FormatVersionError): the node stops, as on a
      // purge past it (exit code 70), rather than skip or misread it; only an upgrade gets it past.
      (ports.cannotFollow ?? ports.fail)(err as Error);
      return;
    }
    if (typeof items === 'string') {
      // Every node reads the same bytes and skips them alike, so indexes stay the same everywhere.
      ports.stats.messagesSkipped += 1;
      ports.logger.error({ stream: ports.stream, seq, reason: items }, 'JetStream log: skipping a message that is not a commit');
    }
    const { mark, entries } = numberCommit(this.cursor, seq, typeof items === 'string' ? [] : items, this.skipThrough);
    this.cursor = mark;
    const msgID = m.headers?.get('Nats-Msg-Id');
    ports.audit.read(seq, msgID);
    ports.digests?.read(seq, msgID);
    ports.marks.push(mark);
    const missing = ports.attachments?.missing(entries, seq) ?? [];
    if (missing.length > 0) {
      this.backlog = [];
      void this.fetchThenDeliver(missing, entries);
      return;
    }
    if (entries.length > 0) ports.deliver(entries);
    this.settleWaiters();
  }

  /** Fetches attachments, delivers the entries that name them, then reads the messages that waited. */
  private async fetchThenDeliver(names: string[], entries: LogEntry[]): Promise<void> {
    const { ports } = this;
    try {
      await ports.attachments!.fetch(names);
    } catch (err) {
      ports.fail(err);
      return;
    }
    if (ports.stopped()) return;
    ports.deliver(entries);
    this.settleWaiters();
    const waiting = this.backlog ?? [];
    this.backlog = undefined;
    for (let i = 0; i < waiting.length; i++) {
      if (ports.stopped()) return;
      this.read(waiting[i]!);
      // Held again (read() set a new backlog): the rest waits behind this one, still in order.
      const held = this.backlog as JsMsg[] | undefined;
      if (held !== undefined) {
        held.unshift(...waiting.slice(i + 1));
        return;
      }
    }
  }

  private settleWaiters(): void {
    if (this.waiters.length === 0) return;
    const ready = this.waiters.filter((w) => w.seq <= this.cursor.seq);
    this.waiters = this.waiters.filter((w) => w.seq > this.cursor.seq);
    for (const w of ready) w.resolve();
  }
}
