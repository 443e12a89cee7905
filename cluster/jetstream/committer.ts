/**
 * The end of a group commit: publish it until acknowledged, then read it back here where the stream
 * stored it before its appends resolve.
 *
 * The commit queue's slot is free as soon as the PubAck is here, not once the commit is read back: the
 * next commit then takes everything that piled up while this one waited for its ack, so commits grow
 * with the load (at most `publishesInFlightMax` wait for their acks at once) while the read-back of the
 * earlier ones goes on.
 */
import type { Clock } from '../../src/ports/index.ts';
import { EntryClock, type EncodedProposal, type Pending } from '../../src/log/index.ts';
import type { DivergenceAudit } from './audit.ts';
import { kind } from './options.ts';
import type { Publisher } from './publisher.ts';
import type { Reader } from './reader.ts';

export interface CommitterPorts {
  reader: Reader;
  publisher: Publisher;
  audit: DivergenceAudit;
  clock: Clock;
  /** Why the log failed, if it did. */
  failure(): Error | undefined;
}

export class Committer {
  /**
   * Acknowledged commits not yet read back here (their appends still wait), counted rather than kept in a
   * Set (see SeqRing in src/util/seq-ring.ts: a Set every commit enters and leaves keeps old ones reachable).
   */
  private confirming = 0;
  /** Called, and dropped, when `confirming` comes back to 0. */
  private drained: (() => void)[] = [];

  /** Stamps the commits (entry time goes on when the wall clock is set back). */
  private readonly entryClock: EntryClock;

  constructor(private readonly ports: CommitterPorts) {
    this.entryClock = new EntryClock(ports.clock);
  }

  /** Publishes one batch as one message; resolves once it is acknowledged or has failed (its appends settle later). */
  async commit(batch: Pending<EncodedProposal>[]): Promise<void> {
    const { reader, publisher, audit } = this.ports;
    const msgID = publisher.nextId();
    let seq: number;
    try {
      const atMs = this.entryClock.stamp(reader.cursor.atMs);
      seq = (await publisher.commit(batch, atMs, msgID)).seq;
    } catch (err) {
      // Not acknowledged, yet maybe read here: the stream may hold it there or not (a mismatch fails the log).
      audit.unacknowledged(msgID);
      rejectAll(batch, err);
      return;
    }
    this.confirming += 1;
    void this.confirm(batch, msgID, seq).finally(this.confirmedOne);
  }

  private readonly confirmedOne = (): void => {
    this.confirming -= 1;
    if (this.confirming > 0) return;
    const drained = this.drained;
    this.drained = [];
    for (const f of drained) f();
  };

  /** Resolves once every acknowledged commit has been read back (or failed); none may start meanwhile. */
  async confirmed(): Promise<void> {
    while (this.confirming > 0) await new Promise<void>((resolve) => this.drained.push(resolve));
  }

  /** Settles an acknowledged commit's appends once this node has read it where the stream stored it. */
  private async confirm(batch: Pending<EncodedProposal>[], msgID: string, seq: number): Promise<void> {
    const { reader, audit } = this.ports;
    try {
      // The proposer sees its own write applied before its append resolves (the port's promise)...
      await reader.waitFor(seq);
      // ...read where the stream stored it, after any check of a consumer's resumption has passed.
      if (!(await audit.ownCommit(msgID, seq)) || !(await audit.passed())) {
        throw this.ports.failure() ?? new Error(`${kind}: commit ${msgID} could not be confirmed`);
      }
    } catch (err) {
      rejectAll(batch, err);
      return;
    }
    for (const p of batch) p.resolve();
  }
}

function rejectAll(batch: readonly Pending<EncodedProposal>[], err: unknown): void {
  const e = err instanceof Error ? err : new Error(String(err));
  for (const p of batch) p.reject(e);
}
