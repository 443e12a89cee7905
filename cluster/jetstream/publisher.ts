/**
 * Publishes commits. Each group commit is one message whose payload is a JSON array of proposals
 * (format.ts), with a `Nats-Msg-Id` header unique per commit (node name, boot id, counter) so that a
 * publish retried after a lost PubAck is stored once: JetStream drops the duplicate within the
 * stream's duplicate window and acknowledges it with the original sequence.
 */
import { randomBytes } from 'node:crypto';
import { NoRespondersError } from '@nats-io/transport-node';
import type { PubAck } from '@nats-io/jetstream';
import { outcomeUnknownError, unavailableError, type Logger, type LogObserver, type Proposal } from '../../src/ports/index.ts';
import { encodeProposal, type EncodedProposal, type Pending } from '../../src/log/index.ts';
import type { CommitSender } from './ack-inbox.ts';
import { commitItemJson } from './format.ts';
import { kind, type JetStreamLogStats } from './options.ts';
import { sleepMs } from '../../src/util/index.ts';
import { backoffMs, errorMessage, isTransient, retryPauseMsMax } from './retry.ts';
import { isStorageExhausted, type StorageWatch } from './storage-full.ts';

export interface PublisherPorts {
  /** The ack inbox (ack-inbox.ts); `js.publish` acknowledges alike. */
  js: CommitSender;
  stream: string;
  subject: string;
  publishTimeoutMs: number;
  publishRetryMsMax: number;
  stats: JetStreamLogStats;
  logger: Logger;
  /** True once the log has failed: a failing publish is then not retried. */
  failed(): boolean;
  /** Whether the stream is gone (JetStream says it does not exist), asked when nothing answered a publish. */
  streamGone?(): Promise<boolean>;
  /** Told once, when a publish finds the stream gone. */
  onGone?(): void;
  /** Told of publishes refused for want of storage, and of publishes stored (storage-full.ts). */
  storage?: Pick<StorageWatch, 'refused' | 'stored'>;
  /** Told of every publish acknowledged: the stream answers this node (reach-watch.ts). */
  answered?(): void;
  observer(): LogObserver | undefined;
}

/** `<node>.<boot>.`: the start of every message id this process publishes (the boot id is new per process). */
export function ownIdPrefixOf(nodeName: string): string {
  return `${nodeName}.${randomBytes(6).toString('hex')}.`;
}

/** One commit message's payload: every proposal of the batch, all stamped `atMs`. */
export function commitPayload(batch: readonly Pending<EncodedProposal>[], atMs: number): string {
  return `[${batch.flatMap((p) => p.items.map((i) => commitItemJson(i, atMs))).join(',')}]`;
}

/** Encodes one append; throws if a proposal is invalid or all together cannot fit one message of `bytesMax`. */
export function encodeForMessage(proposals: readonly Proposal[], bytesMax: number): { items: EncodedProposal[]; bytes: number } {
  const items = proposals.map((p) => encodeProposal(p, bytesMax));
  const bytes = items.reduce((sum, p) => sum + p.bytes, 0);
  if (bytes > bytesMax) {
    throw new RangeError(`${kind}: an append of ${items.length} proposals needs ${bytes} bytes, above the `
      + `${bytesMax}-byte commit limit (the server's max_payload; one append is one message); split it`);
  }
  return { items, bytes };
}

export class Publisher {
  private counter = 0;
  private goneLogged = false;

  constructor(private readonly ports: PublisherPorts, private readonly ownIdPrefix: string) {}

  /** The message id of the next commit. */
  nextId(): string {
    this.counter += 1;
    return `${this.ownIdPrefix}${this.counter}`;
  }

  /** Publishes one commit until acknowledged (see publish), counting it and telling the observer. */
  async commit(batch: readonly Pending<EncodedProposal>[], atMs: number, msgID: string): Promise<PubAck> {
    const payload = commitPayload(batch, atMs);
    const entries = batch.reduce((sum, p) => sum + p.items.length, 0);
    const startedMs = this.ports.observer() === undefined ? 0 : performance.now();
    const ack = await this.publish(payload, msgID);
    const { stats } = this.ports;
    stats.commits += 1;
    stats.entries += entries;
    if (ack.duplicate) stats.duplicates += 1;
    this.ports.observer()?.committed(entries, (performance.now() - startedMs) / 1000);
    return ack;
  }

  /**
   * Publishes one message, retrying timeouts, missing responders (a stream leader election, a
   * reconnect) and acks without a sequence, with backoff and the same message id, for at most
   * `publishRetryMsMax`. A commit that finally fails is rejected; its message may still have been stored (the ack was lost), so the
   * outcome is unknown to the caller and the entries may appear in the log later. A first attempt refused for want of
   * storage is refused as unavailable at once (nothing stored, see storage-full.ts); a later one fails at once, outcome unknown.
   */
  async publish(payload: string, msgID: string): Promise<PubAck> {
    const { ports } = this;
    const started = performance.now();
    for (let attempt = 0; ; attempt += 1) {
      let ack: PubAck;
      try {
        ack = await ports.js.publish(ports.subject, payload, { msgID, timeout: ports.publishTimeoutMs });
        // nats-server 2.10.27 was seen acknowledging a retry at seq 0 after a partition healed (by all signs
        // a duplicate of a publish not stored yet): that names no sequence to check, so ask again.
        if (ack.seq < 1) throw new Error(`stream acknowledged ${msgID} as a duplicate of a message not stored yet (seq ${ack.seq})`);
      } catch (err) {
        if (err instanceof NoRespondersError && await ports.streamGone?.()) throw this.gone();
        const full = ports.storage !== undefined && isStorageExhausted(err) ? ports.storage.refused(err) : undefined;
        if (full !== undefined && attempt === 0) throw full;
        const pause = backoffMs(attempt, retryPauseMsMax);
        const spent = performance.now() - started;
        if (full !== undefined || !isTransient(err) || ports.failed() || spent + pause > ports.publishRetryMsMax) {
          throw outcomeUnknownError(`${kind}: publishing commit ${msgID} failed after ${attempt + 1} attempts in ${spent} ms `
            + `(it may still have been stored: outcome unknown): ${errorMessage(err)}`, err);
        }
        ports.stats.publishRetries += 1;
        ports.logger.warn({ stream: ports.stream, msgID, attempt: attempt + 1, err: errorMessage(err) }, 'JetStream log: publish failed, retrying');
        await sleepMs(pause);
        continue;
      }
      if (ack.stream !== ports.stream) throw new Error(`${kind}: ${ports.subject} is stored by stream ${ack.stream}, not ${ports.stream}`);
      ports.storage?.stored();
      ports.answered?.();
      if (attempt > 0) ports.logger.info({ stream: ports.stream, msgID, attempts: attempt + 1, seq: ack.seq }, 'JetStream log: publish acknowledged after retrying');
      return ack;
    }
  }

  /**
   * The error for a commit whose stream was deleted on the nats-servers: nothing was stored. Writes are
   * refused as unavailable (not retried) while reads answer from this node's state; logged once.
   */
  private gone(): Error {
    if (!this.goneLogged) {
      this.goneLogged = true;
      this.ports.onGone?.();
      this.ports.logger.error({ stream: this.ports.stream }, 'JetStream log: the stream is gone (deleted on the nats-servers): writes are refused, '
        + 'reads answer from the state this node holds; take it out with `roster snapshot save --stale` before restarting (a node started again stops while the snapshot bucket holds snapshots of the deleted stream)');
    }
    return unavailableError(kind, `the stream ${this.ports.stream} is gone: it was deleted on the nats-servers`, 'stream');
  }
}
