/**
 * The runtime of one node: it proposes commands to the replicated log, applies committed entries to
 * the state in order, hands each proposer the result that apply computed for its entry, wakes blocking
 * queries, and hosts the owner actors (session TTL timers). It is the only place where effects happen.
 */
import { LockQueues } from './lock-queue.ts';
import { randomUUID } from 'node:crypto';
import { stepSession } from '../../machines/index.ts';
import type { Command } from '../domain/commands.ts';
import { gossipCheckId, gossipCheckName, gossipCheckOutputAlive, gossipCheckOutputFailed } from '../domain/limits.ts';
import type { Clock, TimerHandle } from '../ports/clock.ts';
import { isLogUnavailable, type Leadership, type LogEntry, type ReplicatedLog } from '../ports/log.ts';
import type { ProbeFactory } from '../ports/probe.ts';
import type { RuntimeObserver } from '../ports/observer.ts';
import { StaticMembership, type Membership } from '../ports/membership.ts';
import { ownerOf } from './ownership.ts';
import { apply, fromSnapshotData, RegistryState, toSnapshotData, type Effect, type Result } from '../state/index.ts';
import { CheckOwner, type CheckOwnerOptions } from './check-owner.ts';
import { ChangeLog, type ChangeLogOptions } from './changes.ts';
import { ServingTracker } from './serving.ts';
import { expiryRetryMs, TtlOwner } from './ttl-owner.ts';
import { Watches, type Interest, type Touched } from './watches.ts';

import type { Logger } from '../ports/logger.ts';

export type { Logger };

export interface RuntimeOptions {
  log: ReplicatedLog;
  clock: Clock;
  logger: Logger;
  nodeName: string;
  nodeId: string;
  /** Address other nodes and clients reach this node at. */
  address: string;
  /** Entries applied between two snapshots. @default 20000 */
  snapshotEveryEntries?: number;
  /** Called once when an entry cannot be applied; the node must stop. */
  onFatal?: (err: Error) => void;
  /** Builds probes for this agent's checks. @default no probes (checks are never run) */
  probeFor?: ProbeFactory;
  /** Who is in the cluster. @default the node alone (StaticMembership) */
  membership?: Membership;
  /** How long a starting node waits for gossip before judging members it has not heard. @default 10 s */
  membershipGraceMs?: number;
  /** How long a member must stay failed, in a view where a majority is alive, before it is reported. @default 2 s */
  failureConfirmMs?: number;
  /** Bounds of the ring of recent changes that stream subscribers resume from. */
  changes?: ChangeLogOptions;
  /** Check owner tuning (reaper period, DeregisterCriticalServiceAfter floor, interval floor). */
  checks?: Pick<CheckOwnerOptions, 'reapIntervalMs' | 'deregisterAfterMsMin' | 'intervalMsMin'>;
  /** Told how long appends and applies take (metrics). @default none */
  observer?: RuntimeObserver;
}

/**
 * A proposal's caller, answered once its entry has applied here *and* its append resolved (the log
 * vouches the entry is committed where it was read): whichever comes second answers.
 */
interface Pending {
  resolve: (r: Result) => void;
  reject: (e: Error) => void;
  appended: boolean;
  /** Apply's result, held until the append resolves. */
  result?: Result;
}

export class Runtime {
  state = new RegistryState();
  readonly watches = new Watches();
  readonly ttl: TtlOwner;
  readonly checkOwner: CheckOwner;
  readonly serving = new ServingTracker();
  /** FIFO queues of acquires waiting on a held lock (`?acquire=&wait=`). */
  readonly lockQueues = new LockQueues(this);
  /** What each entry changed, for streams that resume from an index. */
  readonly changes: ChangeLog;
  readonly membership: Membership;
  private readonly membershipGraceMs: number;
  private startedAtMs = 0;
  /** Set once start() listens to membership: from then on gossip-check entries are checked against it. */
  private watchingMembers = false;
  /** Nodes whose gossip check update this node has proposed and not yet seen applied. */
  private readonly healthInFlight = new Set<string>();
  /** Nodes this node has seen failed, in a majority view, since when (its clock): see reconcileNodeHealth. */
  private readonly failureSince = new Map<string, number>();
  private readonly failureConfirmMs: number;
  private confirmTimer: TimerHandle | undefined;
  readonly nodeName: string;
  readonly nodeId: string;
  readonly address: string;
  private readonly log: ReplicatedLog;
  private readonly clock: Clock;
  private readonly logger: Logger;
  private readonly snapshotEveryEntries: number;
  private readonly onFatal: ((err: Error) => void) | undefined;
  private readonly observer: RuntimeObserver | undefined;
  private readonly pending = new Map<string, Pending>();
  private readonly pidPrefix = randomUUID().slice(0, 8);
  private pidCounter = 0;
  private lastSnapshotIndex = 0;
  private snapshotInFlight: Promise<void> | undefined;
  private stopped = false;
  /** Set when applying failed: the node must not serve a state it could not build. */
  private fatal: Error | undefined;
  private logWritable = true;
  /**
   * Writes that wait for the log to store writes again (an agent started on a full disk: this node's
   * registration, the config file's definitions), run in the order given; bounded by what start asks for.
   */
  private readonly waitingForWritable: { what: string; write: () => Promise<void> }[] = [];
  private drainingWaiting = false;
  /** Counts the log's turns back to writable, so a write refused just before one is not left waiting for the next. */
  private writableTurns = 0;

  constructor(o: RuntimeOptions) {
    this.log = o.log;
    this.clock = o.clock;
    this.logger = o.logger;
    this.nodeName = o.nodeName;
    this.nodeId = o.nodeId;
    this.address = o.address;
    this.snapshotEveryEntries = o.snapshotEveryEntries ?? 20_000;
    this.onFatal = o.onFatal;
    this.observer = o.observer;
    this.changes = new ChangeLog(o.changes);
    this.membership = o.membership ?? new StaticMembership({ name: o.nodeName, id: o.nodeId, http: o.address, grpc: o.address });
    this.membershipGraceMs = o.membershipGraceMs ?? 10_000;
    this.failureConfirmMs = o.failureConfirmMs ?? 2_000;
    this.checkOwner = new CheckOwner({
      clock: o.clock, nodeName: o.nodeName, state: () => this.state, propose: (cmd) => this.propose(cmd),
      probeFor: o.probeFor ?? (() => undefined), logger: o.logger, ...o.checks,
    });
    this.ttl = new TtlOwner(o.clock, (id, renewIndex) =>
      this.propose({ t: 'session.expire', id, renewIndex }).then(
        () => this.expiryShortBy(id, renewIndex),
        (err: unknown) => {
          this.logger.warn({ err, session: id }, 'session expiry proposal failed; retrying');
          return expiryRetryMs;
        },
      ));
  }

  /** Opens the log, restores the snapshot, replays the tail, registers this node, restarts TTL timers. */
  async start(): Promise<void> {
    this.log.onWritable?.((writable) => {
      this.logWritable = writable;
      this.serving.setWritable(writable);
      if (!writable) return;
      this.writableTurns++;
      void this.runWaiting();
    });
    const snapshot = await this.log.open();
    if (snapshot !== undefined) {
      this.state = fromSnapshotData(snapshot.data);
      this.lastSnapshotIndex = snapshot.index;
    }
    this.log.subscribe(this.state.index, (entries) => this.onEntries(entries));
    if (this.fatal) throw this.fatal;
    this.logger.info({ index: this.state.index, sessions: this.state.sessions.size, keys: this.state.kv.size }, 'state recovered');
    this.startedAtMs = this.clock.nowMs();
    this.rebalanceTtlTimers();
    await this.onceWritable('this node\'s registration', () => this.registerSelf());
    this.checkOwner.start();
    this.serving.start(this.state);
    this.changes.startAt(this.state.index);
    this.membership.onChange(() => this.membershipChanged());
    this.watchingMembers = true;
    // Members that died before this node started are never heard: judge them once the grace has passed.
    this.clock.setTimer(this.membershipGraceMs, () => this.membershipChanged());
  }

  /** The log's leadership as this node sees it; a single-node log: this node leads. */
  leadership(): Leadership {
    return this.log.leadership?.() ?? { leader: undefined, peers: [], lastContactMs: 0 };
  }

  /** Whether this node owns the actor (rendezvous hashing over the alive members). */
  owns(actor: string): boolean {
    return ownerOf(actor, this.membership.alive()) === this.nodeName;
  }

  /** Proposes a command; resolves with apply's result once its entry applied on this node and its append resolved. */
  propose(cmd: Command): Promise<Result> {
    return this.proposeAll([cmd])[0]!;
  }

  /** Several commands in one append: they commit together, consecutively, in this order. */
  proposeAll(cmds: readonly Command[]): Promise<Result>[] {
    if (this.fatal) return cmds.map(() => Promise.reject(this.fatal));
    if (this.stopped) return cmds.map(() => Promise.reject(new Error('runtime is stopping')));
    const pids = cmds.map(() => `${this.pidPrefix}-${++this.pidCounter}`);
    const results = pids.map((pid) => new Promise<Result>((resolve, reject) => this.pending.set(pid, { resolve, reject, appended: false })));
    const observer = this.observer;
    const startedMs = observer === undefined ? 0 : performance.now();
    this.log.append(cmds.map((cmd, k) => ({ pid: pids[k]!, cmd }))).then(() => {
      observer?.appended((performance.now() - startedMs) / 1000);
      for (const pid of pids) {
        const waiter = this.pending.get(pid);
        if (waiter === undefined) continue;
        if (waiter.result === undefined) {
          waiter.appended = true;
          continue;
        }
        this.pending.delete(pid);
        waiter.resolve(waiter.result);
      }
    }, (err: unknown) => {
      // Even one applied here already: the log cannot vouch for where it was read, so the outcome is unknown.
      for (const pid of pids) {
        const waiter = this.pending.get(pid);
        if (waiter === undefined) continue;
        this.pending.delete(pid);
        waiter.reject(err instanceof Error ? err : new Error(String(err)));
      }
    });
    return results;
  }

  /** Linearizable read point: resolves once everything committed before the call has applied. */
  async barrier(): Promise<void> {
    await this.propose({ t: 'barrier' });
  }

  /**
   * Blocking-query core: resolves when `indexOf()` exceeds `minIndex` or `waitMs` passes. The caller
   * re-reads afterwards; an early wake with the same data is allowed, as in Consul.
   */
  async waitForIndex(interest: Interest, indexOf: () => number, minIndex: number, waitMs: number, signal?: AbortSignal): Promise<void> {
    const deadline = this.clock.nowMs() + waitMs;
    while (indexOf() <= minIndex && !this.stopped && !signal?.aborted) {
      const left = deadline - this.clock.nowMs();
      if (left <= 0) return;
      await this.watches.wait(interest, left, signal);
    }
  }

  /** Proposals waiting for their entry to apply. */
  get inFlight(): number {
    return this.pending.size;
  }

  get isStopping(): boolean {
    return this.stopped;
  }

  /** False while the log cannot store writes (the WAL's disk is full, or the log failed): writes are refused meanwhile. */
  get writable(): boolean {
    return this.logWritable && this.fatal === undefined;
  }

  async stop(): Promise<void> {
    if (this.stopped) return;
    this.stopped = true;
    this.serving.shutdown();
    this.ttl.stop();
    if (this.confirmTimer !== undefined) this.clock.clearTimer(this.confirmTimer);
    this.checkOwner.stop();
    this.watches.wakeAll();
    await this.snapshotInFlight;
    try {
      if (this.fatal === undefined && this.state.index > this.lastSnapshotIndex) await this.saveSnapshot();
    } catch (err) {
      // The log holds every acknowledged entry; the snapshot only shortens the next start's replay
      // (it fails when the disk is full, say): not a reason to fail the shutdown.
      this.logger.warn({ err }, 'shutdown snapshot failed; the next start replays the log instead');
    } finally {
      await this.log.close();
    }
  }

  // ---------------------------------------------------------------- internals

  private onEntries(entries: readonly LogEntry[]): void {
    if (this.fatal) return;
    const startedMs = this.observer === undefined ? 0 : performance.now();
    const touched: Touched = { kvKeys: new Set(), sessions: false, catalog: false };
    const checks = new Set<string>();
    let gossipChecks = false;
    for (const entry of entries) {
      let applied;
      try {
        applied = apply(this.state, entry);
      } catch (err) {
        this.fail(err);
        return;
      }
      for (const e of applied.effects) {
        if (e.t === 'check' && e.checkId === gossipCheckId) gossipChecks = true;
        if (e.t === 'check' && e.node === this.nodeName) checks.add(e.checkId);
        else this.collect(e, touched);
      }
      this.changes.record(entry.index, entry.atMs, applied.effects);
      const waiter = this.pending.get(entry.pid);
      if (waiter !== undefined && waiter.result === undefined) {
        // A success carries its entry's index: the answer's X-Consul-Index, a fencing token for locks.
        const result = applied.result.ok ? { ...applied.result, index: entry.index } : applied.result;
        if (waiter.appended) {
          this.pending.delete(entry.pid);
          waiter.resolve(result);
        } else {
          waiter.result = result;
        }
      }
    }
    if (touched.kvKeys.size > 0 || touched.sessions || touched.catalog) this.watches.notify(touched);
    for (const checkId of checks) this.checkOwner.reconcile(checkId);
    if (touched.catalog) {
      this.checkOwner.catalogChanged();
      this.serving.update(this.state);
    }
    if (gossipChecks && this.watchingMembers && !this.stopped) this.reconcileNodeHealth(true);
    this.maybeSnapshot();
    this.observer?.applied(entries.length, (performance.now() - startedMs) / 1000);
  }

  private collect(e: Effect, touched: Touched): void {
    switch (e.t) {
      case 'kv': touched.kvKeys.add(e.key); break;
      case 'sessions': touched.sessions = true; break;
      case 'catalog': touched.catalog = true; break;
      case 'ttl.arm':
        if (this.stopped) break;
        if (this.owns(`session:${e.id}`)) this.ttl.arm(e.id, e.renewIndex, e.ttlMs);
        else this.ttl.cancel(e.id);
        break;
      case 'ttl.cancel': this.ttl.cancel(e.id); break;
      case 'check': case 'session': case 'service': case 'node': break;
    }
  }

  private fail(err: unknown): void {
    this.fatal = err instanceof Error ? err : new Error(String(err));
    this.logger.error({ err: this.fatal }, 'apply failed; this node stops serving');
    for (const [pid, waiter] of this.pending) {
      this.pending.delete(pid);
      waiter.reject(this.fatal);
    }
    this.watches.wakeAll();
    this.onFatal?.(this.fatal);
  }

  /**
   * "leader failover | TTL set | valid | the TTL timer is restarted": a node that (newly) owns a session
   * starts its timer afresh, for a full 2 × TTL; timers of sessions it no longer owns are dropped.
   */
  private rebalanceTtlTimers(): void {
    for (const s of this.state.sessions.values()) {
      if (!this.owns(`session:${s.id}`)) {
        this.ttl.cancel(s.id);
        continue;
      }
      if (this.ttl.has(s.id)) continue;
      const next = stepSession(
        { behavior: s.behavior, ttlMs: s.ttlMs, renewIndex: s.renewIndex, renewedAtMs: s.renewedAtMs },
        { type: 'leader.failover' },
      );
      if (next.effects.some((e) => e.type === 'restartTtlTimer')) this.ttl.arm(s.id, s.renewIndex, s.ttlMs);
    }
  }

  /**
   * After an expiry proposal applied: how far the log's time still is from the session's TTL, when the
   * session is still there unrenewed (else undefined: expired, renewed or gone). Entry times come from
   * the proposers' clocks, so when a node whose clock runs ahead stamped the last renew, the owner's timer
   * (which measures 2 × TTL on its own clock) can fire before the log's time reaches renew + TTL; apply
   * then refuses the expiry, and without another try the session would outlive its TTL indefinitely
   * (found by test/sim with clocks 15–30 s apart). The owner tries again once the log should have caught up.
   */
  private expiryShortBy(id: string, renewIndex: number): number | undefined {
    const s = this.state.sessions.get(id);
    if (s === undefined || s.renewIndex !== renewIndex || s.ttlMs <= 0) return undefined;
    return s.renewedAtMs + s.ttlMs - this.state.atMs;
  }

  private membershipChanged(): void {
    if (this.stopped || this.fatal) return;
    this.rebalanceTtlTimers();
    this.reconcileNodeHealth();
  }

  /**
   * A member that failed or left gets its gossip check critical (invalidating the sessions bound to it);
   * one that is back gets it passing. One alive member — the owner of the node's name — proposes it;
   * the proposal changes nothing when the check already says so.
   *
   * Failures are reported only by a node that sees a majority of the cluster's Roster nodes alive (itself
   * included; nodes that left cleanly do not count). A node cut off from the others, or just woken from a
   * pause with a stale view, sees them all failed: its reports would commit once it is reconnected and
   * invalidate the sessions of healthy nodes (found by test/faults partition and pause scenarios).
   *
   * And only once the failure has held for `failureConfirmMs` in such a view: gossip notices each peer on
   * its own timer, so a node being cut off first sees one peer failed and the rest alive (a majority) for
   * a moment, and a node being reconnected first sees one peer back; a report made then would be wrong.
   *
   * After an entry changed a gossip check (`afterEntries`) it only corrects towards alive: a report that
   * got through anyway is undone by the owner, which sees the node alive, or by the node itself, which is
   * evidently running (only a report of the failure detector's, recognised by its output). New failure reports come only from membership changes, so two nodes whose views
   * disagree (an asymmetric partition) cannot keep proposing against each other.
   */
  private reconcileNodeHealth(afterEntries = false): void {
    const members = new Map(this.membership.members().map((m) => [m.name, m]));
    const graceOver = this.clock.nowMs() - this.startedAtMs >= this.membershipGraceMs;
    const rosterNodes = [...this.state.nodes.values()].filter((node) => {
      const check = this.state.checkOf(node.node, gossipCheckId);
      return check !== undefined && check.source === 'catalog' && check.name === gossipCheckName;
    });
    const counted = rosterNodes.filter((node) => node.node === this.nodeName || members.get(node.node)?.status !== 'left');
    const aliveCount = counted.filter((node) => node.node === this.nodeName || members.get(node.node)?.status === 'alive').length;
    const inMajority = 2 * aliveCount > counted.length;
    const now = this.clock.nowMs();
    for (const node of rosterNodes) {
      const self = node.node === this.nodeName;
      const member = members.get(node.node);
      const alive = self || member?.status === 'alive';
      const reportable = !alive && inMajority && (member !== undefined || graceOver);
      if (!reportable) this.failureSince.delete(node.node);
      if (this.healthInFlight.has(node.node)) continue;
      const check = this.state.checkOf(node.node, gossipCheckId)!;
      if (!alive && (afterEntries || !reportable)) continue;
      const wanted = alive ? 'passing' : 'critical';
      if (check.status === wanted || (!self && !this.owns(`node:${node.node}`))) continue;
      // A node undoes only the failure detector's reports about itself, not a status written by hand.
      if (self && check.output !== gossipCheckOutputFailed) continue;
      if (!alive) {
        const since = this.failureSince.get(node.node) ?? now;
        this.failureSince.set(node.node, since);
        if (now - since < this.failureConfirmMs) {
          // One pending look at a time; it reschedules itself for any failure still unconfirmed then.
          this.confirmTimer ??= this.clock.setTimer(since + this.failureConfirmMs - now, () => {
            this.confirmTimer = undefined;
            if (!this.stopped && !this.fatal) this.reconcileNodeHealth();
          });
          continue;
        }
      }
      this.healthInFlight.add(node.node);
      this.logger.info({ node: node.node, status: wanted, aliveSeen: aliveCount, counted: counted.length }, 'gossip check: reporting the node');
      void this.propose({
        t: 'catalog.register', node: node.node, id: node.id, address: node.address, meta: node.meta,
        checks: [{ checkId: gossipCheckId, name: gossipCheckName, status: wanted, notes: '', output: alive ? gossipCheckOutputAlive : gossipCheckOutputFailed }],
      }).catch((err: unknown) => this.logger.warn({ err, node: node.node }, 'gossip check update failed; retried on the next membership or catalog change'))
        .finally(() => this.healthInFlight.delete(node.node));
    }
  }

  /**
   * Runs `write` now, or, while the log cannot store writes (an agent started on a full disk), serves
   * reads meanwhile and runs it once the log can again, after the writes waiting before it (so this
   * node is registered before the services defined on it). Resolves once `write` ran or was set aside;
   * a failure other than "log unavailable" rejects now, or is logged when it happens later.
   */
  async onceWritable(what: string, write: () => Promise<void>): Promise<void> {
    const turn = this.writableTurns;
    if (this.waitingForWritable.length === 0 && this.logWritable) {
      try {
        await write();
        return;
      } catch (err) {
        if (!isLogUnavailable(err)) throw err;
      }
    }
    this.waitingForWritable.push({ what, write });
    this.logger.warn({ what }, 'the log cannot store writes: deferred until it can');
    if (this.writableTurns !== turn) void this.runWaiting();
  }

  /** Runs the waiting writes in order; one refused as unavailable again stays first for the next writable turn. */
  private async runWaiting(): Promise<void> {
    if (this.drainingWaiting) return;
    this.drainingWaiting = true;
    try {
      while (this.waitingForWritable.length > 0 && !this.stopped && !this.fatal) {
        const next = this.waitingForWritable[0]!;
        const turn = this.writableTurns;
        try {
          await next.write();
          this.logger.info({ what: next.what }, 'deferred write done: the log stores writes again');
        } catch (err) {
          // Writable again meanwhile (a turn this loop would otherwise miss): try again; else wait for the next turn.
          if (isLogUnavailable(err)) {
            if (this.writableTurns !== turn) continue;
            return;
          }
          this.logger.error({ err, what: next.what }, 'a deferred write failed; it is not retried');
        }
        this.waitingForWritable.shift();
      }
    } finally {
      this.drainingWaiting = false;
    }
  }

  /** Registers this node and its gossip check in the catalog (a no-op write when unchanged). */
  private async registerSelf(): Promise<void> {
    await this.propose({
      t: 'catalog.register', node: this.nodeName, id: this.nodeId, address: this.address, meta: {},
      checks: [{ checkId: gossipCheckId, name: gossipCheckName, status: 'passing', notes: '', output: gossipCheckOutputAlive }],
    });
  }

  private maybeSnapshot(): void {
    if (this.snapshotInFlight !== undefined || this.stopped) return;
    // Every snapshotEveryEntries entries, but never more often than once per state's worth of entries:
    // a snapshot costs time in proportion to the state, so this keeps its cost per entry bounded
    // (1M keys snapshotted every 20,000 entries made a loading agent write 7 GB of snapshots).
    const stateItems = this.state.kv.size + this.state.sessions.size;
    if (this.state.index - this.lastSnapshotIndex < Math.max(this.snapshotEveryEntries, stateItems)) return;
    this.snapshotInFlight = this.saveSnapshot()
      .catch((err: unknown) => this.logger.warn({ err }, 'snapshot failed; will retry later'))
      .finally(() => { this.snapshotInFlight = undefined; });
  }

  private async saveSnapshot(): Promise<void> {
    const index = this.state.index;
    const data = toSnapshotData(this.state);
    await this.log.saveSnapshot({ index, data });
    this.lastSnapshotIndex = index;
    this.logger.info({ index }, 'snapshot saved');
  }
}
