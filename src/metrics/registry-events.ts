/**
 * The series that explain contention: lock acquisitions and refusals, hand-off latency and hold time,
 * queue waits, session invalidations by cause, check runs and transitions, apply lag. They are read
 * from what the runtime applies (each entry's command, result and effects), so they need no hook in the
 * pure apply. Every node applies every entry; an event is counted only on the node that proposed its
 * entry (`local`), so that summing a series over a cluster's nodes counts each event once.
 */
import type { Command, TxnKvOp } from '../domain/commands.ts';
import { gossipCheckId } from '../domain/limits.ts';
import type { CheckKind, CheckStatus } from '../domain/types.ts';
import type { AppliedView, ObservedEntry } from '../ports/observer.ts';
import type { RegistryState } from '../state/index.ts';
import type { CounterChild, CounterFamily, HistogramChild, HistogramFamily } from './instruments.ts';

/** Why a session was invalidated, by the command whose apply invalidated it. */
export const invalidationCauses = ['ttl', 'destroy', 'check', 'node', 'other'] as const;
export type InvalidationCause = (typeof invalidationCauses)[number];

/** Why an acquire was refused (apply's reasons for `kv.acquire`). */
export const acquireFailureReasons = ['held-by-other', 'lock-delay', 'invalid-session'] as const;

/** Check kinds as labels: the record's Type, `none` for checks without a probe (the gossip check). */
export const checkKinds = ['ttl', 'http', 'tcp', 'grpc', 'script', 'docker', 'alias', 'none'] as const;
export const checkStatuses: readonly CheckStatus[] = ['passing', 'warning', 'critical'];

/** Releases remembered for the hand-off latency, at most: the oldest is forgotten past it. */
export const releasesTrackedMax = 10_000;
/** Held locks whose holding time is tracked, at most: locks taken past it are not timed. */
export const holdsTrackedMax = 100_000;

/** The families this module feeds, made and registered by AgentMetrics. */
export interface EventFamilies {
  acquires: CounterFamily;
  acquireFailures: CounterFamily;
  handoffSeconds: HistogramFamily;
  holdSeconds: HistogramFamily;
  queueWaitSeconds: HistogramFamily;
  invalidations: CounterFamily;
  checkRuns: CounterFamily;
  checkRunSeconds: HistogramFamily;
  checkTransitions: CounterFamily;
  applyLagSeconds: HistogramFamily;
  ttlInvalidateSeconds: HistogramFamily;
}

interface Hold {
  session: string;
  sinceMs: number;
  /** Acquired through this node: its holding time is observed here. */
  local: boolean;
  /** Someone was refused this lock while it was held: its release starts a hand-off. */
  contended: boolean;
}

interface Release {
  atMs: number;
  /** Someone was refused this lock (while held, or in its lock delay): the next acquire is a hand-off. */
  contended: boolean;
}

/** A kind's slot in `checkKinds`. */
function kindSlot(kind: CheckKind): number {
  const at = checkKinds.indexOf(kind === '' ? 'none' : kind);
  return at < 0 ? checkKinds.length - 1 : at;
}

function statusSlot(status: CheckStatus): number {
  return status === 'passing' ? 0 : status === 'warning' ? 1 : 2;
}

export class RegistryEvents {
  private readonly acquired: CounterChild;
  private readonly refused = new Map<string, CounterChild>();
  private readonly handoff: HistogramChild;
  private readonly hold: HistogramChild;
  private readonly queueAcquired: HistogramChild;
  private readonly queueGaveUp: HistogramChild;
  private readonly invalidated = new Map<InvalidationCause, CounterChild>();
  /** By kind slot × 3 + status slot. */
  private readonly runs: CounterChild[] = [];
  private readonly transitions: CounterChild[] = [];
  private readonly runSeconds: HistogramChild[] = [];
  private readonly applyLag: HistogramChild;
  private readonly ttlInvalidate: HistogramChild;
  private readonly holds = new Map<string, Hold>();
  private readonly releases = new Map<string, Release>();
  /** Each check's status as last applied, to see transitions (state keeps only the new one). */
  private readonly checkStatus = new Map<string, CheckStatus>();
  /**
   * The clocks, read once per applied batch (a read costs 0.1–0.2 µs here, more than the rest of an
   * entry's bookkeeping): the entries of one batch are applied in one synchronous run.
   */
  private wallMs: number | undefined;
  private monoMs: number | undefined;

  constructor(f: EventFamilies) {
    this.acquired = f.acquires.child();
    for (const r of acquireFailureReasons) this.refused.set(r, f.acquireFailures.child(r));
    this.handoff = f.handoffSeconds.child();
    this.hold = f.holdSeconds.child();
    this.queueAcquired = f.queueWaitSeconds.child('acquired');
    this.queueGaveUp = f.queueWaitSeconds.child('not-acquired');
    for (const c of invalidationCauses) this.invalidated.set(c, f.invalidations.child(c));
    for (const kind of checkKinds) {
      this.runSeconds.push(f.checkRunSeconds.child(kind));
      for (const status of checkStatuses) {
        this.runs.push(f.checkRuns.child(kind, status));
        this.transitions.push(f.checkTransitions.child(kind, status));
      }
    }
    this.applyLag = f.applyLagSeconds.child();
    this.ttlInvalidate = f.ttlInvalidateSeconds.child();
  }

  /** Starts from the state the node has applied so far: the checks' statuses, for their next transition. */
  begin(state: RegistryState): void {
    for (const [key, check] of state.checks) this.checkStatus.set(key, check.status);
  }

  /** The batch whose entries were reported is applied: the next entry reads the clocks afresh. */
  batchApplied(): void {
    this.wallMs = undefined;
    this.monoMs = undefined;
  }

  entryApplied(state: RegistryState, entry: ObservedEntry, applied: AppliedView, local: boolean): void {
    this.wallMs ??= Date.now();
    const lagSeconds = Math.max(0, this.wallMs - entry.atMs) / 1000;
    this.applyLag.observe(lagSeconds);
    const cmd = entry.cmd;
    if (cmd.t === 'state.restore') {
      this.restored(state);
      return;
    }
    if (cmd.t === 'kv.acquire') this.acquire(cmd.key, cmd.session, applied.result, local);
    else if (cmd.t === 'txn.kv') this.txnLocks(cmd.ops, applied.result, local);
    else if (local) this.reported(cmd, applied.result.ok);
    for (const e of applied.effects) {
      if (e.t === 'kv') this.keyChanged(state, e.key!);
      else if (e.t === 'session' && local && !state.sessions.has(e.id!)) {
        const cause = invalidationCause(cmd);
        this.invalidated.get(cause)!.inc();
        if (cause === 'ttl') this.ttlInvalidate.observe(lagSeconds);
      } else if (e.t === 'check') this.checkChanged(state, e.node!, e.checkId!, local);
    }
  }

  lockQueued(seconds: number, acquired: boolean): void {
    (acquired ? this.queueAcquired : this.queueGaveUp).observe(seconds);
  }

  checkRan(kind: CheckKind, status: CheckStatus, seconds: number): void {
    const k = kindSlot(kind);
    this.runs[k * 3 + statusSlot(status)]!.inc();
    this.runSeconds[k]!.observe(seconds);
  }

  // ---------------------------------------------------------------- locks

  /** This node's monotonic clock for hold and hand-off times, read once per batch and only when a lock needs it. */
  private nowMs(): number {
    return (this.monoMs ??= performance.now());
  }

  private acquire(key: string, session: string, result: AppliedView['result'], local: boolean): void {
    if (!result.ok) {
      if (local) this.refused.get(result.reason ?? '')?.inc();
      if (result.reason === 'held-by-other' || result.reason === 'lock-delay') {
        const hold = this.holds.get(key);
        if (hold !== undefined) hold.contended = true;
        const release = this.releases.get(key);
        if (release !== undefined) release.contended = true;
      }
      return;
    }
    if (local) this.acquired.inc();
    if (this.holds.get(key)?.session !== session && this.holds.size < holdsTrackedMax) {
      this.holds.set(key, { session, sinceMs: this.nowMs(), local, contended: false });
    }
    const release = this.releases.get(key);
    if (release === undefined) return;
    this.releases.delete(key);
    if (local && release.contended) this.handoff.observe((this.nowMs() - release.atMs) / 1000);
  }

  /** A transaction's `lock` operations acquire as plain acquires do, once it commits (a refused one names no reason per lock). */
  private txnLocks(ops: readonly TxnKvOp[], result: AppliedView['result'], local: boolean): void {
    if (!result.ok) return;
    for (const op of ops) if (op.verb === 'lock') this.acquire(op.key, op.session, result, local);
  }

  /** A written key whose tracked holder no longer holds it was released (or deleted): the hold ends. */
  private keyChanged(state: RegistryState, key: string): void {
    const hold = this.holds.get(key);
    if (hold === undefined || state.kv.get(key)?.session === hold.session) return;
    const nowMs = this.nowMs();
    this.holds.delete(key);
    if (hold.local) this.hold.observe((nowMs - hold.sinceMs) / 1000);
    this.releases.delete(key);
    if (this.releases.size >= releasesTrackedMax) this.releases.delete(this.releases.keys().next().value!);
    this.releases.set(key, { atMs: nowMs, contended: hold.contended });
  }

  // ---------------------------------------------------------------- checks

  /** A TTL check's report (pass/warn/fail/update) or lapse, and an alias check's new state, count as runs. */
  private reported(cmd: Command, ok: boolean): void {
    if (!ok) return;
    if (cmd.t === 'check.update' && cmd.via !== 'probe') this.runs[kindSlot(cmd.via) * 3 + statusSlot(cmd.status)]!.inc();
    else if (cmd.t === 'check.ttlExpire') this.runs[kindSlot('ttl') * 3 + statusSlot('critical')]!.inc();
  }

  private checkChanged(state: RegistryState, node: string, checkId: string, local: boolean): void {
    const key = state.checkKey(node, checkId);
    const check = state.checks.get(key);
    if (check === undefined) {
      this.checkStatus.delete(key);
      return;
    }
    const before = this.checkStatus.get(key);
    if (before === check.status) return;
    this.checkStatus.set(key, check.status);
    if (before !== undefined && local) this.transitions[kindSlot(check.type) * 3 + statusSlot(check.status)]!.inc();
  }

  /** A restore replaced the state: what was tracked of the old one no longer applies. */
  private restored(state: RegistryState): void {
    this.holds.clear();
    this.releases.clear();
    this.checkStatus.clear();
    this.begin(state);
  }
}

/** The cause of the invalidations an entry's apply made, by its command. */
export function invalidationCause(cmd: Command): InvalidationCause {
  switch (cmd.t) {
    case 'session.expire': return 'ttl';
    case 'session.destroy': return 'destroy';
    case 'check.update': case 'check.ttlExpire': case 'check.deregister':
      return cmd.checkId === gossipCheckId ? 'node' : 'check';
    case 'catalog.deregister':
      return cmd.checkId === undefined || cmd.checkId === gossipCheckId ? 'node' : 'check';
    case 'catalog.register':
      // The gossip check's owner reports a failed node this way; other registrations carry service checks.
      return cmd.checks.some((c) => c.checkId === gossipCheckId) ? 'node' : 'check';
    case 'service.deregister': case 'service.reap': return 'check';
    default: return 'other';
  }
}
