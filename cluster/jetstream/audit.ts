/**
 * The divergence audit: is the message this node read at a sequence still the one the stream holds
 * there? A consumer hosted by a stream leader that was cut off or killed has been seen (nats-server
 * 2.9.10, the minority partition and kill fault tests) to deliver a message that the stream, once a
 * new leader took over, does not hold at that sequence: the node then numbered every later command one
 * lower than the others, and a CAS decided by index differed between nodes. The audit asks that one
 * question on four occasions, and fails the log (telling `onDiverged`) when the answer is no:
 *
 * * before a consumer is started after the cursor, of the message read last (resuming after a message
 *   the stream does not hold would skip the real one);
 * * after the client re-created its ordered consumer by itself, of the last messages read (commits
 *   wait for this);
 * * after one of this node's commits is acknowledged, of where this node read it: a server cut off
 *   with the stream's old leader delivered a node's own publish at a sequence that the majority then
 *   gave to another message. The commit's proposers are answered only after this check, so none is
 *   told of a result computed on a message the stream does not hold;
 * * after a commit whose publish failed but that this node read anyway (logged only: nobody waits);
 * * of every message in a window of the stream this node digested differently from another node
 *   (digests.ts): a node that read from a copy of the stream that disagrees with the leader's stops.
 */
import type { JetStreamManager } from '@nats-io/jetstream';
import type { Logger } from '../../src/ports/index.ts';
import { sleepMs } from '../../src/util/index.ts';
import { backoffMs, errorMessage, retryPauseMsMax } from './retry.ts';

/** Messages read last that are remembered ([seq, message id]), and how many of them are checked after a client-side recreation. */
export const recentReadMax = 64;
export const recentAuditMax = 16;
/** Own commits read and awaiting their commit()'s check, at most (more than the commits in flight can be). */
export const ownReadMax = 65_536;

export interface AuditPorts {
  stream: string;
  logger: Logger;
  /** `<node>.<boot>.`: the start of every message id this process publishes. */
  ownIdPrefix: string;
  /** The message id the stream holds at `seq`, undefined when it holds none; throws when it cannot be asked. */
  storedId(seq: number): Promise<string | undefined>;
  /**
   * Whether the missing message at `seq` was purged (compaction.ts) rather than changed: true when it is
   * below the stream's first sequence and the stream refuses single deletes (deny_delete), so only a
   * purge can have removed it. Without it, every missing message is a divergence.
   */
  purged?(seq: number): Promise<boolean>;
  /** True once the log has stopped for good (closed or failed): nothing is judged any more. */
  stopped(): boolean;
  /** The node's state has left the stream's: the log fails and `onDiverged` is told. */
  diverged(err: Error): void;
}

/** Asks the stream for the message id at `seq`; nats-server answers "no message found" for a removed one. */
export function storedMessageId(jsm: JetStreamManager, stream: string): (seq: number) => Promise<string | undefined> {
  return async (seq) => {
    try {
      return (await jsm.streams.getMessage(stream, { seq }))?.header.get('Nats-Msg-Id') || undefined;
    } catch (err) {
      if (!/no message found/i.test(errorMessage(err))) throw err;
      return undefined;
    }
  };
}

export class DivergenceAudit {
  /** The last messages read, as [seq, message id], oldest first (at most `recentReadMax`). */
  private readonly recent: [number, string][] = [];
  /** This node's own commits read and not yet confirmed by their commit(): message id → the sequence they were read at. */
  private readonly ownReadAt = new Map<string, number>();
  /** The checks after the client's own recreations, chained; false once one found a divergence. */
  private auditing: Promise<boolean> = Promise.resolve(true);

  constructor(private readonly ports: AuditPorts) {}

  /** Notes a message read (its id, when it has one). */
  read(seq: number, msgID: string | undefined): void {
    if (!msgID) return;
    this.recent.push([seq, msgID]);
    if (this.recent.length > recentReadMax) this.recent.shift();
    if (msgID.startsWith(this.ports.ownIdPrefix) && !this.ownReadAt.has(msgID)) {
      this.ownReadAt.set(msgID, seq);
      // Commits whose publish failed but were stored after all are never confirmed: forget the oldest.
      if (this.ownReadAt.size > ownReadMax) this.ownReadAt.delete(this.ownReadAt.keys().next().value!);
    }
  }

  /**
   * Before resuming after `cursorSeq`: is the message read last still there? True when it is, or was
   * not read here (the cursor is a snapshot's mark); throws on a transient error (the caller retries).
   */
  beforeResume(cursorSeq: number): Promise<boolean> {
    const last = this.recent.at(-1);
    if (last === undefined || last[0] !== cursorSeq) return Promise.resolve(true);
    return this.holds(last[0], last[1]);
  }

  /** The client resumed on its own after its last message: checks the last ones read (retried while the stream cannot be asked). */
  afterRecreate(): void {
    this.auditing = this.auditing.then((ok) => ok && this.auditRecent());
  }

  /** Resolves once the checks after recreations so far are done: false when one found a divergence. */
  passed(): Promise<boolean> {
    return this.auditing;
  }

  /**
   * Once the cursor has passed `acked`, where this node's commit `msgID` is stored: true when this node
   * read it there, or read it earlier at a sequence the stream holds it at too (a copy stored twice,
   * harmless: every node reads both). Anything else is a divergence.
   */
  ownCommit(msgID: string, acked: number): Promise<boolean> {
    const readAt = this.ownReadAt.get(msgID);
    this.ownReadAt.delete(msgID);
    if (readAt === acked) return Promise.resolve(true);
    if (readAt !== undefined) return this.holds(readAt, msgID);
    // Passed its sequence without reading it there: what was read there is not what the stream holds.
    const there = this.recent.find(([seq]) => seq === acked);
    if (there !== undefined) return this.holds(acked, there[1]);
    this.ports.diverged(new Error(`stream ${this.ports.stream} changed under this node: commit ${msgID} is stored at seq ${acked} but this `
      + 'node read another message there; this node\'s state no longer follows the log, restart it to replay the stream'));
    return Promise.resolve(false);
  }

  /** A commit that was not acknowledged, yet read here: the stream may hold it there or not (checked in the background). */
  unacknowledged(msgID: string): void {
    const readAt = this.ownReadAt.get(msgID);
    this.ownReadAt.delete(msgID);
    if (readAt === undefined) return;
    this.holds(readAt, msgID).catch((e: unknown) => this.ports.logger.warn({ stream: this.ports.stream, msgID, seq: readAt, err: errorMessage(e) },
      'JetStream log: could not check where an unacknowledged own commit was read'));
  }

  /** Checks messages read against the stream: true once checked (a difference diverges the log), false when the stream could not be asked. */
  async verify(reads: readonly [number, string][]): Promise<boolean> {
    try {
      await this.holdsAll(reads);
      return true;
    } catch (err) {
      this.ports.logger.warn({ stream: this.ports.stream, err: errorMessage(err) }, 'JetStream log: could not check a window of messages read, trying again later');
      return false;
    }
  }

  private async auditRecent(): Promise<boolean> {
    const recent = this.recent.slice(-recentAuditMax);
    for (let attempt = 0; !this.ports.stopped(); attempt += 1) {
      try {
        return await this.holdsAll(recent);
      } catch (err) {
        this.ports.logger.warn({ stream: this.ports.stream, err: errorMessage(err) }, 'JetStream log: could not check the messages read last, retrying');
        await sleepMs(backoffMs(attempt, retryPauseMsMax));
      }
    }
    return false;
  }

  /** Whether the stream holds every one of `reads`, stopping at the first divergence. Throws when the stream cannot be asked. */
  private async holdsAll(reads: readonly [number, string][]): Promise<boolean> {
    for (const [seq, read] of reads) {
      if (this.ports.stopped() || !(await this.holds(seq, read))) return false;
    }
    return true;
  }

  /** Whether the stream holds message `read` at `seq`; a divergence when not. Throws when the stream cannot be asked. */
  private async holds(seq: number, read: string): Promise<boolean> {
    const stored = await this.ports.storedId(seq);
    if (stored === read) return true;
    if (this.ports.stopped()) return false;
    if (stored === undefined && (await this.ports.purged?.(seq)) === true) return true;
    this.ports.diverged(new Error(`stream ${this.ports.stream} changed under this node: seq ${seq} was read as commit ${read} and now holds `
      + `${stored === undefined ? 'nothing' : `commit ${stored}`}; this node's state no longer follows the log, restart it to replay the stream`));
    return false;
  }
}
