/** bench:compare's results: Roster / peer ratios, Roster's performance targets judged on this run, and the printed summary. */
import type { RowResult, Scenario } from '../measure.ts';
import { wrkConnections, wrkThreads } from '../peers/reads.ts';
import type { Machine } from '../peers/tools.ts';
import { formatRow, ms } from '../server.ts';
import { comparisons, warmupMs, type LockSystem, type Options, type ReadsRun, type SystemRun } from './model.ts';

export interface Ratio { roster: LockSystem; peer: LockSystem; scenario: Scenario; clients: number; rosterPairsPerS: number; peerPairsPerS: number; ratio: number }

export function ratiosOf(runs: SystemRun[]): Ratio[] {
  const rowOf = (system: LockSystem, scenario: Scenario, clients: number) =>
    runs.find((r) => r.system === system)?.rows.find((x) => x.scenario === scenario && x.clients === clients);
  const out: Ratio[] = [];
  for (const { roster, peer } of comparisons) {
    for (const row of runs.find((r) => r.system === roster)?.rows ?? []) {
      const other = rowOf(peer, row.scenario, row.clients);
      if (other === undefined) continue;
      out.push({ roster, peer, scenario: row.scenario, clients: row.clients, rosterPairsPerS: row.pairsPerS, peerPairsPerS: other.pairsPerS, ratio: row.pairsPerS / other.pairsPerS });
    }
  }
  return out;
}

export interface Target { target: string; status: 'met' | 'missed' | 'not measured'; measured: string }

export const n0 = (x: number) => Math.round(x).toLocaleString('en-US');
export const times = (x: number) => `${x.toFixed(1)}×`;

/** Roster's performance targets, each judged on this run's rows; a row with errors meets nothing. */
export function targetsOf(runs: SystemRun[], reads: ReadsRun | undefined): Target[] {
  const row = (system: LockSystem, scenario: Scenario, clients = 64) =>
    runs.find((r) => r.system === system)?.rows.find((x) => x.scenario === scenario && x.clients === clients);
  const notMeasured = (target: string, what: string): Target => ({ target, status: 'not measured', measured: `no ${what} row in this run` });
  const judge = (target: string, met: boolean, measured: string, errors: number): Target =>
    ({ target, status: met && errors === 0 ? 'met' : 'missed', measured: errors > 0 ? `${measured}; ${errors} errors` : measured });
  const absolute = (target: string, system: LockSystem, scenario: Scenario, min: number): Target => {
    const r = row(system, scenario);
    return r === undefined ? notMeasured(target, `${system} ${scenario}/64`)
      : judge(target, r.pairsPerS >= min, `${n0(r.pairsPerS)} pairs/s`, r.errors);
  };
  const relative = (target: string, system: LockSystem, peer: LockSystem, scenario: Scenario, factor: number): Target => {
    const r = row(system, scenario);
    const p = row(peer, scenario);
    if (r === undefined || p === undefined) return notMeasured(target, `${r === undefined ? system : peer} ${scenario}/64`);
    const ratio = r.pairsPerS / p.pairsPerS;
    return judge(target, ratio >= factor, `${times(ratio)} (${n0(r.pairsPerS)} / ${n0(p.pairsPerS)} pairs/s)`, r.errors);
  };
  const single = row('roster', 'distinct');
  const shared = row('roster', 'shared');
  const targets: Target[] = [
    absolute('single node, 64 clients, distinct keys: ≥ 20,000 pairs/s', 'roster', 'distinct', 20_000),
    relative('single node, 64 clients, distinct keys: ≥ 10× etcd 1 member', 'roster', 'etcd', 'distinct', 10),
    single === undefined ? notMeasured('single node, 64 clients, distinct keys: p99 ≤ 10 ms', 'roster distinct/64')
      : judge('single node, 64 clients, distinct keys: p99 ≤ 10 ms', single.p99Ms <= 10, `p99 ${ms(single.p99Ms)} ms`, single.errors),
    relative('single node, one shared key, 64 contenders: ≥ 10× etcd 1 member', 'roster', 'etcd', 'shared', 10),
    shared === undefined ? notMeasured('single node, one shared key, 64 contenders: every client acquires at least once per second', 'roster shared/64')
      : judge('single node, one shared key, 64 contenders: every client acquires at least once per second', shared.minAcquiresPerS >= 1,
        `fewest acquires by one client in one second: ${shared.minAcquiresPerS.toFixed(0)}`, shared.errors),
    absolute('3-node cluster, 64 clients, distinct keys: ≥ 5,000 pairs/s', 'roster-cluster', 'distinct', 5_000),
    relative('3-node cluster, 64 clients, distinct keys: ≥ 4× etcd 3 members', 'roster-cluster', 'etcd-cluster', 'distinct', 4),
    relative('3-node cluster, 64 clients, distinct keys: ≥ 1.5× NATS KV CAS R3', 'roster-cluster', 'nats-kv-r3', 'distinct', 1.5),
  ];
  const readsTarget = 'reads: GET /v1/kv/<key> ≥ 40% of uWebSockets.js hello-world (wrk, 64 connections)';
  if (reads?.ratio === undefined || reads.roster === undefined || reads.hello === undefined) targets.push(notMeasured(readsTarget, 'reads'));
  else {
    targets.push(judge(readsTarget, reads.ratio >= 0.4,
      `${(reads.ratio * 100).toFixed(0)}% (${n0(reads.roster.requestsPerS)} / ${n0(reads.hello.requestsPerS)} req/s)`, reads.roster.errors));
  }
  return targets;
}

// ---------------------------------------------------------------- output

export const rowCols = ['system', 'scenario', 'clients', 'pairs/s', 'p50 ms', 'p99 ms', 'contended/s', 'errors', 'min acq/s'] as const;
export const rowWidths = [15, 9, 8, 9, 8, 8, 12, 7, 10];

export function rowText(r: RowResult & { system: LockSystem }): string {
  return formatRow([
    r.system, r.scenario, String(r.clients), r.pairsPerS.toFixed(0), ms(r.p50Ms), ms(r.p99Ms),
    r.contendedPerS.toFixed(0), String(r.errors) + (r.capped ? ' capped' : ''), r.minAcquiresPerS.toFixed(0),
  ], rowWidths);
}

const ratioCols = ['roster / peer', 'scenario', 'clients', 'roster', 'peer', 'ratio'] as const;
const ratioWidths = [30, 9, 8, 9, 9, 8];

export function header(m: Machine, o: Options): string {
  return [
    `roster compare  ${new Date().toISOString()}`,
    `machine: cpu ${m.cpu} x${m.cores}, node ${m.node}, ${m.platform}; data dirs under ${m.dataParent} (${m.dataFs})`,
    `rows: ${o.durationS} s measured after ${warmupMs} ms warm-up; clients ${o.clients.join('/')}; distinct = a key per client, shared = one key for all;`,
    '      one Node process drives every system through the same loop; latency = lock call to release answer (shared: waiting included)',
    `systems: ${o.systems.join(', ')}`,
  ].join('\n');
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
  out.push('', 'ratios, Roster / peer, pairs/s from this run:');
  if (ratios.length === 0) out.push('  (no Roster row has a peer row in this run)');
  else {
    out.push(formatRow(ratioCols, ratioWidths));
    for (const r of ratios) {
      out.push(formatRow([`${r.roster} / ${r.peer}`, r.scenario, String(r.clients), r.rosterPairsPerS.toFixed(0), r.peerPairsPerS.toFixed(0), times(r.ratio)], ratioWidths));
    }
  }
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
