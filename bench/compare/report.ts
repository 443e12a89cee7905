/** bench:compare's results: Roster / peer ratios, Roster's performance targets judged on this run, and the printed summary. */
import { wrkConnections, wrkThreads } from '../peers/reads.ts';
import type { Machine } from '../peers/tools.ts';
import { formatRow, ms } from '../server.ts';
import { comparisons, warmupMs, type CompareRow, type LockSystem, type Options, type ReadsRun, type RowScenario, type SystemRun } from './model.ts';
import { agentDescription } from '../support/built-agent.ts';

/**
 * Roster / peer for one row both ran: pairs/s (`ratio`), and pairs per server core-second (`cpuRatio`:
 * how many times less server CPU a pair costs on Roster).
 */
export interface Ratio {
  roster: LockSystem; peer: LockSystem; scenario: RowScenario; clients: number;
  rosterPairsPerS: number; peerPairsPerS: number; ratio: number;
  rosterPairsPerServerCoreS: number; peerPairsPerServerCoreS: number; cpuRatio: number;
}

export function ratiosOf(runs: SystemRun[]): Ratio[] {
  const rowOf = (system: LockSystem, scenario: RowScenario, clients: number) =>
    runs.find((r) => r.system === system)?.rows.find((x) => x.scenario === scenario && x.clients === clients);
  const out: Ratio[] = [];
  for (const { roster, peer } of comparisons) {
    for (const row of runs.find((r) => r.system === roster)?.rows ?? []) {
      const other = rowOf(peer, row.scenario, row.clients);
      if (other === undefined) continue;
      out.push({
        roster, peer, scenario: row.scenario, clients: row.clients,
        rosterPairsPerS: row.pairsPerS, peerPairsPerS: other.pairsPerS, ratio: row.pairsPerS / other.pairsPerS,
        rosterPairsPerServerCoreS: row.pairsPerServerCoreS, peerPairsPerServerCoreS: other.pairsPerServerCoreS,
        cpuRatio: row.pairsPerServerCoreS / other.pairsPerServerCoreS,
      });
    }
  }
  return out;
}

/** A Roster row next to its floor's (bench/floor-server.ts; the cluster's floor for the cluster): what Roster adds per pair. */
export interface OverFloor {
  roster: LockSystem; scenario: RowScenario; clients: number;
  rosterUsPerPair: number; floorUsPerPair: number; rosterPairsPerS: number; floorPairsPerS: number;
  /** Roster's server CPU per pair less the floor's: the work of its own per pair. */
  overUsPerPair: number;
  /** The same of each kind of process both run (the cluster: nodes, nats-servers), where the rows tell them apart. */
  overUsPerPairByRole?: Record<string, number>;
}

/** Each Roster setup and its floor. */
const floors = [{ roster: 'roster', floor: 'floor' }, { roster: 'roster-cluster', floor: 'floor-cluster' }] as const;

function overByRole(row: CompareRow, f: CompareRow): Pick<OverFloor, 'overUsPerPairByRole'> {
  const [mine, floor] = [row.serverCpuPerPairUsByRole, f.serverCpuPerPairUsByRole];
  if (mine === undefined || floor === undefined) return {};
  const roles = Object.keys(mine).filter((role) => floor[role] !== undefined);
  return roles.length === 0 ? {} : { overUsPerPairByRole: Object.fromEntries(roles.map((role) => [role, mine[role]! - floor[role]!])) };
}

export function overFloorOf(runs: SystemRun[]): OverFloor[] {
  return floors.flatMap(({ roster, floor }) => {
    const floorRows = runs.find((r) => r.system === floor)?.rows ?? [];
    return (runs.find((r) => r.system === roster)?.rows ?? []).flatMap((row) => {
      const f = floorRows.find((x) => x.scenario === row.scenario && x.clients === row.clients);
      return f === undefined ? [] : [{
        roster, scenario: row.scenario, clients: row.clients, rosterUsPerPair: row.serverCpuPerPairUs, floorUsPerPair: f.serverCpuPerPairUs,
        rosterPairsPerS: row.pairsPerS, floorPairsPerS: f.pairsPerS, overUsPerPair: row.serverCpuPerPairUs - f.serverCpuPerPairUs,
        ...overByRole(row, f),
      }];
    });
  });
}

export interface Target { target: string; status: 'met' | 'missed' | 'not measured'; measured: string }

export const n0 = (x: number) => Math.round(x).toLocaleString('en-US');
export const times = (x: number) => `${x.toFixed(1)}×`;

type Judge = (target: string, met: boolean, measured: string, errors: number) => Target;
type RowOf = (system: LockSystem, scenario: RowScenario) => CompareRow | undefined;

const notMeasured = (target: string, what: string): Target => ({ target, status: 'not measured', measured: `no ${what} row in this run` });
const judge: Judge = (target, met, measured, errors) =>
  ({ target, status: met && errors === 0 ? 'met' : 'missed', measured: errors > 0 ? `${measured}; ${errors} errors` : measured });

/** `figure` of a row against `min` (or, with `atMost`, against a maximum). */
function absolute(row: RowOf, target: string, system: LockSystem, scenario: RowScenario, min: number, figure: (r: CompareRow) => number, text: (x: number) => string, atMost = false): Target {
  const r = row(system, scenario);
  if (r === undefined) return notMeasured(target, `${system} ${scenario}/64`);
  const x = figure(r);
  return judge(target, atMost ? x <= min : x >= min, text(x), r.errors);
}

/** Roster's `figure` over its peer's, from the same run, against `factor`. */
function relative(row: RowOf, target: string, system: LockSystem, peer: LockSystem, scenario: RowScenario, factor: number, figure: (r: CompareRow) => number, unit: string): Target {
  const r = row(system, scenario);
  const p = row(peer, scenario);
  if (r === undefined || p === undefined) return notMeasured(target, `${r === undefined ? system : peer} ${scenario}/64`);
  const ratio = figure(r) / figure(p);
  return judge(target, ratio >= factor, `${times(ratio)} (${n0(figure(r))} / ${n0(figure(p))} ${unit})`, r.errors);
}

const pairs = (r: CompareRow) => r.pairsPerS;
const perCore = (r: CompareRow) => r.pairsPerServerCoreS;
const pairsText = (x: number) => `${n0(x)} pairs/s`;

/** Roster's performance targets, each judged on this run's 64-client rows; a row with errors meets nothing. */
export function targetsOf(runs: SystemRun[], reads: ReadsRun | undefined): Target[] {
  const row: RowOf = (system, scenario) => runs.find((r) => r.system === system)?.rows.find((x) => x.scenario === scenario && x.clients === 64);
  const shared = row('roster', 'shared');
  const targets: Target[] = [
    absolute(row, 'single node, 64 clients, distinct keys: ≥ 20,000 pairs/s', 'roster', 'distinct', 20_000, pairs, pairsText),
    relative(row, 'single node, 64 clients, distinct keys: ≥ 10× etcd 1 member', 'roster', 'etcd', 'distinct', 10, pairs, 'pairs/s'),
    absolute(row, 'single node, 64 clients, distinct keys: p99 ≤ 10 ms', 'roster', 'distinct', 10, (r) => r.p99Ms, (x) => `p99 ${ms(x)} ms`, true),
    absolute(row, 'single node, 64 clients, distinct keys: server CPU ≤ 40 µs per pair', 'roster', 'distinct', 40,
      (r) => r.serverCpuPerPairUs, (x) => `${x.toFixed(1)} µs per pair`, true),
    relative(row, 'single node, 64 clients, distinct keys: ≥ 10× less server CPU per pair than etcd 1 member', 'roster', 'etcd', 'distinct', 10,
      perCore, 'pairs per server core-second'),
    relative(row, 'single node, one shared key, 64 contenders: ≥ 10× etcd 1 member', 'roster', 'etcd', 'shared', 10, pairs, 'pairs/s'),
    shared === undefined ? notMeasured('single node, one shared key, 64 contenders: every client acquires at least once per second', 'roster shared/64')
      : judge('single node, one shared key, 64 contenders: every client acquires at least once per second', shared.minAcquiresPerS >= 1,
        `fewest acquires by one client in one second: ${shared.minAcquiresPerS.toFixed(0)}`, shared.errors),
    absolute(row, 'single node, 64 clients, /v1/txn batches: ≥ 50,000 lock steps/s (a lock or an unlock of one key)', 'roster', 'txn', 50_000,
      (r) => 2 * r.pairsPerS, (x) => `${n0(x)} lock steps/s`),
    absolute(row, '3-node cluster, 64 clients, distinct keys: ≥ 5,000 pairs/s', 'roster-cluster', 'distinct', 5_000, pairs, pairsText),
    relative(row, '3-node cluster, 64 clients, distinct keys: ≥ 4× etcd 3 members', 'roster-cluster', 'etcd-cluster', 'distinct', 4, pairs, 'pairs/s'),
    relative(row, '3-node cluster, 64 clients, distinct keys: ≥ 1.5× NATS KV CAS R3', 'roster-cluster', 'nats-kv-r3', 'distinct', 1.5, pairs, 'pairs/s'),
    relative(row, '3-node cluster, 64 clients, distinct keys: the whole cluster\'s server CPU per pair ≤ NATS KV R3\'s', 'roster-cluster', 'nats-kv-r3', 'distinct', 1,
      perCore, 'pairs per server core-second'),
  ];
  const readsTarget = 'reads: GET /v1/kv/<key> ≥ 50% of uWebSockets.js hello-world (wrk, 64 connections)';
  if (reads?.ratio === undefined || reads.roster === undefined || reads.hello === undefined) targets.push(notMeasured(readsTarget, 'reads'));
  else {
    targets.push(judge(readsTarget, reads.ratio >= 0.5,
      `${(reads.ratio * 100).toFixed(0)}% (${n0(reads.roster.requestsPerS)} / ${n0(reads.hello.requestsPerS)} req/s)`, reads.roster.errors));
  }
  return targets;
}

// ---------------------------------------------------------------- output

export const rowCols = ['system', 'scenario', 'clients', 'pairs/s', 'p50 ms', 'p99 ms', 'contended/s', 'errors', 'min acq/s',
  'srv cores', 'srv µs/pair', 'pairs/core-s'] as const;
export const rowWidths = [15, 9, 8, 9, 8, 8, 12, 7, 10, 10, 12, 13];

/** A figure that could not be had (no pairs, no CPU used) shows as '-'. */
const fixed = (x: number, digits: number) => (Number.isFinite(x) ? x.toFixed(digits) : '-');

export function rowText(r: CompareRow): string {
  return formatRow([
    r.system, r.scenario === 'txn' ? `txn×${r.batch}` : r.scenario, String(r.clients), r.pairsPerS.toFixed(0), ms(r.p50Ms), ms(r.p99Ms),
    r.contendedPerS.toFixed(0), String(r.errors) + (r.capped ? ' capped' : ''), r.minAcquiresPerS.toFixed(0),
    fixed(r.serverCores, 2), fixed(r.serverCpuPerPairUs, 1), fixed(r.pairsPerServerCoreS, 0),
  ], rowWidths);
}

const ratioCols = ['roster / peer', 'scenario', 'clients', 'roster', 'peer', 'ratio', 'roster/core-s', 'peer/core-s', 'cpu ratio'] as const;
const ratioWidths = [30, 9, 8, 9, 9, 8, 14, 12, 10];

export function header(m: Machine, o: Options): string {
  return [
    `roster compare  ${new Date().toISOString()}`,
    `machine: cpu ${m.cpu} x${m.cores}, node ${m.node}, ${m.platform}; data dirs under ${m.dataParent} (${m.dataFs}); ${agentDescription()}`,
    `warm-up: ${o.systemWarmupS > 0 ? `each system, once started, runs every scenario unmeasured for ${o.systemWarmupS} s at ${Math.max(...o.clients)} clients (reads: a wrk run as long)` : 'none before the first row'}`,
    `rows: ${o.durationS} s measured after ${warmupMs} ms warm-up; clients ${o.clients.join('/')}; ${o.scenarios.join(', ')}; distinct = a key per client, shared = one key for all;`,
    ...(o.repeat > 1 ? [`      each row run ${o.repeat} times back to back: the run with the median srv µs/pair is shown (all runs in the JSON; errors of all counted)`] : []),
    '      one Node process drives every system through the same loop; latency = lock call to release answer (shared: waiting included)',
    ...(o.scenarios.includes('txn') ? [`      txn×${o.batch} = a key per client and slot, ${o.batch} locked in one request and unlocked in one (Roster /v1/txn, etcd Txn); a pair is one key; latency = one round`] : []),
    '      srv = the server processes only (user+system CPU from /proc over the window, the bench excluded); cores = CPU s per s; per pair in µs',
    `systems: ${o.systems.join(', ')}`,
  ].join('\n');
}

const signed = (x: number): string => (Number.isFinite(x) ? `${x >= 0 ? '+' : '−'}${Math.abs(x).toFixed(1)}` : '–');

function floorLines(over: OverFloor[]): string[] {
  if (over.length === 0) return [];
  return [
    '', 'the floor (the least a durable lock server does per pair here: same client, runtime, HTTP library, group commit; '
      + 'for the cluster, the same stream and consumers) and Roster:',
    ...over.map((f) => `  ${f.roster.padEnd(15)} ${`${f.scenario}/${f.clients}`.padEnd(12)} floor ${fixed(f.floorUsPerPair, 1)} µs per pair at ${n0(f.floorPairsPerS)} pairs/s; `
      + `Roster ${fixed(f.rosterUsPerPair, 1)} µs at ${n0(f.rosterPairsPerS)} pairs/s, ${fixed(f.overUsPerPair, 1)} µs per pair of its own`
      + (f.overUsPerPairByRole === undefined ? '' : ` (${Object.entries(f.overUsPerPairByRole).map(([role, us]) => `${role} ${signed(us)}`).join(', ')})`)),
  ];
}

export function printSummary(runs: SystemRun[], reads: ReadsRun | undefined, ratios: Ratio[], targets: Target[]): void {
  const out: string[] = [];
  if (reads !== undefined) {
    out.push('', `reads (wrk -t${wrkThreads} -c${wrkConnections}):`);
    for (const [name, r] of [['uws hello-world', reads.hello], ['roster GET kv', reads.roster]] as const) {
      if (r !== undefined) out.push(`  ${name.padEnd(16)} ${n0(r.requestsPerS).padStart(9)} req/s  p50 ${ms(r.p50Ms)} ms  p99 ${ms(r.p99Ms)} ms  errors ${r.errors}   ${r.url}`);
    }
    if (reads.ratio !== undefined) out.push(`  roster / hello-world: ${(reads.ratio * 100).toFixed(1)}%`);
    if (reads.error !== undefined) out.push(`  failed: ${reads.error.split('\n')[0]}`);
  }
  out.push('', 'ratios, Roster / peer from this run: pairs/s, and pairs per server core-second (cpu ratio: times less server CPU per pair on Roster):');
  if (ratios.length === 0) out.push('  (no Roster row has a peer row in this run)');
  else {
    out.push(formatRow(ratioCols, ratioWidths));
    for (const r of ratios) {
      out.push(formatRow([`${r.roster} / ${r.peer}`, r.scenario, String(r.clients), r.rosterPairsPerS.toFixed(0), r.peerPairsPerS.toFixed(0), times(r.ratio),
        fixed(r.rosterPairsPerServerCoreS, 0), fixed(r.peerPairsPerServerCoreS, 0), Number.isFinite(r.cpuRatio) ? times(r.cpuRatio) : '-'], ratioWidths));
    }
  }
  out.push(...floorLines(overFloorOf(runs)));
  const skipped = runs.flatMap((r) => (r.skipped ?? []).map((k) => `  ${r.system} ${k.scenario}: ${k.why}`));
  if (skipped.length > 0) out.push('', 'rows not run:', ...skipped);
  const failed = runs.filter((r) => r.error !== undefined);
  if (failed.length > 0) {
    out.push('', 'systems that failed:');
    for (const r of failed) out.push(`  ${r.system}: ${r.error!.split('\n')[0]}`);
  }
  out.push('', 'targets:');
  for (const t of targets) out.push(`  ${t.status.padEnd(12)} ${t.target} — ${t.measured}`);
  const missed = targets.filter((t) => t.status === 'missed');
  out.push('', missed.length === 0 ? 'targets missed: none' : `targets missed (${missed.length}):`);
  for (const t of missed) out.push(`  - ${t.target} — ${t.measured}`);
  process.stdout.write(`${out.join('\n')}\n`);
}
