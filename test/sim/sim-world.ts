/**
 * What the parts of the simulation share (sim.ts composes them): the options and report of a run, the
 * simulated nodes, and the world the node, fault and workload modules act on.
 */
import type { LogEntry } from '../../src/ports/log.ts';
import type { Runtime } from '../../src/runtime/index.ts';
import type { Checker, CheckerStats, Violation } from './checker.ts';
import type { Prng } from '../../src/util/prng.ts';
import type { Scheduler, SimEvent } from './scheduler.ts';
import type { Plant } from './plants.ts';
import type { Hardware } from './sim-clock.ts';
import type { LogWorld, NodeDisk, Sequencer, SequencerBug, SimLog } from './sim-log.ts';
import type { SimMembership } from './sim-membership.ts';

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
  /** Controls only: a fault planted in every node's runtime. */
  plant?: Plant;
  /** Overrides of drawn clocks (controls and regressions): a rate error or offset beyond the bounds. */
  clocks?: Record<string, Partial<Hardware>>;
  /** Largest probability of losing a publication or an acknowledgement, drawn per run. @default 0.08 */
  lossMax?: number;
  /** True ms between two fault decisions: uniform in [min, max]. @default [700, 3500] */
  faultGapMs?: [number, number];
  /**
   * Workloads besides the plain clients: queued acquires through LockQueues, and agent checks run by
   * their node's CheckOwner. A seed draws differently with and without them. @default both on
   */
  workloads?: { queued?: boolean; checks?: boolean };
  /**
   * Each node judges its use of the stream from the stream's answers (src/log/reach.ts) and tells its
   * gossip, as the JetStream log does; chaos cuts nodes off from the stream alone (their gossip still
   * heard), and the quiet phase keeps one node cut off to the end, so the others must expire the sessions
   * it owned. A seed draws differently with and without. @default true
   */
  logCuts?: boolean;
  /** Debugging: receives the committed log at the end of the run. */
  onEnd?: (log: readonly LogEntry[], trueAt: readonly number[]) => void;
  /** Stop at the first violation. @default true */
  stopAtFirst?: boolean;
}

export type FaultCounts = Record<'partitions' | 'logCuts' | 'crashes' | 'restarts' | 'pauses' | 'elections' | 'startFailures' | 'bootsFromSnapshot', number>;

export interface SimReport {
  seed: number;
  nodes: number;
  steps: number;
  trueMs: number;
  stats: CheckerStats;
  faults: FaultCounts;
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

export class SimNode {
  inc = 0;
  up = false;
  /** The current incarnation's start() resolved. */
  started = false;
  paused = false;
  partitioned = false;
  /** Cut off from the stream alone: its gossip is still heard. */
  logCut = false;
  /** Cut off from the stream until the end of the run (the quiet phase's cut): no heal ends it. */
  logCutForGood = false;
  /** Counts pauses, partitions and log cuts: a wait that spans one may run late. */
  disturbances = 0;
  runtime: Runtime | undefined;
  log: SimLog | undefined;
  membership: SimMembership | undefined;
  deferred: SimEvent[] = [];
  readonly disk: NodeDisk = {};

  constructor(readonly name: string, readonly hw: Hardware) {}

  get healthy(): boolean {
    return this.up && !this.paused && !this.partitioned && !this.logCut;
  }
}

/** Client and workload counters of a run. */
export interface WorkCounts {
  clientOps: number;
  refused: number;
  unknown: number;
  values: number;
}

/** The simulated world every module of the simulation acts on. */
export interface SimWorld {
  readonly o: SimOptions;
  readonly prng: Prng;
  readonly sched: Scheduler;
  readonly nodes: ReadonlyMap<string, SimNode>;
  readonly names: readonly string[];
  readonly checker: Checker;
  readonly sequencer: Sequencer;
  readonly logWorld: LogWorld;
  readonly pidOf: WeakMap<object, string>;
  readonly faults: FaultCounts;
  readonly counts: WorkCounts;
  /** False once every fault is healed and clients have gone quiet. */
  readonly chaos: boolean;
  note(line: string): void;
  boot(n: SimNode): void;
  crash(n: SimNode): void;
}

/** A fresh value for a KV write, unique in the run. */
export function nextValue(w: SimWorld, client: string): string {
  return Buffer.from(`${client}:${++w.counts.values}`).toString('base64');
}
