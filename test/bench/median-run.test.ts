// Goal: a row of bench:compare run several times (`--repeat`) shows the run with the median server CPU per
// pair, lists every run, and counts the errors of all of them, so a row that failed once meets no target;
// and each Roster setup's rows are set against its own floor's, the cluster's also by kind of process (nodes, nats-servers).
import { expect, test } from 'vitest';
import { medianRun, type CompareRow, type SystemRun } from '../../bench/compare/model.ts';
import { overFloorOf } from '../../bench/compare/report.ts';

const run = (serverCpuPerPairUs: number, errors = 0, firstError?: string): CompareRow => ({
  system: 'roster', scenario: 'distinct', clients: 64, batch: 1, pairsPerS: 1e6 / serverCpuPerPairUs, p50Ms: 1, p99Ms: 2,
  contendedPerS: 0, minAcquiresPerS: 1, samples: 1, errors, capped: false, ...(firstError !== undefined ? { firstError } : {}),
  serverProcesses: 1, cpuSpanS: 1, serverCpuS: 1, serverCores: 1, serverCpuPerPairUs, pairsPerServerCoreS: 1e6 / serverCpuPerPairUs, clientCores: 1,
} as CompareRow);

test('one run is shown as it is', () => {
  const only = run(80);
  expect(medianRun([only])).toBe(only);
});

test('the median by server CPU per pair, every run listed in order, the errors of all runs counted', () => {
  const m = medianRun([run(90), run(70, 2, 'release refused'), run(80), run(Number.NaN), run(60)]);
  expect(m.serverCpuPerPairUs).toBe(80);
  expect(m.repeats!.map((r) => r.serverCpuPerPairUs)).toEqual([90, 70, 80, Number.NaN, 60]);
  expect(m.errors).toBe(2);
  expect(m.firstError).toBe('release refused');
  // An even count shows the lower median.
  expect(medianRun([run(90), run(70)]).serverCpuPerPairUs).toBe(70);
});

test('each Roster setup is set against its own floor: one node against floor, the cluster against floor-cluster', () => {
  const rowOf = (system: CompareRow['system'], us: number): CompareRow => ({ ...run(us), system });
  const runs: SystemRun[] = [
    { system: 'roster', description: '', rows: [rowOf('roster', 80)] },
    { system: 'floor', description: '', rows: [rowOf('floor', 40)] },
    { system: 'roster-cluster', description: '', rows: [rowOf('roster-cluster', 350)] },
    { system: 'floor-cluster', description: '', rows: [rowOf('floor-cluster', 250)] },
  ];
  expect(overFloorOf(runs).map((f) => [f.roster, f.floorUsPerPair, f.overUsPerPair])).toEqual([['roster', 40, 40], ['roster-cluster', 250, 100]]);
  // Where both rows tell their kinds of process apart, what Roster adds is told apart too.
  const split = (system: CompareRow['system'], nodes: number, nats: number): CompareRow => ({ ...rowOf(system, nodes + nats), serverCpuPerPairUsByRole: { nodes, 'nats-servers': nats } });
  const clusterRuns: SystemRun[] = [
    { system: 'roster-cluster', description: '', rows: [split('roster-cluster', 230, 150)] },
    { system: 'floor-cluster', description: '', rows: [split('floor-cluster', 125, 125)] },
  ];
  expect(overFloorOf(clusterRuns)[0]!.overUsPerPairByRole).toEqual({ nodes: 105, 'nats-servers': 25 });
  expect(overFloorOf(runs).map((f) => f.overUsPerPairByRole)).toEqual([undefined, undefined]);
  // No floor row in the run: no line.
  expect(overFloorOf(runs.filter((r) => r.system !== 'floor-cluster')).map((f) => f.roster)).toEqual(['roster']);
});
