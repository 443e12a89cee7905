/**
 * The seeded simulation of a Roster cluster (DESIGN §7, STYLE 9): 3–5 nodes, each a real `Runtime`
 * (src/runtime) with its own state, over the simulated log (sim-log.ts: a JetStream-like sequencer),
 * the simulated membership (sim-membership.ts) and drifting clocks (sim-clock.ts), in one process.
 * One seed derives everything: the cluster size, clock drift and offsets, network delays and loss,
 * partitions, cuts from the stream alone, crashes and restarts (from the node's snapshot and the log),
 * pauses, log elections, and the clients' operations. The invariants (checker.ts, queue-checker.ts,
 * check-checker.ts) are checked after every step (one event).
 *
 * A run has two phases: `chaosMs` of faults and client traffic, then every fault is healed (but one node
 * is cut off from the stream to the end, its gossip still heard), clients go silent (no more renewals),
 * and the cluster runs quietly long enough for every TTL to run out twice over; then the end-of-run
 * invariants are checked.
 */
import { createHash } from 'node:crypto';
import type { LogEntry } from '../../src/ports/log.ts';
import { Checker } from './checker.ts';
import { Prng } from '../../src/util/prng.ts';
import { Scheduler, type NodeGate, type SimEvent } from './scheduler.ts';
import type { Hardware } from './sim-clock.ts';
import { clientStep, ttlChoicesMs, type Client } from './sim-clients.ts';
import { AgentChecks } from './sim-checks.ts';
import { fault } from './sim-faults.ts';
import { Sequencer, type LogTuning, type LogWorld } from './sim-log.ts';
import { bootNode, crashNode, gossip, healLog, healNode, heartbeatMs, logCutJudgedMs, resumeNode, type RuntimeExtras } from './sim-nodes.ts';
import { plant } from './plants.ts';
import { QueuedClients } from './sim-queued.ts';
import { SimNode, type SimOptions, type SimReport, type SimWorld } from './sim-world.ts';

export type { SimOptions, SimReport } from './sim-world.ts';

const trailMax = 40;

export async function runSim(o: SimOptions): Promise<SimReport> {
  return new Sim(o).run();
}

class Sim implements NodeGate, SimWorld {
  readonly prng: Prng;
  readonly sched: Scheduler;
  readonly nodes = new Map<string, SimNode>();
  readonly names: string[];
  readonly checker: Checker;
  readonly sequencer: Sequencer;
  readonly logWorld: LogWorld;
  readonly pidOf = new WeakMap<object, string>();
  readonly faults = { partitions: 0, logCuts: 0, crashes: 0, restarts: 0, pauses: 0, elections: 0, startFailures: 0, bootsFromSnapshot: 0 };
  readonly counts = { clientOps: 0, refused: 0, unknown: 0, values: 0 };
  chaos = true;
  private readonly chaosMs: number;
  private readonly driftMax: number;
  private readonly ttlMaxMs = Math.max(...ttlChoicesMs);
  private readonly trail: string[] = [];
  private readonly queued: QueuedClients | undefined;
  private readonly checks: AgentChecks | undefined;

  constructor(readonly o: SimOptions) {
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
      this.nodes.set(name, new SimNode(name, { ...drawn, ...o.clocks?.[name] }));
    }
    const tuning: LogTuning = {
      retryMs: 400, attemptsMax: 4, consumeWaitMs: 3_000,
      lossProposal: p.float(0, o.lossMax ?? 0.08), lossAck: p.float(0, o.lossMax ?? 0.08),
      hopMsMin: 1, hopMsMax: p.int(5, 60),
    };
    this.logWorld = {
      sched: this.sched, prng: p, tuning,
      reachable: (n) => { const x = this.nodes.get(n)!; return x.up && !x.partitioned && !x.logCut; },
      incOf: (n) => this.nodes.get(n)!.inc,
    };
    this.checker = new Checker(this.driftMax);
    this.sequencer = new Sequencer(this.logWorld, (c) => this.checker.onCommit(c.entries, c.trueMs), o.bug);
    if (o.workloads?.queued ?? true) this.queued = new QueuedClients(this, this.driftMax);
    if (o.workloads?.checks ?? true) this.checks = new AgentChecks(this);
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

  // ------------------------------------------------------------ SimWorld

  note(line: string): void {
    if (this.checker.violations.length > 0) return; // keep the trail that led to the first violation
    this.trail.push(line);
    if (this.trail.length > trailMax) this.trail.shift();
  }

  boot(n: SimNode): void {
    bootNode(this, n, (node, inc): RuntimeExtras => this.checks?.runtimeOptions(node, inc) ?? {});
    if (this.o.plant !== undefined) plant(this.o.plant, n.runtime!);
  }

  crash(n: SimNode): void {
    crashNode(n);
  }

  // ------------------------------------------------------------ the run

  async run(): Promise<SimReport> {
    this.schedule();
    // Quiet: long enough for a TTL owner that takes over late (membership settling, a node found cut off
    // from the stream) to wait its 2 × TTL.
    const end = this.chaosMs + 2 * this.ttlMaxMs * (1 + this.driftMax) + 15_000 + ((this.o.logCuts ?? true) ? logCutJudgedMs + heartbeatMs : 0);
    await this.loop(end);
    const { checker } = this;
    if (checker.violations.length === 0 || !(this.o.stopAtFirst ?? true)) {
      checker.step++;
      checker.trueMs = this.sched.now;
      // A node still cut off from the stream cannot have caught up, nor reported its checks' last results.
      const reading = [...this.nodes].filter(([, n]) => !n.logCutForGood);
      checker.final(new Map(reading.map(([name, n]) => [name, n.up ? n.runtime?.state : undefined])), true);
      this.checks?.final(new Set(reading.map(([name]) => name)));
    }
    this.o.onEnd?.(this.sequencer.entries, this.sequencer.trueAt);
    return {
      seed: this.o.seed, nodes: this.names.length, steps: checker.step, trueMs: this.sched.now, stats: checker.stats,
      faults: this.faults, clientOps: this.counts.clientOps, refused: this.counts.refused, unknown: this.counts.unknown,
      duplicates: this.sequencer.duplicatesDropped, logHash: logHash(this.sequencer.entries),
      violations: checker.violations, trail: [...this.trail],
    };
  }

  private schedule(): void {
    const { sched } = this;
    for (const [k, name] of this.names.entries()) sched.at(k * 7, `boot ${name}`, () => this.boot(this.nodes.get(name)!));
    sched.at(heartbeatMs, 'gossip', () => gossip(this));
    sched.at(this.prng.int(1_000, 3_000), 'fault', () => fault(this));
    const clients = Array.from({ length: this.prng.int(3, 6) }, (_, k): Client => ({ name: `c${k + 1}`, sessions: [] }));
    for (const c of clients) sched.at(this.prng.int(800, 1_500), `client ${c.name}`, () => clientStep(this, c));
    this.queued?.schedule();
    this.checks?.schedule();
    sched.at(this.chaosMs, 'heal all', () => this.healAll());
  }

  /** Runs events until `end`, checking the invariants after each. */
  private async loop(end: number): Promise<void> {
    const { sched, checker } = this;
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
      this.queued?.afterStep();
      this.checks?.afterStep();
      if (stopAtFirst && checker.violations.length > 0) break;
    }
  }

  private healAll(): void {
    this.chaos = false;
    this.sequencer.downUntil = 0;
    // Cut off from the stream to the end: a node whose runtime runs, so gossip hears it say so.
    const running = [...this.nodes.values()].filter((n) => n.up && n.started);
    const cutForGood = (this.o.logCuts ?? true) && running.length > 0 ? this.prng.pick(running) : undefined;
    for (const n of this.nodes.values()) {
      healNode(this, n);
      healLog(this, n);
      resumeNode(this, n);
      if (!n.up) this.boot(n);
    }
    if (cutForGood !== undefined) {
      this.faults.logCuts++;
      cutForGood.logCut = cutForGood.logCutForGood = true;
      cutForGood.disturbances++;
      this.note(`${this.sched.now} ${cutForGood.name} cut off from the stream to the end`);
    }
  }
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
