/**
 * The proposals of one node waiting for their answer. A proposal's caller is answered once its entry
 * has applied here *and* its append resolved (the log vouches the entry is committed where it was
 * read): whichever comes second answers. One not answered within the write timeout gets
 * `writeTimedOutError` instead: the log may still commit it, so its outcome is unknown (a cluster's log
 * that lost its nats-servers, a disk that hangs), but the caller is not held for as long as that lasts.
 */
import { randomUUID } from 'node:crypto';
import type { Command } from '../domain/commands.ts';
import { intervalMs, type Clock, type TimerHandle } from '../ports/clock.ts';
import { writeTimedOutError } from '../ports/log-errors.ts';
import type { Proposal, ReplicatedLog } from '../ports/log.ts';
import type { RuntimeObserver } from '../ports/observer.ts';
import type { Result } from '../state/index.ts';
import { SeqRing, seqAt } from '../util/seq-ring.ts';

interface Pending {
  resolve: (r: Result) => void;
  reject: (e: Error) => void;
  appended: boolean;
  /** Apply's result, held until the append resolves. */
  result?: Result;
  /** When it is given up on (the interval clock's ms: a wall clock set back does not stretch the write timeout). */
  deadlineMs: number;
}

/** The write timeout's check runs this often at most: a write is given up on up to this long after its timeout. */
const expirySweepMsMax = 500;

export class Proposals {
  /**
   * Under the number in their pid (`<prefix>-<n>`), in the order submitted, so the oldest are first (every
   * proposal gets the same timeout). A ring rather than a Map: see SeqRing for what a Map costs here.
   */
  private readonly pending = new SeqRing<Pending>();
  private readonly pidPrefix = randomUUID().slice(0, 8);
  private sweep: TimerHandle | undefined;

  constructor(
    private readonly log: ReplicatedLog,
    private readonly observer: RuntimeObserver | undefined,
    private readonly clock: Clock,
    private readonly writeTimeoutMs: number,
  ) {}

  /** Proposals waiting for their entry to apply. */
  get size(): number {
    return this.pending.size;
  }

  /** Appends the commands as one batch; each promise settles with apply's result for its entry. */
  submit(cmds: readonly Command[]): Promise<Result>[] {
    const deadlineMs = intervalMs(this.clock) + this.writeTimeoutMs;
    const proposals: Proposal[] = [];
    const results: Promise<Result>[] = [];
    for (const cmd of cmds) {
      let seq = 0;
      results.push(new Promise<Result>((resolve, reject) => { seq = this.pending.push({ resolve, reject, appended: false, deadlineMs }); }));
      proposals.push({ pid: `${this.pidPrefix}-${seq}`, cmd });
    }
    this.sweep ??= this.clock.setTimer(Math.min(expirySweepMsMax, this.writeTimeoutMs), this.expire);
    const startedMs = this.observer === undefined ? 0 : performance.now();
    this.log.append(proposals).then(() => {
      this.observer?.appended((performance.now() - startedMs) / 1000);
      for (const p of proposals) this.appended(this.seqOf(p.pid));
    }, (err: unknown) => {
      // Even one applied here already: the log cannot vouch for where it was read, so the outcome is unknown.
      const error = err instanceof Error ? err : new Error(String(err));
      for (const p of proposals) this.reject(this.seqOf(p.pid), error);
    });
    return results;
  }

  /** Whether this node (this run of it) proposed the entry of `pid`. */
  proposedHere(pid: string): boolean {
    return pid.startsWith(this.pidPrefix) && pid.charCodeAt(this.pidPrefix.length) === 45; // '-'
  }

  /**
   * The number in a pid this node's run proposed, or 0: a pid from another node or an earlier run (another
   * prefix) is never looked up, and a malformed one (no digits, or others) gives 0.
   */
  private seqOf(pid: string): number {
    return this.proposedHere(pid) ? seqAt(pid, this.pidPrefix.length + 1) : 0;
  }

  /** The entry of `pid` applied here at `index` with `result`. */
  applied(pid: string, index: number, result: Result): void {
    const seq = this.seqOf(pid);
    const waiter = this.pending.get(seq);
    if (waiter === undefined || waiter.result !== undefined) return;
    // A success carries its entry's index: the answer's X-Consul-Index, a fencing token for locks.
    const answer = result.ok ? withIndex(result, index) : result;
    if (waiter.appended) {
      this.pending.take(seq);
      waiter.resolve(answer);
    } else {
      waiter.result = answer;
    }
  }

  /** Rejects every waiting proposal (the node cannot apply any more). */
  rejectAll(err: Error): void {
    this.pending.scan((seq) => { this.reject(seq, err); return true; });
  }

  /** Gives up on the proposals past their deadline (the oldest come first), and checks again while any wait. */
  private readonly expire = (): void => {
    this.sweep = undefined;
    const now = intervalMs(this.clock);
    this.pending.scan((seq, waiter) => {
      if (waiter.deadlineMs > now) return false;
      this.reject(seq, writeTimedOutError(this.writeTimeoutMs));
      return true;
    });
    if (this.pending.size > 0) this.sweep = this.clock.setTimer(Math.min(expirySweepMsMax, this.writeTimeoutMs), this.expire);
  };

  /** Stops the timeout's check (the runtime stops). */
  stop(): void {
    if (this.sweep !== undefined) this.clock.clearTimer(this.sweep);
    this.sweep = undefined;
  }

  private appended(seq: number): void {
    const waiter = this.pending.get(seq);
    if (waiter === undefined) return;
    if (waiter.result === undefined) {
      waiter.appended = true;
      return;
    }
    this.pending.take(seq);
    waiter.resolve(waiter.result);
  }

  private reject(seq: number, err: Error): void {
    const waiter = this.pending.take(seq);
    waiter?.reject(err);
  }
}

/** A success with its entry's index; the shared bare `{ ok: true }` is not copied key by key. */
function withIndex(result: Result & { ok: true }, index: number): Result {
  if (result.session === undefined && result.results === undefined) return { ok: true, index };
  return { ...result, index };
}
