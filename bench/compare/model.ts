/**
 * What bench:compare's parts share: the systems it knows, which peer each Roster setup is compared with,
 * its options and the record of a run.
 */
import type { RowResult, Scenario } from '../measure.ts';
import type { WindowCpu } from '../peers/proc-cpu.ts';
import type { WrkResult } from '../peers/reads.ts';

export const warmupMs = 500;
/**
 * Unmeasured load each system gets once started, before its first row, in seconds per scenario. Roster
 * runs on V8: for its first seconds under load its optimising compiler runs on other threads (measured:
 * a node's helper threads at 30–40% of its CPU for about 6 s, then 5%), which a Go peer never pays.
 * Every system gets the same warm-up, so the rows compare systems as they run for long.
 */
export const systemWarmupSDefault = 5;
export const keyPrefix = 'bench';

export const lockSystems = ['roster', 'etcd', 'nats-kv', 'floor', 'roster-cluster', 'floor-cluster', 'etcd-cluster', 'nats-kv-r3'] as const;
export type LockSystem = typeof lockSystems[number];
export const allSystems = [...lockSystems, 'reads'] as const;
export type System = typeof allSystems[number];

/** distinct and shared: one request per lock step (bench/measure.ts); txn: `batch` keys per request (batch-row.ts). */
export const rowScenarios = ['distinct', 'shared', 'txn'] as const;
export type RowScenario = Scenario | 'txn';
/** Keys per request in the txn rows: Roster's most operations in one transaction. */
export const batchDefault = 64;
/** The most times `--repeat` runs each row. */
export const repeatMax = 9;

/** Which peer each Roster setup is compared with. */
export const comparisons: { roster: LockSystem; peer: LockSystem }[] = [
  { roster: 'roster', peer: 'etcd' },
  { roster: 'roster', peer: 'nats-kv' },
  { roster: 'roster', peer: 'floor' },
  { roster: 'roster-cluster', peer: 'etcd-cluster' },
  { roster: 'roster-cluster', peer: 'nats-kv-r3' },
  { roster: 'roster-cluster', peer: 'floor-cluster' },
];

export interface Options {
  durationS: number;
  clients: number[];
  scenarios: RowScenario[];
  batch: number;
  /** Seconds of unmeasured load per scenario after a system starts (0: none). */
  systemWarmupS: number;
  /** Times each row runs back to back; the row reported is the median run by server CPU per pair. */
  repeat: number;
  systems: System[];
  jsonPath: string;
  dataParent: string;
}

export interface SystemRun {
  system: LockSystem;
  /** What was started, in a line: log, replicas, data dir. */
  description: string;
  rows: CompareRow[];
  /** Scenarios this system cannot run (no batch form), each with why. */
  skipped?: { scenario: RowScenario; why: string }[];
  error?: string;
}

/** What the server side spent on a row's window: CPU of the server processes only, the bench excluded. */
export interface Efficiency {
  /** Server processes counted: Roster nodes and their nats-servers, etcd members, nats-servers. */
  serverProcesses: number;
  /** Wall time between the two /proc samples, and the server CPU seconds used in it. */
  cpuSpanS: number;
  serverCpuS: number;
  /** Server CPU seconds per second: cores busy on average. */
  serverCores: number;
  /** Server CPU per pair (one key locked and unlocked), in µs. */
  serverCpuPerPairUs: number;
  /** The server CPU per pair of each kind of process, in µs, for a system of more than one kind (Roster's nodes and its nats-servers). */
  serverCpuPerPairUsByRole?: Record<string, number>;
  /** Pairs per server core-second: pairs/s over serverCores. */
  pairsPerServerCoreS: number;
  /** The bench's own CPU (the load generator) per second over the same span, for the record. */
  clientCores: number;
}

/** One run of a repeated row, for the record. */
export interface RepeatRun { pairsPerS: number; serverCpuPerPairUs: number; p99Ms: number; errors: number }

export type CompareRow = Omit<RowResult, 'scenario'> & { system: LockSystem; scenario: RowScenario; batch: number } & Efficiency & {
  /** With `--repeat` above 1: every run of the row, in order (the row's own figures are the median run's). */
  repeats?: RepeatRun[];
};

/**
 * The run of a repeated row with the median server CPU per pair (the lower median for an even count; a
 * run with no figure sorts last), with every run listed and the errors of all of them counted: a row
 * that failed once meets nothing.
 */
export function medianRun(runs: CompareRow[]): CompareRow {
  if (runs.length === 1) return runs[0]!;
  const key = (r: CompareRow) => (Number.isFinite(r.serverCpuPerPairUs) ? r.serverCpuPerPairUs : Number.POSITIVE_INFINITY);
  const median = [...runs].sort((a, b) => key(a) - key(b))[(runs.length - 1) >> 1]!;
  const firstError = runs.find((r) => r.errors > 0)?.firstError;
  return {
    ...median,
    errors: runs.reduce((n, r) => n + r.errors, 0),
    ...(firstError !== undefined ? { firstError } : {}),
    repeats: runs.map((r) => ({ pairsPerS: r.pairsPerS, serverCpuPerPairUs: r.serverCpuPerPairUs, p99Ms: r.p99Ms, errors: r.errors })),
  };
}

export function efficiencyOf(pairsPerS: number, cpu: WindowCpu): Efficiency {
  const serverCores = cpu.spanS > 0 ? cpu.serverCpuS / cpu.spanS : Number.NaN;
  return {
    serverProcesses: cpu.processes, cpuSpanS: cpu.spanS, serverCpuS: cpu.serverCpuS, serverCores,
    serverCpuPerPairUs: pairsPerS > 0 ? (serverCores * 1e6) / pairsPerS : Number.NaN,
    pairsPerServerCoreS: serverCores > 0 ? pairsPerS / serverCores : Number.NaN,
    clientCores: cpu.spanS > 0 ? cpu.clientCpuS / cpu.spanS : Number.NaN,
    ...(cpu.byRoleS === undefined ? {} : {
      serverCpuPerPairUsByRole: Object.fromEntries(Object.entries(cpu.byRoleS).map(([role, s]) => [role, pairsPerS > 0 && cpu.spanS > 0 ? (s / cpu.spanS) * 1e6 / pairsPerS : Number.NaN])),
    }),
  };
}

export interface ReadsRun { hello?: WrkResult; roster?: WrkResult; ratio?: number; error?: string }
