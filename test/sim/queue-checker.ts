/**
 * The invariants of queued acquires (src/runtime/lock-queue.ts), checked after every step against what
 * each node's LockQueues shows (`queued(key)`, head first) and what its requests return:
 *   - queue-order:    a node's queue of a key keeps arrival order: waiters leave it, newcomers join at
 *                     the tail, and nobody moves ahead of a waiter that arrived before it.
 *   - queue-overtake: a waiter is granted the lock only once every waiter that joined the queue before it
 *                     (first seen there earlier) has left it: one node's waiters are granted in arrival order.
 *   - queue-starved:  the head of a healthy node's queue does not wait on while its key stays free for it
 *                     (no holder or its own session, lock delay over, its session alive) for `starvedMs`:
 *                     a release or an invalidation always wakes it, however often the key changes hands.
 *   - queue-deadline: a request returns within its wait (plus the time of one last proposal), unless its
 *                     node was paused, cut off or restarted meanwhile.
 */
import type { KvAcquire } from '../../src/domain/commands.ts';
import type { Checker } from './checker.ts';
import { localAt } from './sim-clock.ts';
import type { SimNode, SimWorld } from './sim-world.ts';

/** True ms a head may see its key free before it counts as starved: one proposal with all its retries and more. */
const starvedMs = 6_000;
/** True ms past a request's wait before it counts as stuck: one last proposal with its retries. */
const deadlineSlackMs = 15_000;

export interface QueuedRequest {
  cmd: KvAcquire;
  node: string;
  inc: number;
  startTrue: number;
  waitMs: number;
  /** The node's disturbance count when the request was made. */
  disturbances: number;
  settled: boolean;
  /** Arrival rank: when the request was first seen in its node's queue (undefined: never queued). */
  arrival?: number;
  /** True time since which the request, as its queue's head, has seen its key free. */
  freeSince?: number;
}

export class QueueChecker {
  private readonly byCmd = new WeakMap<KvAcquire, QueuedRequest>();
  private readonly open = new Set<QueuedRequest>();
  /** Node incarnation and key → the queue last seen. */
  private readonly lastSeen = new Map<string, QueuedRequest[]>();
  private arrivals = 0;

  constructor(private readonly w: SimWorld, private readonly keys: readonly string[], private readonly driftMax: number) {}

  private get checker(): Checker {
    return this.w.checker;
  }

  started(r: QueuedRequest): void {
    this.byCmd.set(r.cmd, r);
    this.open.add(r);
  }

  settled(r: QueuedRequest, granted: boolean): void {
    r.settled = true;
    this.open.delete(r);
    if (!granted) return;
    this.checker.stats.queuedGrants++;
    const seen = this.lastSeen.get(`${r.node}#${r.inc} ${r.cmd.key}`) ?? [];
    const arrival = r.arrival;
    const ahead = arrival === undefined ? [] : seen.filter((x) => !x.settled && x.arrival !== undefined && x.arrival < arrival);
    if (ahead.length > 0) {
      this.checker.report('queue-overtake', `${r.node}#${r.inc}: ${r.cmd.session} was granted ${r.cmd.key} while ${ahead.map((x) => x.cmd.session).join(', ')} waited ahead of it`);
    }
  }

  afterStep(): void {
    for (const n of this.w.nodes.values()) {
      if (!n.up || n.runtime === undefined) continue;
      for (const key of this.keys) this.observe(n, key);
    }
    for (const r of this.open) this.checkDeadline(r);
  }

  private observe(n: SimNode, key: string): void {
    const name = `${n.name}#${n.inc} ${key}`;
    const now = n.runtime!.lockQueues.queued(key).map((cmd) => this.byCmd.get(cmd)!);
    const before = this.lastSeen.get(name) ?? [];
    for (const r of now) r.arrival ??= ++this.arrivals;
    this.checkOrder(name, before, now);
    if (now.length > 0) this.lastSeen.set(name, now);
    else this.lastSeen.delete(name);
    this.checker.stats.queueWaitersMax = Math.max(this.checker.stats.queueWaitersMax, now.length);
    for (const r of now.slice(1)) delete r.freeSince;
    if (now[0] !== undefined) this.checkHead(n, now[0]);
  }

  /** The waiters seen before keep their order; newcomers come after all of them. */
  private checkOrder(name: string, before: readonly QueuedRequest[], now: readonly QueuedRequest[]): void {
    const stayed = before.filter((r) => now.includes(r));
    const firstNew = now.findIndex((r) => !before.includes(r));
    const kept = now.filter((r) => before.includes(r));
    const lateOld = firstNew >= 0 && now.slice(firstNew).some((r) => before.includes(r));
    if (lateOld || kept.some((r, k) => r !== stayed[k])) {
      const show = (rs: readonly QueuedRequest[]) => rs.map((r) => r.cmd.session).join(',');
      this.checker.report('queue-order', `${name}: queue went from [${show(before)}] to [${show(now)}]`);
    }
  }

  private checkHead(n: SimNode, head: QueuedRequest): void {
    const state = n.runtime!.state;
    const nowTrue = this.w.sched.now;
    const holder = state.kv.get(head.cmd.key)?.session;
    const free = (holder === undefined || holder === head.cmd.session)
      && (state.lockDelays.get(head.cmd.key) ?? 0) <= localAt(n.hw, nowTrue)
      && state.sessions.has(head.cmd.session);
    if (!free || !n.healthy || this.w.sequencer.downUntil > nowTrue) {
      delete head.freeSince;
      return;
    }
    head.freeSince ??= nowTrue;
    if (nowTrue - head.freeSince > starvedMs) {
      this.checker.report('queue-starved', `${n.name}#${n.inc}: head ${head.cmd.session} has seen ${head.cmd.key} free since true ${head.freeSince} ms and still waits`);
      head.freeSince = nowTrue;
    }
  }

  private checkDeadline(r: QueuedRequest): void {
    const n = this.w.nodes.get(r.node)!;
    if (!n.up || n.inc !== r.inc || n.disturbances !== r.disturbances) return;
    const bound = r.waitMs / (1 - this.driftMax) + deadlineSlackMs;
    if (this.w.sched.now - r.startTrue > bound) {
      this.checker.report('queue-deadline', `${r.node}#${r.inc}: queued acquire of ${r.cmd.key} by ${r.cmd.session} (wait ${r.waitMs} ms) has not returned after ${this.w.sched.now - r.startTrue} ms`);
      this.open.delete(r);
    }
  }
}
