/**
 * Publishes commits as plain messages whose reply subject is this node's own inbox, and matches the
 * PubAcks that come back there. nats.js's request path (and `js.publish` over it) keeps a request
 * object, a timer and a mux entry per request and builds a cancelled-request error after every
 * successful one; a commit needs none of it: one subscription for all acks, one map entry per publish
 * attempt, and one timer that looks for the attempts past their timeout (`ackSweepMs`).
 *
 * Each attempt has its own reply subject: an ack that arrives after its attempt timed out is dropped
 * (the retry under the same message id gets its own ack, a duplicate one if the first was stored).
 * The failures look as they do through `js.publish`: a TimeoutError without an answer, a
 * NoRespondersError when no stream listens (a leader election), a JetStreamApiError for JetStream's
 * refusal (retry.ts tells which of them are worth a retry).
 */
import {
  ClosedConnectionError, createInbox, headers, NoRespondersError, TimeoutError, type Msg, type NatsConnection, type Subscription,
} from '@nats-io/transport-node';
import { JetStreamApiError, JetStreamError, type PubAck } from '@nats-io/jetstream';
import { SeqRing, seqAt } from '../../src/util/index.ts';

/** What the publisher publishes through: this inbox, or anything that acknowledges like `js.publish`. */
export interface CommitSender {
  publish(subject: string, payload: string, opts: { msgID: string; timeout: number }): Promise<PubAck>;
}

interface Waiting {
  /** Where the commit was published (named in a no-responders error). */
  subject: string;
  resolve(ack: PubAck): void;
  reject(err: Error): void;
  /** performance.now() past which the attempt has timed out. */
  deadline: number;
}

/** How often the publishes waiting for their ack are checked: one times out up to this long after its timeout. */
export const ackSweepMs = 100;

/** NATS' status for a request nobody subscribes to (an empty message with this code in its headers). */
const noRespondersStatus = 503;

export class AckInbox implements CommitSender {
  /** `_INBOX.<unique>.`: each attempt's reply subject is this and its number in `waiting`. */
  private readonly prefix = `${createInbox()}.`;
  /** By attempt number, oldest first: a ring, not a Map (see SeqRing: a Map here keeps answered commits reachable). */
  private readonly waiting = new SeqRing<Waiting>();
  private readonly sub: Subscription;
  /** Runs while publishes wait. */
  private sweeper: NodeJS.Timeout | undefined;

  /** Subscribes at once: the server reads this connection in order, so it knows the inbox before the first publish. */
  constructor(private readonly nc: NatsConnection) {
    this.sub = nc.subscribe(`${this.prefix}*`, { callback: (err, msg) => this.onReply(err, msg) });
    void this.sub.closed.then(
      () => this.rejectAll(new ClosedConnectionError()),
      (err: unknown) => this.rejectAll(err instanceof Error ? err : new Error(String(err))),
    );
  }

  publish(subject: string, payload: string, opts: { msgID: string; timeout: number }): Promise<PubAck> {
    const hdrs = headers();
    hdrs.set('Nats-Msg-Id', opts.msgID);
    return new Promise<PubAck>((resolve, reject) => {
      const attempt = this.waiting.push({ subject, resolve, reject, deadline: performance.now() + opts.timeout });
      try {
        this.nc.publish(subject, payload, { reply: this.prefix + attempt, headers: hdrs });
      } catch (err) {
        this.waiting.take(attempt);
        reject(err instanceof Error ? err : new Error(String(err)));
        return;
      }
      this.sweeper ??= setInterval(() => this.sweep(), ackSweepMs).unref();
    });
  }

  /** Publishes waiting for an ack right now (for tests). */
  get pending(): number {
    return this.waiting.size;
  }

  private onReply(err: Error | null, msg: Msg): void {
    if (err !== null) {
      this.rejectAll(err);
      return;
    }
    const w = this.waiting.take(seqAt(msg.subject, this.prefix.length));
    if (w === undefined) return;
    const answer = ackOf(msg, w.subject);
    if (answer instanceof Error) w.reject(answer);
    else w.resolve(answer);
  }

  /** Rejects the attempts past their timeout; stops once none waits. */
  private sweep(): void {
    const now = performance.now();
    this.waiting.scan((attempt, w) => {
      if (w.deadline <= now) {
        this.waiting.take(attempt);
        w.reject(new TimeoutError());
      }
      return true;
    });
    if (this.waiting.size === 0) this.stopSweeping();
  }

  private stopSweeping(): void {
    clearInterval(this.sweeper);
    this.sweeper = undefined;
  }

  private rejectAll(err: Error): void {
    const waiting: Waiting[] = [];
    this.waiting.scan((attempt) => { waiting.push(this.waiting.take(attempt)!); return true; });
    this.stopSweeping();
    for (const w of waiting) w.reject(err);
  }
}


/** A PubAck from the reply to a publish on `subject`, or the error it stands for. */
export function ackOf(msg: Pick<Msg, 'data' | 'headers'>, subject: string): PubAck | Error {
  if (msg.data.length === 0 && msg.headers?.code === noRespondersStatus) return new NoRespondersError(subject);
  let v: unknown;
  try {
    v = JSON.parse(Buffer.from(msg.data.buffer, msg.data.byteOffset, msg.data.byteLength).toString('utf8'));
  } catch {
    return new JetStreamError('invalid ack response: not JSON');
  }
  if (typeof v !== 'object' || v === null) return new JetStreamError('invalid ack response');
  const r = v as { stream?: unknown; seq?: unknown; duplicate?: unknown; domain?: unknown; error?: unknown };
  if (typeof r.error === 'object' && r.error !== null) {
    return new JetStreamApiError(r.error as ConstructorParameters<typeof JetStreamApiError>[0]);
  }
  if (typeof r.stream !== 'string' || r.stream === '' || typeof r.seq !== 'number') return new JetStreamError('invalid ack response');
  const ack: PubAck = { stream: r.stream, seq: r.seq, duplicate: r.duplicate === true };
  if (typeof r.domain === 'string') ack.domain = r.domain;
  return ack;
}
