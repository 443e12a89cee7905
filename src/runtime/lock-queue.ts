/**
 * Queued lock acquisition (`PUT /v1/kv/<key>?acquire=<session>&wait=<d>`), Roster's answer to a hot
 * lock. Consul's recipe makes every contender block on the key and retry when it changes, so each
 * release wakes all of them and each sends an acquire that goes through the log: a thundering herd
 * whose winner is random. Here the contenders of one node wait in a FIFO per key; only the head
 * retries, when the key's lock state changes or its lock delay ends. A release therefore costs one
 * retry, not one per waiter, and the waiters are served in arrival order.
 *
 * A release through this node hands the lock on in the same commit: when the head is parked (waiting
 * for the key to change), the release and the head's acquire are appended together, so the next
 * holder gets the lock with the release's fdatasync instead of one more commit after it. In a
 * cluster that would keep a busy lock on one node for good (its own waiters re-queue there), so
 * after a few hand-offs in a row a release goes out plain and every node's head may compete.
 *
 * The acquire itself always goes through the log: the local state only decides when it is worth
 * trying (a stale view delays a retry, it never grants a lock). Waiters of other nodes, and clients
 * that retry on their own, still compete; the queue orders only this node's queued requests.
 */
import type { Command, KvAcquire, KvRelease } from '../domain/commands.ts';
import { intervalMs, type Clock } from '../ports/clock.ts';
import type { RegistryState, Result } from '../state/index.ts';
import { EntryTimeEstimate } from './entry-time.ts';
import { SlotSet } from '../util/slot-set.ts';
import { Stop, type StopSignal } from '../util/stop.ts';

/** What the queues need from their node: its applied state, proposals, key wake-ups and its clock. */
export interface LockQueueHost {
  readonly clock: Clock;
  /** The state this node has applied so far. */
  state(): RegistryState;
  propose(cmd: Command): Promise<Result>;
  /** Several commands in one append, committed together in this order. */
  proposeAll(cmds: readonly Command[]): Promise<Result>[];
  /** Resolves once the key's index exceeds `index`, after `waitMs`, or when `signal` aborts. */
  waitForKey(key: string, index: number, waitMs: number, signal?: StopSignal): Promise<void>;
  /** True once the node is stopping: waiters give up. */
  stopping(): boolean;
  /** True when the cluster has members besides this node (then hand-offs in a row are bounded). */
  othersExist(): boolean;
  /** Told how long each queued acquire stayed in its queue, and whether it got the lock (metrics). */
  queued?(seconds: number, acquired: boolean): void;
}

interface Waiter {
  /** Resolves when the waiter becomes the head of its queue. */
  turn: Promise<void>;
  begin(): void;
  cmd: KvAcquire;
  /** Waiting for the key to change (only then may a release hand the lock on). */
  parked: boolean;
  /** The acquire a release appended for this waiter, until the waiter has its result. */
  handoff: Promise<Result> | undefined;
  /** Aborted when the client goes away or the waiter's session ends: every wait of the waiter stops. */
  stop: Stop;
  /** The waiter's session is gone from the state (destroyed, expired, invalidated by a check, restored away). */
  sessionEnded: boolean;
  /** Removes the listener on the client's signal. */
  unlisten(): void;
  /** Its place among its session's waiters. */
  slot: number;
}

/** Refusals worth waiting out: someone else holds the lock, or its lock delay runs. */
const waitable = new Set(['held-by-other', 'lock-delay']);

/** After an acquire refused for a lock delay the estimate saw as over, the next try comes this long after it at least (ms). */
const delayRetryMsMin = 50;
/** Hand-offs in a row on one key before a plain release lets other nodes' waiters compete. */
const handOffsInARowMax = 4;
/** Hand-off runs kept before the first sweep of those whose key is no longer held. */
const handOffsSweepMin = 1024;

export class LockQueues {
  private readonly queues = new Map<string, Waiter[]>();
  /**
   * Key → hand-offs in a row this node made (the limit applies only while other members exist). A run ends
   * at a plain release through this node; one that ends otherwise (the holder's session destroyed or
   * expired, the key deleted, a release through another node) leaves its entry until a sweep finds the key
   * no longer held (see sweepHandOffs).
   */
  private readonly handOffs = new Map<string, number>();
  /** The size of handOffs at which the next sweep runs. */
  private handOffsSweepAt = handOffsSweepMin;
  /**
   * Session → its waiters, so an entry that ends a session stops them at once (see sessionChanged); in
   * SlotSets, as every waiter enters and leaves one (see SlotSet for why not a Set).
   */
  private readonly bySession = new Map<string, SlotSet<Waiter>>();

  /** The log's time now, on which lock delays end. */
  private readonly entryTime: EntryTimeEstimate;

  constructor(private readonly host: LockQueueHost) {
    this.entryTime = new EntryTimeEstimate(host.clock, () => host.state());
  }

  /**
   * Acquires `cmd.key` for `cmd.session`, waiting up to `waitMs` behind the earlier queued requests;
   * the last refusal when the time runs out or the client goes away. Errors other than a waitable
   * refusal (an invalid session, say) are returned at once, also while waiting: a waiter whose session
   * ends answers invalid session as soon as this node applies the entry that ends it. The time spent in the
   * queue is written to `timing.queuedSeconds` (the HTTP front end keeps it out of service time).
   */
  async acquire(cmd: KvAcquire, waitMs: number, signal?: StopSignal, timing?: { queuedSeconds?: number }): Promise<Result> {
    const deadline = intervalMs(this.host.clock) + waitMs;
    const queue = this.queues.get(cmd.key);
    // Nobody queued: try at once, like a plain acquire. Otherwise no barging past the queue.
    if (queue === undefined || queue.length === 0) {
      const first = await this.host.propose(cmd);
      if (first.ok || !waitable.has(first.reason) || waitMs <= 0) return first;
    }
    const waiter = this.enqueue(cmd, signal);
    const stop = waiter.stop;
    const queuedAtMs = intervalMs(this.host.clock);
    let last: Result = { ok: false, reason: 'held-by-other' };
    try {
      const giveUp = this.until(deadline, stop);
      await Promise.race([waiter.turn, giveUp.reached]);
      giveUp.cancel();
      while (this.isHead(cmd.key, waiter)) {
        // A release handed the lock on: its result decides, even if the time ran out meanwhile.
        if (waiter.handoff !== undefined) {
          last = await waiter.handoff;
          waiter.handoff = undefined;
          if (last.ok || !waitable.has(last.reason)) return last;
        }
        if (waiter.sessionEnded) break;
        if (deadline - intervalMs(this.host.clock) <= 0 || stop.aborted || this.host.stopping()) return last;
        const state = this.host.state();
        const entry = state.kv.get(cmd.key);
        let retryMs = 0;
        if ((entry?.session === undefined || entry.session === cmd.session) && this.delayLeft(cmd.key) <= 0) {
          last = await this.host.propose(cmd);
          if (last.ok || !waitable.has(last.reason)) return last;
          if (last.reason === 'lock-delay') retryMs = this.delayRetryMs(cmd.key);
        } else if (!state.sessions.has(cmd.session)) {
          break;
        }
        // Until the key's lock state changes (any write to it), its lock delay ends, or the session ends.
        const index = this.host.state().kvKeyIndex(cmd.key);
        const left = deadline - intervalMs(this.host.clock);
        const delayLeft = Math.max(this.delayLeft(cmd.key), retryMs);
        if (left <= 0) continue;
        waiter.parked = true;
        await this.host.waitForKey(cmd.key, index, delayLeft > 0 ? Math.min(left, delayLeft + 1) : left, stop);
        waiter.parked = false;
      }
      if (waiter.sessionEnded || !this.host.state().sessions.has(cmd.session)) last = { ok: false, reason: 'invalid-session', detail: cmd.session };
      return last;
    } finally {
      this.dequeue(cmd.key, waiter);
      const seconds = (intervalMs(this.host.clock) - queuedAtMs) / 1000;
      if (timing !== undefined) timing.queuedSeconds = seconds;
      this.host.queued?.(seconds, last.ok);
    }
  }

  /**
   * Told of every applied entry that creates or removes a session: when `id` is gone from the state,
   * its waiters stop waiting at once and answer invalid session, wherever they are in their queues.
   */
  sessionChanged(id: string): void {
    const waiters = this.bySession.get(id);
    if (waiters === undefined || this.host.state().sessions.has(id)) return;
    for (const w of waiters.list()) {
      w.sessionEnded = true;
      w.stop.abort();
    }
  }

  /** Acquires waiting in the queues of all keys (read when metrics are scraped). */
  get waiting(): number {
    let n = 0;
    for (const queue of this.queues.values()) n += queue.length;
    return n;
  }

  /** The keys that have acquires waiting at this node. */
  queuedKeys(): string[] {
    return [...this.queues.keys()];
  }

  /** The acquires waiting on `key` at this node, head first. */
  queued(key: string): readonly KvAcquire[] {
    return (this.queues.get(key) ?? []).map((w) => w.cmd);
  }

  /**
   * Releases through the queue: when this key's head waiter is parked, its acquire is appended right
   * behind the release, so both commit together. Otherwise a plain release.
   */
  release(cmd: KvRelease): Promise<Result> {
    const head = this.queues.get(cmd.key)?.[0];
    let inARow = this.handOffs.get(cmd.key) ?? 0;
    // Membership is asked once per handOffsInARowMax hand-offs (it builds a list): a node alone counts afresh.
    const othersWait = inARow >= handOffsInARowMax && this.host.othersExist();
    if (inARow >= handOffsInARowMax && !othersWait) inARow = 0;
    if (head === undefined || !head.parked || head.handoff !== undefined || head.cmd.session === cmd.session || othersWait) {
      this.handOffs.delete(cmd.key);
      return this.host.propose(cmd);
    }
    this.handOffs.set(cmd.key, inARow + 1);
    if (this.handOffs.size >= this.handOffsSweepAt) this.sweepHandOffs();
    const [released, acquired] = this.host.proposeAll([cmd, head.cmd]);
    head.handoff = acquired;
    // The head's loop awaits the hand-off; keep a rejection from being reported as unhandled meanwhile.
    acquired!.catch(() => {});
    return released!;
  }

  /**
   * Drops the runs of keys no longer held (a run holds its key from hand-off to hand-off), and sets the
   * next sweep at twice what is left: each sweep is paid for by as many hand-offs as it visits entries.
   */
  private sweepHandOffs(): void {
    const state = this.host.state();
    for (const key of this.handOffs.keys()) {
      if (state.kvGet(key)?.session === undefined) this.handOffs.delete(key);
    }
    this.handOffsSweepAt = Math.max(handOffsSweepMin, 2 * this.handOffs.size);
  }

  /** Hand-off runs kept: more entries than this start a sweep. @internal exported for tests */
  get handOffRuns(): number {
    return this.handOffs.size;
  }

  private enqueue(cmd: KvAcquire, signal: StopSignal | undefined): Waiter {
    let begin!: () => void;
    const turn = new Promise<void>((resolve) => { begin = resolve; });
    const stop = new Stop();
    const clientGone = (): void => stop.abort();
    if (signal?.aborted) stop.abort();
    else signal?.addEventListener('abort', clientGone, { once: true });
    const unlisten = (): void => signal?.removeEventListener('abort', clientGone);
    const waiter: Waiter = { turn, begin, cmd, parked: false, handoff: undefined, stop, sessionEnded: false, unlisten, slot: -1 };
    let queue = this.queues.get(cmd.key);
    if (queue === undefined) this.queues.set(cmd.key, (queue = []));
    queue.push(waiter);
    if (queue.length === 1) waiter.begin();
    let same = this.bySession.get(cmd.session);
    if (same === undefined) this.bySession.set(cmd.session, (same = new SlotSet()));
    same.add(waiter);
    return waiter;
  }

  private dequeue(key: string, waiter: Waiter): void {
    waiter.unlisten();
    const same = this.bySession.get(waiter.cmd.session);
    if (same?.delete(waiter) === true && same.size === 0) this.bySession.delete(waiter.cmd.session);
    const queue = this.queues.get(key);
    if (queue === undefined) return;
    const at = queue.indexOf(waiter);
    if (at < 0) return;
    queue.splice(at, 1);
    if (queue.length === 0) this.queues.delete(key);
    else if (at === 0) queue[0]!.begin();
  }

  /** How long the key's lock delay lasts yet, on the log's time (apply decides on its acquire's entry). */
  private delayLeft(key: string): number {
    return (this.host.state().lockDelays.get(key) ?? 0) - this.entryTime.nowMs();
  }

  /**
   * How long to wait before trying again after apply refused an acquire for the key's lock delay, which
   * the estimate saw as over (a wall clock set forward runs ahead of entry time): two thirds of the delay
   * left on the log's time after the refusal, as entry time runs at up to one and a half times the
   * interval clock while it catches up with such a clock (EntryClock), and at least delayRetryMsMin.
   * Without it the waiter would park until the key changed, for its whole wait.
   */
  private delayRetryMs(key: string): number {
    const state = this.host.state();
    const left = (state.lockDelays.get(key) ?? 0) - state.atMs;
    return Math.max(delayRetryMsMin, Math.ceil((left * 2) / 3));
  }

  private isHead(key: string, waiter: Waiter): boolean {
    return this.queues.get(key)?.[0] === waiter;
  }

  /** `reached` resolves at the deadline or when the client goes away; `cancel` drops the timer and listener. */
  private until(deadline: number, signal?: StopSignal): { reached: Promise<void>; cancel(): void } {
    let cancel!: () => void;
    const reached = new Promise<void>((resolve) => {
      const clock = this.host.clock;
      const timer = clock.setTimer(Math.max(0, deadline - intervalMs(clock)), done);
      function done(): void {
        clock.clearTimer(timer);
        signal?.removeEventListener('abort', done);
        resolve();
      }
      cancel = done;
      signal?.addEventListener('abort', done, { once: true });
    });
    return { reached, cancel };
  }
}
