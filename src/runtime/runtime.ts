/**
 * The runtime of one node: it proposes commands to the replicated log, applies committed entries to
 * the state in order, hands each proposer the result that apply computed for its entry, wakes blocking
 * queries, and hosts the owner actors (session TTL timers, this agent's checks, node health, queued
 * lock acquisitions). It is the only place where effects happen.
 */
import { hasEffect, stepSession } from '../../machines/index.ts';
import type { Command, StateRestore } from '../domain/commands.ts';
import { gossipCheckId } from '../domain/limits.ts';
import { intervalMs, type Clock } from '../ports/clock.ts';
import type { Leadership, LogEntry, LogStatus, ReplicatedLog } from '../ports/log.ts';
import type { Logger } from '../ports/logger.ts';
import { StaticMembership, type Membership } from '../ports/membership.ts';
import type { RuntimeObserver } from '../ports/observer.ts';
import type { ProbeFactory } from '../ports/probe.ts';
import type { Random } from '../ports/random.ts';
import { apply, fromSnapshotData, RegistryState, restoreCommand, type Effect, type Result } from '../state/index.ts';
import { ChangeLog, type ChangeLogOptions } from './changes.ts';
import { CheckOwner, type CheckOwnerOptions } from './check-owner.ts';
import { gatedSubmit, type GateHost } from './command-gate.ts';
import { DeferredWrites } from './deferred-writes.ts';
import { LockQueues } from './lock-queue.ts';
import { NodeHealthOwner } from './node-health.ts';
import { ownerOf } from './ownership.ts';
import { Proposals } from './proposals.ts';
import { SelfRegistration } from './self-registration.ts';
import { ServingTracker, type CatalogEffect } from './serving.ts';
import { Snapshots } from './snapshots.ts';
import { StateQuota } from './state-quota.ts';
import { expiryRetryMs, TtlOwner } from './ttl-owner.ts';
import { Watches, type Interest, type Touched } from './watches.ts';
import type { StopSignal } from '../util/stop.ts';

export type { Logger };

export interface RuntimeOptions {
  log: ReplicatedLog;
  clock: Clock;
  logger: Logger;
  nodeName: string;
  nodeId: string;
  /** Address other nodes and clients reach this node at. */
  address: string;
  /** This node's metadata in the catalog. @default {} */ nodeMeta?: Record<string, string>;
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
  /** One of a cluster's nodes: see command-gate.ts for what it changes. @default false */
  clustered?: boolean;
  /** A single agent: no node but this one is or will be a member (node-health.ts). @default true without `membership` */
  alone?: boolean;
  /** How long a member must stay failed, in a view where a majority is alive, before it is reported. @default 2 s */
  failureConfirmMs?: number;
  /** Bounds of the ring of recent changes that stream subscribers resume from. */
  changes?: ChangeLogOptions;
  /** Check owner tuning (reaper period, DeregisterCriticalServiceAfter floor, interval floor). */
  checks?: Pick<CheckOwnerOptions, 'reapIntervalMs' | 'deregisterAfterMsMin' | 'intervalMsMin' | 'probesMax' | 'updateIntervalMs'>;
  /** A write not confirmed (committed and applied here) this long is answered as timed out, outcome unknown. @default 30 s */
  writeTimeoutMs?: number;
  /** Told how long appends and applies take (metrics). @default none */
  observer?: RuntimeObserver;
  /** Draws the jitter of each check's first probe. @default Math.random */
  random?: Random;
}

export class Runtime {
  state = new RegistryState();
  readonly watches: Watches;
  readonly ttl: TtlOwner;
  readonly checkOwner: CheckOwner;
  readonly nodeHealth: NodeHealthOwner;
  readonly serving = new ServingTracker();
  /** FIFO queues of acquires waiting on a held lock (`?acquire=&wait=`). */
  readonly lockQueues: LockQueues;
  /** What each entry changed, for streams that resume from an index. */
  readonly changes: ChangeLog;
  readonly membership: Membership;
  private readonly membershipGraceMs: number;
  private readonly gate: GateHost;
  /** Past limits.state_bytes_max, writes that would grow the state are refused (state-quota.ts). */
  readonly quota = new StateQuota();
  readonly nodeName: string;
  readonly nodeId: string;
  readonly address: string;
  /** This node's own registration in the catalog (self-registration.ts). */
  readonly registration: SelfRegistration;
  private readonly log: ReplicatedLog;
  private readonly clock: Clock;
  readonly logger: Logger;
  private readonly onFatal: ((err: Error) => void) | undefined;
  private readonly observer: RuntimeObserver | undefined;
  private readonly proposals: Proposals;
  private readonly snapshots: Snapshots;
  private readonly deferred: DeferredWrites;
  private stopped = false;
  /** Set when applying failed: the node must not serve a state it could not build. */
  private fatal: Error | undefined;

  constructor(o: RuntimeOptions) {
    this.log = o.log;
    this.clock = o.clock;
    this.logger = o.logger;
    this.nodeName = o.nodeName;
    this.nodeId = o.nodeId;
    this.address = o.address;
    this.onFatal = o.onFatal;
    this.observer = o.observer;
    this.watches = new Watches(o.clock);
    this.proposals = new Proposals(o.log, o.observer, o.clock, o.writeTimeoutMs ?? 30_000);
    this.snapshots = new Snapshots(o.log, o.logger, o.snapshotEveryEntries ?? 20_000, () => this.state, o.clock);
    this.deferred = new DeferredWrites(o.logger, () => this.running);
    this.changes = new ChangeLog(o.changes);
    this.membership = o.membership ?? new StaticMembership({ name: o.nodeName, id: o.nodeId, http: o.address, grpc: o.address });
    this.membershipGraceMs = o.membershipGraceMs ?? 10_000;
    this.checkOwner = new CheckOwner({
      clock: o.clock, nodeName: o.nodeName, state: () => this.state, propose: (cmd) => this.propose(cmd),
      probeFor: o.probeFor ?? (() => undefined), logger: o.logger, ...(o.random ? { random: o.random } : {}), ...o.checks, ...(o.observer ? { observer: o.observer } : {}),
    });
    this.ttl = new TtlOwner(o.clock, (id, renewIndex) => this.proposeExpire(id, renewIndex));
    this.nodeHealth = new NodeHealthOwner({ clock: o.clock, logger: o.logger, nodeName: o.nodeName, membership: this.membership, state: () => this.state, owns: (actor) => this.owns(actor), propose: (cmd) => this.propose(cmd), running: () => this.running },
      { graceMs: this.membershipGraceMs, failureConfirmMs: o.failureConfirmMs ?? 2_000, alone: o.alone ?? o.membership === undefined });
    this.gate = {
      overQuota: (cmds) => this.quota.refusal(cmds, this.state), selfName: o.nodeName, members: () => this.membership.members(), submit: (cmds) => this.submitNow(cmds),
      heardOrGraceOver: () => (o.clustered === true ? this.nodeHealth.heardOrGraceOver() : Promise.resolve()),
    };
    this.registration = new SelfRegistration({
      self: { name: o.nodeName, id: o.nodeId, address: o.address, meta: o.nodeMeta ?? {} }, clock: o.clock, logger: o.logger, clustered: o.clustered === true,
      state: () => this.state, members: () => this.membership.members(), propose: (cmd) => this.propose(cmd),
      heardOrGraceOver: () => this.gate.heardOrGraceOver(), onceWritable: (w, write) => this.onceWritable(w, write), running: () => this.running,
    });
    this.lockQueues = new LockQueues({
      clock: o.clock, state: () => this.state, propose: (cmd) => this.propose(cmd), proposeAll: (cmds) => this.proposeAll(cmds),
      waitForKey: (key, index, waitMs, signal) =>
        this.waitForIndex({ kind: 'key', key }, () => this.state.kvKeyIndex(key), index, waitMs, signal),
      stopping: () => this.stopped, othersExist: () => this.membership.members().length > 1,
      ...(o.observer?.lockQueued ? { queued: o.observer.lockQueued.bind(o.observer) } : {}),
    });
  }

  /** Opens the log, restores the snapshot, replays the tail, registers this node, restarts TTL timers. */
  async start(): Promise<void> {
    this.log.onWritable?.((writable) => {
      this.serving.setWritable(writable);
      this.deferred.writableChanged(writable);
    });
    const snapshot = await this.log.open();
    if (snapshot !== undefined) {
      this.state = fromSnapshotData(snapshot.data);
      this.snapshots.lastIndex = snapshot.index;
    }
    this.log.subscribe(this.state.index, (entries) => this.onEntries(entries));
    if (this.fatal) throw this.fatal;
    this.logger.info({ index: this.state.index, sessions: this.state.sessions.size, keys: this.state.kv.size }, 'state recovered');
    this.nodeHealth.start();
    this.rebalanceTtlTimers();
    await this.registration.atStart();
    this.checkOwner.start();
    this.serving.start(this.state);
    this.changes.startAt(this.state.index);
    this.membership.onChange(() => this.membershipChanged());
    this.nodeHealth.watch();
    // Members that died before this node started are never heard: judge them once the grace has passed.
    this.clock.setTimer(this.membershipGraceMs, () => this.membershipChanged());
  }

  /** The log's leadership as this node sees it; a single-node log: this node leads. */
  leadership(): Leadership {
    return this.log.leadership?.() ?? { leader: undefined, peers: [], lastContactMs: 0 };
  }

  /** The log's indexes, copies and the nodes' progress; undefined for a log that reports none (a twin). */
  logStatus(): LogStatus | undefined {
    return this.log.status?.();
  }

  /** Whether this node owns the actor: rendezvous hashing over the alive members that can use the log (Membership.owners). */
  owns(actor: string): boolean {
    return ownerOf(actor, this.membership.owners()) === this.nodeName;
  }

  /** Proposes a command; resolves with apply's result once its entry applied on this node and its append resolved. */
  propose(cmd: Command): Promise<Result> {
    return this.proposeAll([cmd])[0]!;
  }

  /** Several commands in one append: they commit together, consecutively, in this order. */
  proposeAll(cmds: readonly Command[]): Promise<Result>[] {
    return gatedSubmit(cmds, this.gate) ?? this.submitNow(cmds);
  }

  /** Submits an append now, unless the runtime failed or is stopping (checked again after the gate's wait). */
  private submitNow(cmds: readonly Command[]): Promise<Result>[] {
    if (this.fatal) return cmds.map(() => Promise.reject(this.fatal));
    if (this.stopped) return cmds.map(() => Promise.reject(new Error('runtime is stopping')));
    return this.proposals.submit(cmds);
  }

  /** Stores bytes too large for one entry next to the log: the name an entry carries (undefined: a cluster's log cannot). */
  async storeAttachment(bytes: Buffer, sha256: string): Promise<string | undefined> {
    return this.log.storeAttachment?.(bytes, sha256);
  }

  /** Linearizable read point: resolves once everything committed before the call has applied. */
  async barrier(): Promise<void> {
    await this.propose({ t: 'barrier' });
  }

  /**
   * Blocking-query core: resolves when `indexOf()` exceeds `minIndex` or `waitMs` passes. The caller
   * re-reads afterwards; an early wake with the same data is allowed, as in Consul.
   */
  async waitForIndex(interest: Interest, indexOf: () => number, minIndex: number, waitMs: number, signal?: StopSignal): Promise<void> {
    const deadline = intervalMs(this.clock) + waitMs;
    while (indexOf() <= minIndex && !this.stopped && !signal?.aborted) {
      const left = deadline - intervalMs(this.clock);
      if (left <= 0) return;
      await this.watches.wait(interest, left, signal);
    }
  }

  /**
   * Runs `write` now, or, while the log cannot store writes (an agent started on a full disk), serves
   * reads meanwhile and runs it once the log can again (see DeferredWrites).
   */
  onceWritable(what: string, write: () => Promise<void>): Promise<void> {
    return this.deferred.onceWritable(what, write);
  }

  /** Proposals waiting for their entry to apply. */
  get inFlight(): number {
    return this.proposals.size;
  }

  get isStopping(): boolean {
    return this.stopped;
  }

  /** False while the log cannot store writes (the WAL's disk is full, or the log failed): writes are refused meanwhile. */
  get writable(): boolean {
    return this.deferred.logWritable && this.fatal === undefined;
  }

  async stop(): Promise<void> {
    if (this.stopped) return;
    this.stopped = true;
    this.serving.shutdown();
    this.ttl.stop();
    this.nodeHealth.stop();
    this.checkOwner.stop();
    this.watches.wakeAll();
    this.proposals.stop();
    await this.snapshots.settled();
    try {
      if (this.fatal === undefined && this.state.index > this.snapshots.lastIndex) await this.snapshots.save(this.state);
    } catch (err) {
      // The log holds every acknowledged entry; the snapshot only shortens the next start's replay
      // (it fails when the disk is full, say): not a reason to fail the shutdown.
      this.logger.warn({ err }, 'shutdown snapshot failed; the next start replays the log instead');
    } finally {
      await this.log.close();
    }
  }

  // ---------------------------------------------------------------- internals

  private get running(): boolean {
    return !this.stopped && this.fatal === undefined;
  }

  private onEntries(entries: readonly LogEntry[]): void {
    if (this.fatal) return;
    const startedMs = this.observer === undefined ? 0 : performance.now();
    const touched: Touched = { kvKeys: new Set(), sessions: false, catalog: false, services: new Set() };
    const [checks, served] = [new Set<string>(), [] as CatalogEffect[]];
    let [gossipChecks, restored, selfTouched] = [false, false, false];
    for (const entry of entries) {
      let applied;
      try {
        applied = apply(this.state, entry.cmd.t === 'state.restore' ? this.restoreEntry(entry, entry.cmd) : entry);
      } catch (err) {
        this.fail(err);
        return;
      }
      this.observer?.entryApplied?.(entry, applied, this.proposals.proposedHere(entry.pid));
      for (const e of applied.effects) {
        if (e.t === 'check' && e.checkId === gossipCheckId) gossipChecks = true;
        if (e.t === 'node' || e.t === 'check' || e.t === 'service') served.push(e);
        if ((e.t === 'node' || e.t === 'check') && e.node === this.nodeName) selfTouched = true;
        if (e.t === 'check' && e.node === this.nodeName) checks.add(e.checkId);
        else this.collect(e, touched);
      }
      this.changes.record(entry.index, entry.atMs, applied.effects);
      this.proposals.applied(entry.pid, entry.index, applied.result);
      if (entry.cmd.t === 'state.restore') restored = true;
    }
    this.afterEntries(touched, checks, gossipChecks, restored ? undefined : served);
    // A restore, or a client's deregistration, may leave this node missing: it registers again (Consul's anti-entropy).
    if (restored || selfTouched) this.registration.entriesApplied();
    this.observer?.applied(entries.length, (performance.now() - startedMs) / 1000);
  }

  /** What a batch of applied entries sets in motion: wake-ups, the owners' reconciling, serving statuses (every one after a restore), a snapshot. */
  private afterEntries(touched: Touched, checks: ReadonlySet<string>, gossipChecks: boolean, served: CatalogEffect[] | undefined): void {
    if (touched.kvKeys.size > 0 || touched.sessions || touched.catalog) this.watches.notify(touched);
    for (const checkId of checks) this.checkOwner.reconcile(checkId);
    if (touched.catalog) {
      this.checkOwner.catalogChanged();
      this.serving.update(this.state, served);
    }
    if (served === undefined) this.nodeHealth.restored(); else if (gossipChecks) this.nodeHealth.entriesChanged();
    if (!this.stopped) this.snapshots.maybe(this.state, served === undefined);
  }

  /** A restore entry with its snapshot's data, loaded from the log's attachment when it names one. */
  private restoreEntry(entry: LogEntry, cmd: StateRestore): LogEntry {
    const resolved = restoreCommand(cmd, this.log.loadAttachment?.bind(this.log));
    return resolved === cmd ? entry : { ...entry, cmd: resolved };
  }

  private collect(e: Effect, touched: Touched): void {
    switch (e.t) {
      case 'kv': touched.kvKeys.add(e.key); break;
      case 'sessions': touched.sessions = true; break;
      case 'catalog': touched.catalog = true; break;
      case 'ttl.arm':
        if (this.stopped) break;
        if (this.owns(`session:${e.id}`)) this.ttl.arm(e.id, e.renewIndex, e.ttlMs); else this.ttl.cancel(e.id);
        break;
      case 'ttl.cancel': this.ttl.cancel(e.id); break;
      case 'session': this.lockQueues.sessionChanged(e.id); break;
      case 'serviceIndex': touched.services.add(e.name); break;
      case 'check': case 'service': case 'node': break;
    }
  }

  private fail(err: unknown): void {
    this.fatal = err instanceof Error ? err : new Error(String(err));
    this.logger.error({ err: this.fatal }, 'apply failed; this node stops serving');
    this.proposals.rejectAll(this.fatal);
    this.watches.wakeAll();
    this.onFatal?.(this.fatal);
  }

  /** The TTL owner's conditional expiry; resolves with how long to wait before trying again, if it should. */
  private proposeExpire(id: string, renewIndex: number): Promise<number | undefined> {
    return this.propose({ t: 'session.expire', id, renewIndex }).then(
      () => this.expiryShortBy(id, renewIndex),
      (err: unknown) => {
        this.logger.warn({ err, session: id }, 'session expiry proposal failed; retrying');
        return expiryRetryMs;
      },
    );
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
      if (hasEffect(next, 'restartTtlTimer')) this.ttl.arm(s.id, s.renewIndex, s.ttlMs);
    }
  }

  /**
   * After an expiry proposal applied: how far the log's time still is from the session's TTL, when the
   * session is still there unrenewed (else undefined: expired, renewed or gone). Entry times come from
   * the proposers' clocks, so when a node whose clock runs ahead stamped the last renew, the owner's timer
   * (which measures 2 × TTL on its own clock) can fire before the log's time reaches renew + TTL; apply
   * then refuses the expiry, and without another try the session would outlive its TTL indefinitely
   * (test/sim shows it with clocks 15–30 s apart). The owner tries again once the log should have caught up.
   */
  private expiryShortBy(id: string, renewIndex: number): number | undefined {
    const s = this.state.sessions.get(id);
    if (s === undefined || s.renewIndex !== renewIndex || s.ttlMs <= 0) return undefined;
    return s.renewedAtMs + s.ttlMs - this.state.atMs;
  }

  private membershipChanged(): void {
    if (!this.running) return;
    this.rebalanceTtlTimers();
    this.nodeHealth.membershipChanged();
  }
}
