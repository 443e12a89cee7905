/**
 * The seeded simulation of a Roster cluster (DESIGN §7, STYLE 9): 3–5 nodes, each a real `Runtime`
 * (src/runtime) with its own state, over the simulated log (sim-log.ts: a JetStream-like sequencer),
 * the simulated membership (sim-membership.ts) and drifting clocks (sim-clock.ts), in one process.
 * One seed derives everything: the cluster size, clock drift and offsets, network delays and loss,
 * partitions, crashes and restarts (from the node's snapshot and the log), pauses, log elections, and
 * the clients' operations. The invariants (checker.ts) are checked after every step (one event).
 *
 * A run has two phases: `chaosMs` of faults and client traffic, then every fault is healed, clients go
 * silent (no more renewals), and the cluster runs quietly long enough for every TTL to run out twice
 * over; then the end-of-run invariants are checked.
 */
import { silentLogger } from '../../src/ports/logger.ts';
import { createHash } from 'node:crypto';
import type { Command } from '../../src/domain/commands.ts';
import type { LogEntry } from '../../src/ports/log.ts';
import { Runtime } from '../../src/runtime/index.ts';
import type { Result } from '../../src/state/index.ts';
import { Checker, type CheckerStats, type Violation } from './checker.ts';
import { Prng } from './prng.ts';
import { Scheduler, type NodeGate, type SimEvent } from './scheduler.ts';
import { SimClock, type Hardware } from './sim-clock.ts';
import { Sequencer, SimLog, type LogTuning, type LogWorld, type NodeDisk, type SequencerBug } from './sim-log.ts';
import { SimMembership } from './sim-membership.ts';

export interface SimOptions {
  seed: number;
  /** Cluster size. @default 3..5 from the seed */
  nodes?: number;
  /** Length of the faulty phase, true ms. @default 60_000 */
  chaosMs?: number;
  /** Largest clock rate error drawn for a node (|drift| ≤ driftMax). @default 0.03 */
  driftMax?: number;
  /** Largest clock offset drawn for a node, ms. @default 500 */
  offsetMaxMs?: number;
  /** Controls only: a fault planted in the sequencer. */
  bug?: SequencerBug;
  /** Overrides of drawn clocks (controls and regressions): a rate error or offset beyond the bounds. */
  clocks?: Record<string, Partial<Hardware>>;
  /** Largest probability of losing a publication or an acknowledgement, drawn per run. @default 0.08 */
  lossMax?: number;
  /** True ms between two fault decisions: uniform in [min, max]. @default [700, 3500] */
  faultGapMs?: [number, number];
  /** Debugging: receives the committed log at the end of the run. */
  onEnd?: (log: readonly LogEntry[], trueAt: readonly number[]) => void;
  /** Stop at the first violation. @default true */
  stopAtFirst?: boolean;
}

export interface SimReport {
  seed: number;
  nodes: number;
  steps: number;
  trueMs: number;
  stats: CheckerStats;
  faults: Record<'partitions' | 'crashes' | 'restarts' | 'pauses' | 'elections' | 'startFailures' | 'bootsFromSnapshot', number>;
  /** Client operations issued; refused at once (node down); failed after reaching a node (outcome unknown). */
  clientOps: number;
  refused: number;
  unknown: number;
  /** Publications the sequencer dropped as duplicates (a retry after a lost acknowledgement). */
  duplicates: number;
  /** Hash of the committed log (index, entry time, command): equal for equal seeds. */
  logHash: string;
  violations: Violation[];
  /** The last events before the first violation (for a failing seed). */
  trail: string[];
}

const suspicionMs = 3_000;
const heartbeatMs = 500;
const membershipGraceMs = 3_000;
const snapshotEveryEntries = 50;
const ttlChoicesMs = [10_000, 15_000, 20_000] as const;
const lockKeys = ['lock/a', 'lock/b', 'lock/c'] as const;
const dataKeys = ['data/x', 'data/y', 'data/z', 'lock/a'] as const;
const clientTimeoutMs = 6_000;
const trailMax = 40;

const quiet = silentLogger;

class SimNode {
  inc = 0;
  up = false;
  paused = false;
  partitioned = false;
  runtime: Runtime | undefined;
  log: SimLog | undefined;
  membership: SimMembership | undefined;
  deferred: SimEvent[] = [];
  readonly disk: NodeDisk = {};

  constructor(readonly name: string, readonly hw: Hardware) {}

  get healthy(): boolean {
    return this.up && !this.paused && !this.partitioned;
  }
}

interface ClientSession {
  id: string;
  ttlMs: number;
  renewing: boolean;
}

interface Client {
  name: string;
  sessions: ClientSession[];
}

export async function runSim(o: SimOptions): Promise<SimReport> {
  return new Sim(o).run();
}

class Sim implements NodeGate {
  private readonly prng: Prng;
  private readonly sched: Scheduler;
  private readonly nodes = new Map<string, SimNode>();
  private readonly names: string[];
  private readonly checker: Checker;
  private readonly sequencer: Sequencer;
  private readonly world: LogWorld;
  private readonly pidOf = new WeakMap<object, string>();
  private readonly chaosMs: number;
  private readonly driftMax: number;
  private readonly ttlMaxMs = Math.max(...ttlChoicesMs);
  private chaos = true;
  private readonly trail: string[] = [];
  private readonly faults = { partitions: 0, crashes: 0, restarts: 0, pauses: 0, elections: 0, startFailures: 0, bootsFromSnapshot: 0 };
  private clientOps = 0;
  private refused = 0;
  private unknown = 0;
  private valueCounter = 0;

  constructor(private readonly o: SimOptions) {
    this.prng = new Prng(o.seed);
    this.sched = new Scheduler(this);
    this.chaosMs = o.chaosMs ?? 60_000;
    this.driftMax = o.driftMax ?? 0.03;
    const p = this.prng;
    const count = o.nodes ?? p.int(3, 5);
    this.names = Array.from({ length: count }, (_, k) => `n${k + 1}`);
    const offsetMax = o.offsetMaxMs ?? 500;
    for (const name of this.names) {
      const drawn: Hardware = { drift: p.float(-this.driftMax, this.driftMax), offsetMs: p.int(-offsetMax, offsetMax) };
      const hw: Hardware = { ...drawn, ...o.clocks?.[name] };
      this.nodes.set(name, new SimNode(name, hw));
    }
    const tuning: LogTuning = {
      retryMs: 400, attemptsMax: 4, consumeWaitMs: 3_000,
      lossProposal: p.float(0, o.lossMax ?? 0.08), lossAck: p.float(0, o.lossMax ?? 0.08),
      hopMsMin: 1, hopMsMax: p.int(5, 60),
    };
    this.world = {
      sched: this.sched, prng: p, tuning,
      reachable: (n) => { const x = this.nodes.get(n)!; return x.up && !x.partitioned; },
      incOf: (n) => this.nodes.get(n)!.inc,
    };
    this.checker = new Checker(this.driftMax);
    this.sequencer = new Sequencer(this.world, (c) => this.checker.onCommit(c.entries, c.trueMs), o.bug);
  }

  // ------------------------------------------------------------ NodeGate

  gate(node: string, inc: number | undefined): 'run' | 'defer' | 'drop' {
    const n = this.nodes.get(node)!;
    if (!n.up || (inc !== undefined && inc !== n.inc)) return 'drop';
    return n.paused ? 'defer' : 'run';
  }

  defer(ev: SimEvent): void {
    this.nodes.get(ev.node!)!.deferred.push(ev);
  }

  // ------------------------------------------------------------ the run

  async run(): Promise<SimReport> {
    const { sched, checker } = this;
    for (const [k, name] of this.names.entries()) sched.at(k * 7, `boot ${name}`, () => this.boot(this.nodes.get(name)!));
    sched.at(heartbeatMs, 'gossip', () => this.gossip());
    sched.at(this.prng.int(1_000, 3_000), 'fault', () => this.fault());
    const clients = Array.from({ length: this.prng.int(3, 6) }, (_, k): Client => ({ name: `c${k + 1}`, sessions: [] }));
    for (const c of clients) sched.at(this.prng.int(800, 1_500), `client ${c.name}`, () => this.clientStep(c));
    sched.at(this.chaosMs, 'heal all', () => this.healAll());
    // Quiet: long enough for a TTL owner that takes over late (membership settling) to wait its 2 × TTL.
    const end = this.chaosMs + 2 * this.ttlMaxMs * (1 + this.driftMax) + 15_000;
    const stopAtFirst = this.o.stopAtFirst ?? true;
    for (;;) {
      const ev = sched.popUntil(end);
      if (ev === undefined) break;
      checker.step++;
      checker.trueMs = sched.now;
      this.note(`${sched.now} ${ev.label}`);
      ev.fn();
      await drain();
      for (const n of this.nodes.values()) if (n.up && n.runtime !== undefined) checker.checkNode(n.name, n.runtime.state);
      if (stopAtFirst && checker.violations.length > 0) break;
    }
    if (checker.violations.length === 0 || !stopAtFirst) {
      checker.step++;
      checker.trueMs = sched.now;
      const states = new Map([...this.nodes].map(([name, n]) => [name, n.up ? n.runtime?.state : undefined]));
      checker.final(states, true);
    }
    this.o.onEnd?.(this.sequencer.entries, this.sequencer.trueAt);
    return {
      seed: this.o.seed, nodes: this.names.length, steps: checker.step, trueMs: sched.now, stats: checker.stats,
      faults: this.faults, clientOps: this.clientOps, refused: this.refused, unknown: this.unknown,
      duplicates: this.sequencer.duplicatesDropped, logHash: logHash(this.sequencer.entries),
      violations: checker.violations, trail: [...this.trail],
    };
  }

  private note(line: string): void {
    if (this.checker.violations.length > 0) return; // keep the trail that led to the first violation
    this.trail.push(line);
    if (this.trail.length > trailMax) this.trail.shift();
  }

  // ------------------------------------------------------------ nodes

  private boot(n: SimNode): void {
    n.inc++;
    n.up = true;
    n.paused = false;
    n.deferred = [];
    if (n.disk.snapshot !== undefined) this.faults.bootsFromSnapshot++;
    const inc = n.inc;
    const clock = new SimClock(this.sched, n.hw, n.name, inc);
    const log = new SimLog(this.world, this.sequencer, n.name, inc, clock, n.disk, this.pidOf);
    const membership = new SimMembership(this.sched, clock, n.name, inc, suspicionMs);
    const runtime = new Runtime({
      log, clock, logger: quiet, nodeName: n.name, nodeId: `id-${n.name}`, address: `${n.name}:8500`,
      snapshotEveryEntries, membership, membershipGraceMs,
      onFatal: (err) => this.checker.report('node-fatal', `${n.name}#${inc}: ${err.message}`),
    });
    n.runtime = runtime;
    n.log = log;
    n.membership = membership;
    this.sched.at(this.sched.now, `start ${n.name}#${inc}`, () => {
      runtime.start().catch((err: unknown) => {
        // main.ts exits when start fails (its registration could not commit): the supervisor restarts it.
        if (n.inc !== inc || !n.up) return;
        this.faults.startFailures++;
        this.note(`${this.sched.now} ${n.name}#${inc} start failed: ${String(err)}`);
        this.crash(n);
        this.sched.after(1_000, `restart ${n.name}`, () => { if (!n.up) this.boot(n); });
      });
    }, n.name, inc);
  }

  private crash(n: SimNode): void {
    n.up = false;
    n.paused = false;
    n.deferred = [];
    n.log?.kill();
    n.runtime = undefined;
    n.log = undefined;
    n.membership = undefined;
  }

  private resume(n: SimNode): void {
    if (!n.paused) return;
    n.paused = false;
    const deferred = n.deferred;
    n.deferred = [];
    for (const ev of deferred) this.sched.requeue(ev);
  }

  private heal(n: SimNode): void {
    if (!n.partitioned) return;
    n.partitioned = false;
    if (n.up) this.sequencer.catchUp(n.name);
  }

  private gossip(): void {
    const talks = (n: SimNode) => n.up && !n.partitioned;
    for (const x of this.nodes.values()) {
      if (!talks(x)) continue;
      for (const y of this.nodes.values()) if (y !== x && talks(y) && !y.paused) x.membership?.hear(y.name);
    }
    for (const x of this.nodes.values()) if (x.up) x.membership?.sweep();
    this.sched.after(heartbeatMs, 'gossip', () => this.gossip());
  }

  // ------------------------------------------------------------ faults

  private fault(): void {
    if (!this.chaos) return;
    const p = this.prng;
    const faulty = [...this.nodes.values()].filter((n) => !n.healthy).length;
    const candidates = [...this.nodes.values()].filter((n) => n.healthy);
    const kind = p.pick(['partition', 'partition', 'crash', 'crash', 'restart', 'pause', 'pause', 'election', 'none'] as const);
    const canHit = candidates.length > 0 && faulty < Math.ceil(this.names.length / 2);
    if (kind === 'election') {
      this.faults.elections++;
      this.sequencer.downUntil = Math.max(this.sequencer.downUntil, this.sched.now + p.int(200, 2_500));
    } else if (kind !== 'none' && canHit) {
      const n = p.pick(candidates);
      if (kind === 'partition') {
        this.faults.partitions++;
        n.partitioned = true;
        this.sched.after(faultMs(p), `heal ${n.name}`, () => this.heal(n));
      } else if (kind === 'restart') {
        // A graceful restart: stop() snapshots and closes the log (pending appends reject), then the process exits.
        this.faults.restarts++;
        const inc = n.inc;
        const downMs = faultMs(p);
        void n.runtime?.stop().catch(() => {}).finally(() => {
          if (n.inc !== inc || !n.up) return;
          this.crash(n);
          this.sched.after(downMs, `restart ${n.name}`, () => { if (!n.up) this.boot(n); });
        });
      } else if (kind === 'crash') {
        this.faults.crashes++;
        this.crash(n);
        this.sched.after(faultMs(p), `restart ${n.name}`, () => { if (!n.up) this.boot(n); });
      } else {
        this.faults.pauses++;
        n.paused = true;
        this.sched.after(faultMs(p), `resume ${n.name}`, () => this.resume(n));
      }
    }
    const [gapMin, gapMax] = this.o.faultGapMs ?? [700, 3_500];
    this.sched.after(p.int(gapMin, gapMax), 'fault', () => this.fault());
  }

  private healAll(): void {
    this.chaos = false;
    this.sequencer.downUntil = 0;
    for (const n of this.nodes.values()) {
      this.heal(n);
      this.resume(n);
      if (!n.up) this.boot(n);
    }
  }

  // ------------------------------------------------------------ clients

  /** One client operation at a random node; the next starts when it settles or times out. */
  private clientStep(c: Client): void {
    if (!this.chaos) return;
    const p = this.prng;
    const target = this.nodes.get(p.pick(this.names))!;
    let settled = false;
    const next = () => {
      if (settled) return;
      settled = true;
      this.sched.after(p.int(20, 400), `client ${c.name}`, () => this.clientStep(c));
    };
    this.sched.after(clientTimeoutMs, `client ${c.name} timeout`, next);
    const live = c.sessions;
    const r = p.next();
    let build: (rt: Runtime) => Command;
    let onOk: (result: Result) => void = () => {};
    if (live.length === 0 || (live.length < 3 && r < 0.12)) {
      const s: ClientSession = { id: `${c.name}-${p.hex(12)}`, ttlMs: p.pick(ttlChoicesMs), renewing: true };
      const withGossip = p.chance(0.5);
      const behavior = p.chance(0.7) ? 'release' as const : 'delete' as const;
      const lockDelayNs = p.pick([0, 0, 500e6, 2_000e6]);
      build = () => ({
        t: 'session.create', id: s.id, node: target.name, name: c.name, lockDelayNs, behavior,
        ttl: `${s.ttlMs / 1000}s`, ttlMs: s.ttlMs, nodeChecks: withGossip ? ['gossipHealth'] : [], serviceChecks: null,
      });
      onOk = () => { live.push(s); this.renewLater(c, s); };
    } else {
      const s = p.pick(live);
      const value = () => Buffer.from(`${c.name}:${++this.valueCounter}`).toString('base64');
      const op = p.next();
      if (op < 0.3) {
        const key = p.pick(lockKeys);
        const v = value();
        build = () => ({ t: 'kv.acquire', key, value: v, flags: '0', session: s.id });
      } else if (op < 0.55) {
        const key = p.pick(lockKeys);
        const v = value();
        build = () => ({ t: 'kv.release', key, value: v, flags: '0', session: s.id });
      } else if (op < 0.72) {
        const key = p.pick(dataKeys);
        const v = value();
        build = () => ({ t: 'kv.set', key, value: v, flags: '0' });
      } else if (op < 0.86) {
        const key = p.pick(dataKeys);
        const v = value();
        // A CAS against what this node has applied: a stale read loses, as it should.
        build = (rt) => ({ t: 'kv.cas', key, value: v, flags: '0', cas: String(rt.state.kv.get(key)?.modifyIndex ?? 0) });
      } else if (op < 0.92) {
        const key = p.pick(dataKeys);
        build = () => ({ t: 'kv.delete', key });
      } else {
        build = () => ({ t: 'session.destroy', id: s.id });
        onOk = () => { s.renewing = false; c.sessions = c.sessions.filter((x) => x !== s); };
      }
    }
    this.clientOps++;
    if (!target.up) { this.refused++; next(); return; }
    this.sched.after(this.prng.int(1, 20), `request ${c.name}→${target.name}`, () => {
      const rt = target.runtime!;
      const cmd = build(rt);
      rt.propose(cmd).then((result) => {
        this.checker.onAck(target.name, cmd, this.pidOf.get(cmd), result);
        if (result.ok) onOk(result);
        next();
      }, () => { this.unknown++; next(); });
    }, target.name, target.inc);
  }

  /** A session's renew loop: every TTL/3 through a random node, until abandoned or gone. */
  private renewLater(c: Client, s: ClientSession): void {
    const p = this.prng;
    this.sched.after(Math.floor(s.ttlMs / 3) + p.int(-500, 500), `renew ${s.id}`, () => {
      if (!this.chaos || !s.renewing) return;
      if (p.chance(0.08)) { s.renewing = false; return; } // the client walks away: the TTL must end it
      const target = this.nodes.get(p.pick(this.names))!;
      if (!target.up) { this.refused++; this.renewLater(c, s); return; }
      this.sched.after(p.int(1, 20), `renew ${s.id}→${target.name}`, () => {
        const cmd: Command = { t: 'session.renew', id: s.id };
        target.runtime!.propose(cmd).then((result) => {
          this.checker.onAck(target.name, cmd, this.pidOf.get(cmd), result);
          if (!result.ok && result.reason === 'session-not-found') {
            s.renewing = false;
            c.sessions = c.sessions.filter((x) => x !== s);
          }
        }, () => {});
      }, target.name, target.inc);
      this.renewLater(c, s);
    });
  }
}

/**
 * How long a fault lasts: mostly shorter than the suspicion time or a few times it; one in five as long
 * as a TTL or two, so timers of paused or cut-off owners come due meanwhile and fire late.
 */
function faultMs(p: Prng): number {
  return p.chance(0.2) ? p.int(10_000, 35_000) : p.int(200, 8_000);
}

/** Proposal ids are left out: a runtime draws their prefix at random (they never reach the state). */
function logHash(entries: readonly LogEntry[]): string {
  const h = createHash('sha1');
  for (const e of entries) h.update(`${e.index} ${e.atMs} ${JSON.stringify(e.cmd)}\n`);
  return h.digest('hex');
}

/** Lets every promise continuation queued by the step run (the runtime's awaits are microtasks only). */
function drain(): Promise<void> {
  return new Promise((resolve) => setImmediate(resolve));
}
