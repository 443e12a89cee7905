/**
 * The proposals of one node waiting for their answer. A proposal's caller is answered once its entry
 * has applied here *and* its append resolved (the log vouches the entry is committed where it was
 * read): whichever comes second answers. One not answered within the write timeout gets
 * `writeTimedOutError` instead: the log may still commit it, so its outcome is unknown (a cluster's log
 * that lost its nats-servers, a disk that hangs), but the caller is not held for as long as that lasts.
 */
import { randomUUID } from 'node:crypto';
import type { Command } from '../domain/commands.ts';
import type { Clock, TimerHandle } from '../ports/clock.ts';
import { writeTimedOutError } from '../ports/log-errors.ts';
import type { Proposal, ReplicatedLog } from '../ports/log.ts';
import type { RuntimeObserver } from '../ports/observer.ts';
import type { Result } from '../state/index.ts';

interface Pending {
  resolve: (r: Result) => void;
  reject: (e: Error) => void;
  appended: boolean;
  /** Apply's result, held until the append resolves. */
  result?: Result;
  /** When it is given up on (clock ms). */
  deadlineMs: number;
}

/** The write timeout's check runs this often at most: a write is given up on up to this long after its timeout. */
const expirySweepMsMax = 500;

export class Proposals {
  /** In the order submitted, so the oldest are first (every proposal gets the same timeout). */
  private readonly pending = new Map<string, Pending>();
  private readonly pidPrefix = randomUUID().slice(0, 8);
  private pidCounter = 0;
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
    const deadlineMs = this.clock.nowMs() + this.writeTimeoutMs;
    const proposals: Proposal[] = [];
    const results: Promise<Result>[] = [];
    for (const cmd of cmds) {
      const pid = `${this.pidPrefix}-${++this.pidCounter}`;
      proposals.push({ pid, cmd });
      results.push(new Promise<Result>((resolve, reject) => this.pending.set(pid, { resolve, reject, appended: false, deadlineMs })));
    }
    this.sweep ??= this.clock.setTimer(Math.min(expirySweepMsMax, this.writeTimeoutMs), this.expire);
    const startedMs = this.observer === undefined ? 0 : performance.now();
    this.log.append(proposals).then(() => {
      this.observer?.appended((performance.now() - startedMs) / 1000);
      for (const p of proposals) this.appended(p.pid);
    }, (err: unknown) => {
      // Even one applied here already: the log cannot vouch for where it was read, so the outcome is unknown.
      const error = err instanceof Error ? err : new Error(String(err));
      for (const p of proposals) this.reject(p.pid, error);
    });
    return results;
  }

  /** Whether this node (this run of it) proposed the entry of `pid`. */
  proposedHere(pid: string): boolean {
    return pid.startsWith(this.pidPrefix) && pid.charCodeAt(this.pidPrefix.length) === 45; // '-'
  }

  /** The entry of `pid` applied here at `index` with `result`. */
  applied(pid: string, index: number, result: Result): void {
    const waiter = this.pending.get(pid);
    if (waiter === undefined || waiter.result !== undefined) return;
    // A success carries its entry's index: the answer's X-Consul-Index, a fencing token for locks.
    const answer = result.ok ? withIndex(result, index) : result;
    if (waiter.appended) {
      this.pending.delete(pid);
      waiter.resolve(answer);
    } else {
      waiter.result = answer;
    }
  }

  /** Rejects every waiting proposal (the node cannot apply any more). */
  rejectAll(err: Error): void {
    for (const pid of [...this.pending.keys()]) this.reject(pid, err);
  }

  /** Gives up on the proposals past their deadline (the oldest come first), and checks again while any wait. */
  private readonly expire = (): void => {
    this.sweep = undefined;
    const now = this.clock.nowMs();
    for (const [pid, waiter] of this.pending) {
      if (waiter.deadlineMs > now) break;
      this.reject(pid, writeTimedOutError(this.writeTimeoutMs));
    }
    if (this.pending.size > 0) this.sweep = this.clock.setTimer(Math.min(expirySweepMsMax, this.writeTimeoutMs), this.expire);
  };

  /** Stops the timeout's check (the runtime stops). */
  stop(): void {
    if (this.sweep !== undefined) this.clock.clearTimer(this.sweep);
    this.sweep = undefined;
  }

  private appended(pid: string): void {
    const waiter = this.pending.get(pid);
    if (waiter === undefined) return;
    if (waiter.result === undefined) {
      waiter.appended = true;
      return;
    }
    this.pending.delete(pid);
    waiter.resolve(waiter.result);
  }

  private reject(pid: string, err: Error): void {
    const waiter = this.pending.get(pid);
    if (waiter === undefined) return;
    this.pending.delete(pid);
    waiter.reject(err);
  }
}

/** A success with its entry's index; the shared bare `{ ok: true }` is not copied key by key. */
function withIndex(result: Result & { ok: true }, index: number): Result {
  if (result.session === undefined && result.results === undefined) return { ok: true, index };
  return { ...result, index };
}
