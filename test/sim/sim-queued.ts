/**
 * The queued-acquire workload: a few clients take a hot lock through LockQueues
 * (`?acquire=&wait=`), mostly at one "home" node so its queue holds several waiters, hold it briefly and
 * release it through the same node's queue (the release hands the lock to the parked head in the same
 * commit). Each client keeps one session (TTL 20 s, not bound to the gossip check) renewed through
 * random nodes until the chaos phase ends. queue-checker.ts holds the invariants.
 */
import type { Command, KvAcquire, KvRelease } from '../../src/domain/commands.ts';
import type { Result } from '../../src/state/index.ts';
import { QueueChecker, type QueuedRequest } from './queue-checker.ts';
import { nextValue, type SimNode, type SimWorld } from './sim-world.ts';

const queueKeys = ['queue/a', 'queue/b'] as const;
const sessionTtlMs = 20_000;
/** How long a request that reached no answer (its node crashed) is waited for beyond its wait. */
const giveUpMs = 20_000;
/** A release whose node went away or whose outcome is unknown is tried again, through some node that is up. */
const releaseAttemptsMax = 4;
const releaseRetryMs = 500;

interface QueuedClient {
  name: string;
  session: string | undefined;
}

export class QueuedClients {
  private readonly checker: QueueChecker;
  private readonly home: string;

  constructor(private readonly w: SimWorld, driftMax: number) {
    this.checker = new QueueChecker(w, queueKeys, driftMax);
    this.home = w.prng.pick(w.names);
  }

  schedule(): void {
    const p = this.w.prng;
    const count = p.int(3, 5);
    for (let k = 1; k <= count; k++) {
      const c: QueuedClient = { name: `q${k}`, session: undefined };
      this.w.sched.at(p.int(1_500, 3_000), `queued ${c.name}`, () => this.step(c));
    }
  }

  afterStep(): void {
    this.checker.afterStep();
  }

  /** One request of the client; the next starts when it settles, or after a bound when it never does. */
  private step(c: QueuedClient): void {
    const { w } = this;
    if (!w.chaos) return;
    const p = w.prng;
    const target = w.nodes.get(p.chance(0.75) ? this.home : p.pick(w.names))!;
    let settled = false;
    const next = () => {
      if (settled) return;
      settled = true;
      w.sched.after(p.int(50, 800), `queued ${c.name}`, () => this.step(c));
    };
    const waitMs = p.int(1_000, 15_000);
    w.sched.after(waitMs + giveUpMs, `queued ${c.name} gives up`, next);
    const key = p.pick(queueKeys);
    const holdMs = p.int(20, 1_500);
    if (!target.up) { w.counts.refused++; next(); return; }
    w.sched.after(p.int(1, 20), `queued ${c.name}→${target.name}`, () => {
      if (c.session === undefined) this.createSession(c, target, next);
      else this.acquire(c, target, key, waitMs, holdMs, next);
    }, target.name, target.inc);
  }

  private createSession(c: QueuedClient, target: SimNode, next: () => void): void {
    const id = `${c.name}-${this.w.prng.hex(12)}`;
    const cmd: Command = {
      t: 'session.create', id, node: target.name, name: c.name, lockDelayNs: this.w.prng.pick([0, 0, 500e6]), behavior: 'release',
      ttl: `${sessionTtlMs / 1000}s`, ttlMs: sessionTtlMs, nodeChecks: [], serviceChecks: null,
    };
    this.proposeAcked(target, cmd).then((r) => {
      if (r?.ok) {
        c.session = id;
        this.renewLater(c, id);
      }
      next();
    }, next);
  }

  private acquire(c: QueuedClient, target: SimNode, key: string, waitMs: number, holdMs: number, next: () => void): void {
    const { w } = this;
    const cmd: KvAcquire = { t: 'kv.acquire', key, value: nextValue(w, c.name), flags: '0', session: c.session! };
    const req: QueuedRequest = {
      cmd, node: target.name, inc: target.inc, startTrue: w.sched.now, waitMs, disturbances: target.disturbances, settled: false,
    };
    this.checker.started(req);
    w.counts.clientOps++;
    target.runtime!.lockQueues.acquire(cmd, waitMs).then((result) => {
      this.checker.settled(req, result.ok);
      if (result.ok) w.checker.onAck(target.name, cmd, w.pidOf.get(cmd), result);
      if (!result.ok && result.reason === 'invalid-session') c.session = undefined;
      if (!result.ok) { next(); return; }
      w.sched.after(holdMs, `queued ${c.name} releases ${key}`, () => this.release(c, target, req.inc, key, next));
    }, () => {
      this.checker.settled(req, false);
      w.counts.unknown++;
      next();
    });
  }

  /**
   * Releases through the node's queue (handing the lock to a parked head in the same commit); when that
   * node is gone, or the outcome is unknown, through a random node that is up, a few times.
   */
  private release(c: QueuedClient, target: SimNode, inc: number, key: string, next: () => void, attempt = 1): void {
    const { w } = this;
    const session = c.session;
    if (session === undefined || attempt > releaseAttemptsMax) { next(); return; }
    const via = target.up && target.inc === inc ? target : w.nodes.get(w.prng.pick(w.names))!;
    if (!via.up || via.runtime === undefined) {
      w.sched.after(releaseRetryMs, `queued ${c.name} releases ${key} again`, () => this.release(c, target, inc, key, next, attempt + 1));
      return;
    }
    const again = () => this.release(c, target, inc, key, next, attempt + 1);
    // A client's request to a node: it waits while that node is paused, and is lost if the node crashes.
    w.sched.after(w.prng.int(1, 20), `queued ${c.name} releases ${key}→${via.name}`, () => {
      const cmd: KvRelease = { t: 'kv.release', key, value: nextValue(w, c.name), flags: '0', session };
      via.runtime!.lockQueues.release(cmd).then((result) => {
        w.checker.onAck(via.name, cmd, w.pidOf.get(cmd), result);
        next();
      }, () => {
        w.counts.unknown++;
        w.sched.after(releaseRetryMs, `queued ${c.name} releases ${key} again`, again);
      });
    }, via.name, via.inc);
  }

  /** The session's renew loop: every TTL/3 through a random node, until chaos ends or the session is gone. */
  private renewLater(c: QueuedClient, id: string): void {
    const { w } = this;
    w.sched.after(sessionTtlMs / 3, `queued renew ${id}`, () => {
      if (!w.chaos || c.session !== id) return;
      const target = w.nodes.get(w.prng.pick(w.names))!;
      if (target.up) {
        w.sched.after(w.prng.int(1, 20), `queued renew ${id}→${target.name}`, () => {
          this.proposeAcked(target, { t: 'session.renew', id }).then((r) => {
            if (r !== undefined && !r.ok && r.reason === 'session-not-found' && c.session === id) c.session = undefined;
          }, () => {});
        }, target.name, target.inc);
      }
      this.renewLater(c, id);
    });
  }

  /** Proposes through the node (undefined when it is down) and hands the answer to the checker. */
  private async proposeAcked(target: SimNode, cmd: Command): Promise<Result | undefined> {
    const rt = target.runtime;
    if (!target.up || rt === undefined) return undefined;
    const result = await rt.propose(cmd);
    this.w.checker.onAck(target.name, cmd, this.w.pidOf.get(cmd), result);
    return result;
  }
}
