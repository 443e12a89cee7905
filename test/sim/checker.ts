/**
 * The invariants of the simulation (DESIGN §7), checked after every step.
 *
 * A reference state follows the sequencer's log with the real `apply`, entry by entry, the moment an
 * entry commits. Per committed entry it checks what one entry may do:
 *   - lock-index:   a key's LockIndex grows by exactly 1 on an acquisition by a session that did not
 *                   hold it, and by nothing on any other write (re-acquire by the holder included:
 *                   spec/registry.md "locked | acquire with the holding session | LockIndex unchanged").
 *   - single-holder: an acquisition succeeds only on a free key (or by its holder), and a held key's
 *                   session is a live session.
 *   - lock-delay:   no acquisition succeeds while the key's lock delay runs (in entry time).
 *   - invalidation-cause: a session disappears only by its destroy, its TTL expiry, its node's gossip
 *                   check going critical, or its node's deregistration.
 *   - ttl:          a TTL expiry never lands before the TTL, stated in TRUE time: the true time between the
 *                   commit of the entry that last (re)started the TTL (create or renew, `renewIndex`) and
 *                   the commit of the expiry is at least TTL. Why this holds and in which time base: see
 *                   ttlPromise below.
 * Per node, after every step (when its applied index moved):
 *   - equal-state:  the canonical hash of the node's state equals the reference's at the same index (so
 *                   any two nodes at one index hold the same state), and no node passes the log's end.
 *   - state-shape:  derived indexes (locks by session) agree with the KV entries; holders are live.
 * Per acknowledged client write (a `propose` that resolved):
 *   - acked-write:  its entry is in the log (a node never acknowledges what did not commit);
 *   - ack-result:   the result the client got is the one apply computed for that entry in log order (for
 *                   an acquisition: the acknowledged holder holds the key right after that index, so two
 *                   sessions are never both acknowledged as holding a key at overlapping indexes).
 * At the end, with every fault healed and clients silent long enough:
 *   - caught-up:    every node applied the whole log and holds the reference state;
 *   - acked-write:  every acknowledged write is in the final state or was overwritten/deleted by a later
 *                   entry of the log;
 *   - ttl-liveness: every session (all have TTLs and nobody renews them any more) has expired — the TTL
 *                   timers' ownership moved to live members through crashes, pauses and partitions.
 */
import { createHash } from 'node:crypto';
import type { Command } from '../../src/domain/commands.ts';
import type { KvEntry, Session } from '../../src/domain/types.ts';
import { gossipCheckId } from '../../src/domain/limits.ts';
import type { LogEntry } from '../../src/ports/log.ts';
import { apply, RegistryState, toSnapshotData, type Result } from '../../src/state/index.ts';

/**
 * The TTL promise and its time base. The spec: "expiry is never earlier than the TTL but may come later".
 *
 * Entry time (atMs) is stamped by the proposer's clock and ratcheted along the log (max with the previous
 * entry), as the JetStream log does. Apply refuses an expiry whose atMs < renewedAtMs + TTL, so in ENTRY
 * time the promise holds by construction — but entry time is a mix of different nodes' clocks, so on its
 * own it promises nothing in real time (one fast clock ratchets everyone's entry time forward).
 *
 * The real-time promise comes from the owner: the TTL owner arms its timer when it APPLIES the entry that
 * (re)started the TTL (or, taking over, later), for 2 × TTL on its own clock, and its expiry is conditional
 * on that entry's renewIndex. So between the renew's commit and the expiry's commit at least
 * 2 × TTL / (1 + ρ) of true time passes, ρ being the owner's clock rate error; clock OFFSETS do not enter
 * (a timer measures an interval). With |ρ| < 1 that is more than TTL: the spec's promise, in true time,
 * holds for any bounded drift below 100 % and any offset. The simulation draws |ρ| ≤ driftMax (a few %)
 * and checks both the spec's bound (TTL) and the design's (2 × TTL / (1 + driftMax)); the drift control
 * shows a clock beyond the bound breaks it.
 */
export function ttlFloorMs(ttlMs: number, driftMax: number): number {
  return (2 * ttlMs) / (1 + driftMax);
}

export type Invariant =
  | 'lock-index' | 'single-holder' | 'lock-delay' | 'invalidation-cause' | 'ttl' | 'ttl-multiplier'
  | 'equal-state' | 'state-shape' | 'acked-write' | 'ack-result' | 'caught-up' | 'ttl-liveness' | 'node-fatal'
  | 'apply-throws'
  | 'queue-order' | 'queue-overtake' | 'queue-starved' | 'queue-deadline'
  | 'check-owner' | 'check-result' | 'check-status';

export interface Violation {
  invariant: Invariant;
  step: number;
  trueMs: number;
  detail: string;
}

interface RefOutcome {
  index: number;
  result: Result;
  /** For KV commands: the key's entry right after this index (undefined: absent). */
  after?: KvEntry | undefined;
}

interface AckedWrite {
  cmd: Command & { key: string };
  index: number;
  node: string;
}

export interface CheckerStats {
  entries: number;
  acks: number;
  ackedWrites: number;
  acquisitions: number;
  ttlExpiries: number;
  /** Smallest true time from (re)start of a TTL to its expiry, as a multiple of the TTL. */
  ttlRatioMin: number;
  nodeChecks: number;
  /** Sessions invalidated by destroy, by node failure (gossip check critical) and by TTL. */
  destroyed: number;
  nodeFailureInvalidations: number;
  /** Acquisitions of a key some other session held before (a lock changing hands). */
  handOffs: number;
  /** Acquisitions by the session already holding the key (LockIndex unchanged). */
  reacquires: number;
  /** Failed results in log order, by reason. */
  refusals: Record<string, number>;
  /** Queued acquires (LockQueues) granted; the most waiters seen in one node's queue of one key. */
  queuedGrants: number;
  queueWaitersMax: number;
  /** Probe results of agent checks that committed. */
  probeUpdates: number;
}

/** Told every committed entry after the reference applied it (the workloads' own invariants). */
export type EntryWatcher = (entry: LogEntry, ref: RegistryState, result: Result) => void;

export class Checker {
  readonly ref = new RegistryState();
  /** Canonical hash of the reference state after each index (position = index). */
  private readonly hashes: string[] = [hashState(new RegistryState())];
  private readonly trueAt: number[] = [0];
  private readonly byPid = new Map<string, RefOutcome>();
  private readonly acked: AckedWrite[] = [];
  private readonly lastChecked = new WeakMap<object, number>();
  readonly violations: Violation[] = [];
  readonly stats: CheckerStats = { entries: 0, acks: 0, ackedWrites: 0, acquisitions: 0, ttlExpiries: 0, ttlRatioMin: Infinity, nodeChecks: 0,
    destroyed: 0, nodeFailureInvalidations: 0, handOffs: 0, reacquires: 0, refusals: {}, queuedGrants: 0, queueWaitersMax: 0, probeUpdates: 0 };
  readonly entryWatchers: EntryWatcher[] = [];
  step = 0;
  trueMs = 0;

  constructor(private readonly driftMax: number) {}

  get lastIndex(): number {
    return this.hashes.length - 1;
  }

  report(invariant: Invariant, detail: string): void {
    this.violations.push({ invariant, step: this.step, trueMs: this.trueMs, detail });
  }

  // ------------------------------------------------------------ per committed entry

  onCommit(entries: readonly LogEntry[], trueMs: number): void {
    for (const e of entries) this.commitOne(e, trueMs);
  }

  private commitOne(entry: LogEntry, trueMs: number): void {
    const ref = this.ref;
    const kvBefore = new Map(ref.kv);
    const sessionsBefore = new Map([...ref.sessions].map(([id, s]) => [id, { ...s }]));
    const delaysBefore = new Map(ref.lockDelays);
    let applied;
    try {
      applied = apply(ref, entry);
    } catch (err) {
      this.report('apply-throws', `reference apply of ${entry.index} (${entry.cmd.t}): ${String(err)}`);
      return;
    }
    this.stats.entries++;
    this.trueAt.push(trueMs);
    const { cmd } = entry;
    const result = applied.result;
    const key = 'key' in cmd && typeof cmd.key === 'string' ? cmd.key : undefined;
    const outcome: RefOutcome = { index: entry.index, result };
    if (key !== undefined) outcome.after = ref.kv.get(key) === undefined ? undefined : { ...ref.kv.get(key)! };
    this.byPid.set(entry.pid, outcome);
    if (!result.ok) this.stats.refusals[result.reason] = (this.stats.refusals[result.reason] ?? 0) + 1;

    this.checkLockIndex(entry, kvBefore, result);
    this.checkHolders(entry, kvBefore, delaysBefore, result);
    this.checkInvalidations(entry, sessionsBefore, result, trueMs);
    for (const watch of this.entryWatchers) watch(entry, ref, result);
    this.hashes.push(hashState(ref));
  }

  private checkLockIndex(entry: LogEntry, before: Map<string, KvEntry>, result: Result): void {
    const { cmd } = entry;
    const keys = new Set([...before.keys(), ...this.ref.kv.keys()]);
    for (const key of keys) {
      const was = before.get(key);
      const now = this.ref.kv.get(key);
      if (now === undefined || now === was) continue;
      const fresh = cmd.t === 'kv.acquire' && cmd.key === key && result.ok && was?.session !== cmd.session;
      const expected = (was?.lockIndex ?? 0) + (fresh ? 1 : 0);
      if (now.lockIndex !== expected) {
        this.report('lock-index', `entry ${entry.index} (${cmd.t}) moved LockIndex of ${key} from ${was?.lockIndex ?? 0} to ${now.lockIndex}, expected ${expected}`);
      }
      if (fresh) this.stats.acquisitions++;
      if (fresh && (was?.lockIndex ?? 0) > 0) this.stats.handOffs++;
    }
  }

  private checkHolders(entry: LogEntry, before: Map<string, KvEntry>, delays: Map<string, number>, result: Result): void {
    const { cmd } = entry;
    if (cmd.t === 'kv.acquire' && result.ok) {
      const was = before.get(cmd.key);
      if (was?.session === cmd.session) this.stats.reacquires++;
      if (was?.session !== undefined && was.session !== cmd.session) {
        this.report('single-holder', `entry ${entry.index}: ${cmd.session} acquired ${cmd.key} held by ${was.session}`);
      }
      const delay = delays.get(cmd.key) ?? 0;
      if (was?.session !== cmd.session && delay > this.ref.atMs) {
        this.report('lock-delay', `entry ${entry.index}: ${cmd.key} acquired at ${this.ref.atMs} inside its lock delay (until ${delay})`);
      }
    }
    const shape = stateShape(this.ref);
    if (shape !== undefined) this.report('single-holder', `reference after ${entry.index}: ${shape}`);
  }

  private checkInvalidations(entry: LogEntry, before: Map<string, Session>, result: Result, trueMs: number): void {
    const { cmd } = entry;
    for (const [id, s] of before) {
      if (this.ref.sessions.has(id)) continue;
      const cause = allowedCause(cmd, s, result);
      if (cause === undefined) {
        this.report('invalidation-cause', `entry ${entry.index} (${cmd.t}) invalidated session ${id} without a cause`);
        continue;
      }
      if (cmd.t === 'session.destroy') this.stats.destroyed++;
      else if (cause === 'other') this.stats.nodeFailureInvalidations++;
      if (cause !== 'ttl') continue;
      this.stats.ttlExpiries++;
      const elapsed = trueMs - this.trueAt[s.renewIndex]!;
      this.stats.ttlRatioMin = Math.min(this.stats.ttlRatioMin, elapsed / s.ttlMs);
      if (elapsed < s.ttlMs) {
        this.report('ttl', `session ${id} (TTL ${s.ttlMs} ms) expired by entry ${entry.index} only ${elapsed} ms (true time) after its renew at index ${s.renewIndex}`);
      } else if (elapsed < ttlFloorMs(s.ttlMs, this.driftMax) - 1) {
        this.report('ttl-multiplier', `session ${id} (TTL ${s.ttlMs} ms) expired ${elapsed} ms after its renew at ${s.renewIndex}: less than 2×TTL/(1+${this.driftMax})`);
      }
      if (this.ref.atMs < s.renewedAtMs + s.ttlMs) {
        this.report('ttl', `session ${id} expired at entry time ${this.ref.atMs} < renewedAtMs ${s.renewedAtMs} + TTL ${s.ttlMs}`);
      }
    }
  }

  // ------------------------------------------------------------ per node, after every step

  checkNode(node: string, state: RegistryState): void {
    if (this.lastChecked.get(state) === state.index) return;
    this.lastChecked.set(state, state.index);
    this.stats.nodeChecks++;
    if (state.index > this.lastIndex) {
      this.report('equal-state', `${node} applied index ${state.index} past the log's end ${this.lastIndex}`);
      return;
    }
    const h = hashState(state);
    if (h !== this.hashes[state.index]) {
      this.report('equal-state', `${node} at index ${state.index} differs from the log's state there: ${diffHint(state, this.ref, state.index === this.lastIndex)}`);
    }
    const shape = stateShape(state);
    if (shape !== undefined) this.report('state-shape', `${node} at ${state.index}: ${shape}`);
  }

  // ------------------------------------------------------------ per acknowledgement

  onAck(node: string, cmd: Command, pid: string | undefined, result: Result): void {
    this.stats.acks++;
    const ref = pid === undefined ? undefined : this.byPid.get(pid);
    if (ref === undefined) {
      this.report('acked-write', `${node} acknowledged ${cmd.t} ${JSON.stringify(cmd).slice(0, 120)} (pid ${pid}) that is not in the log`);
      return;
    }
    if (!sameResult(result, ref.result)) {
      const inv = cmd.t === 'kv.acquire' || cmd.t === 'kv.release' ? 'single-holder' : 'ack-result';
      this.report(inv, `${node} acknowledged ${cmd.t} at index ${ref.index} with ${JSON.stringify(result).slice(0, 100)}; in log order it is ${JSON.stringify(ref.result).slice(0, 100)}`);
      return;
    }
    if (cmd.t === 'kv.acquire' && result.ok && ref.after?.session !== cmd.session) {
      this.report('single-holder', `${node} acknowledged ${cmd.session} acquiring ${cmd.key} at ${ref.index}, but the key's holder there is ${ref.after?.session}`);
    }
    if (result.ok && isKvWrite(cmd)) {
      this.stats.ackedWrites++;
      this.acked.push({ cmd, index: ref.index, node });
    }
  }

  // ------------------------------------------------------------ at the end

  final(nodes: ReadonlyMap<string, RegistryState | undefined>, expectNoSessions: boolean): void {
    for (const [name, state] of nodes) {
      if (state === undefined) { this.report('caught-up', `${name} is not running at the end`); continue; }
      if (state.index !== this.lastIndex) this.report('caught-up', `${name} applied ${state.index} of ${this.lastIndex} entries`);
      else if (hashState(state) !== this.hashes[this.lastIndex]) this.report('caught-up', `${name} final state differs`);
    }
    for (const w of this.acked) {
      const why = this.missing(w);
      if (why !== undefined) this.report('acked-write', `write acknowledged by ${w.node} at index ${w.index} (${w.cmd.t} ${w.cmd.key}) is missing: ${why}`);
    }
    if (expectNoSessions && this.ref.sessions.size > 0) {
      const s = [...this.ref.sessions.values()][0]!;
      this.report('ttl-liveness', `${this.ref.sessions.size} sessions outlived their TTL with nobody renewing, e.g. ${s.id} (TTL ${s.ttlMs} ms, renewed at index ${s.renewIndex}, true ${this.trueAt[s.renewIndex]} ms)`);
    }
  }

  /** Why an acknowledged write is not in the final state (undefined: it is, or a later entry replaced it). */
  private missing(w: AckedWrite): string | undefined {
    const e = this.ref.kv.get(w.cmd.key);
    if (w.cmd.t === 'kv.delete') return e === undefined || e.createIndex > w.index ? undefined : `key still there, created at ${e.createIndex}`;
    if (e === undefined) {
      const gone = this.ref.tombstones.get(w.cmd.key) ?? this.ref.tombstoneFloor;
      return gone > w.index ? undefined : `key absent, deleted at ${gone}`;
    }
    if (e.modifyIndex > w.index) return undefined;
    const value = 'value' in w.cmd ? w.cmd.value : undefined;
    if (e.value !== value) return `value ${e.value} at ModifyIndex ${e.modifyIndex}, written ${value}`;
    return undefined;
  }
}

function isKvWrite(cmd: Command): cmd is Command & { key: string } {
  return cmd.t === 'kv.set' || cmd.t === 'kv.cas' || cmd.t === 'kv.acquire' || cmd.t === 'kv.release' || cmd.t === 'kv.delete';
}

function sameResult(a: Result, b: Result): boolean {
  if (a.ok !== b.ok) return false;
  return a.ok || b.ok || a.reason === b.reason;
}

/** The causes that may invalidate `s` at this entry; undefined when none applies. */
function allowedCause(cmd: Command, s: Session, result: Result): 'ttl' | 'other' | undefined {
  switch (cmd.t) {
    case 'session.destroy': return cmd.id === s.id ? 'other' : undefined;
    case 'session.expire': return cmd.id === s.id && result.ok ? 'ttl' : undefined;
    case 'catalog.register':
      return cmd.node === s.node && s.nodeChecks.includes(gossipCheckId)
        && cmd.checks.some((c) => c.checkId === gossipCheckId && c.status === 'critical') ? 'other' : undefined;
    case 'catalog.deregister': return cmd.node === s.node ? 'other' : undefined;
    default: return undefined;
  }
}

/** Derived indexes agree with KV; every holder is a live session. */
export function stateShape(s: RegistryState): string | undefined {
  let held = 0;
  for (const e of s.kv.values()) {
    if (e.session === undefined) continue;
    held++;
    if (!s.sessions.has(e.session)) return `${e.key} held by ${e.session}, which is not a live session`;
    if (!s.locksBySession.get(e.session)?.has(e.key)) return `locksBySession misses ${e.key} of ${e.session}`;
  }
  let indexed = 0;
  for (const keys of s.locksBySession.values()) indexed += keys.size;
  return indexed === held ? undefined : `locksBySession lists ${indexed} held keys, KV has ${held}`;
}

/** Everything a client can observe of the state, in one canonical text (orders fixed, expired delays left out). */
export function canonicalState(s: RegistryState): string {
  const d = toSnapshotData(s);
  const byText = (a: string, b: string) => (a < b ? -1 : a > b ? 1 : 0);
  return JSON.stringify({
    ...d,
    sessions: [...d.sessions].sort((a, b) => byText(a.id, b.id)),
    lockDelays: [...d.lockDelays].sort((a, b) => byText(a[0], b[0])),
    nodes: [...d.nodes].sort((a, b) => byText(a.node, b.node)),
    checks: [...d.checks].sort((a, b) => byText(`${a.node}\0${a.checkId}`, `${b.node}\0${b.checkId}`)),
    services: [...d.services].sort((a, b) => byText(`${a.node}\0${a.id}`, `${b.node}\0${b.id}`)),
  });
}

export function hashState(s: RegistryState): string {
  return createHash('sha1').update(canonicalState(s)).digest('base64');
}

/** A short hint of where two states differ (only meaningful when both are at the same index). */
function diffHint(node: RegistryState, ref: RegistryState, sameIndex: boolean): string {
  if (!sameIndex) return 'state hash differs';
  for (const [k, e] of ref.kv) {
    const n = node.kv.get(k);
    if (JSON.stringify(n) !== JSON.stringify(e)) return `key ${k}: node ${JSON.stringify(n)} vs log ${JSON.stringify(e)}`;
  }
  for (const k of node.kv.keys()) if (!ref.kv.has(k)) return `key ${k} only on the node`;
  return 'sessions, catalog or indexes differ';
}
