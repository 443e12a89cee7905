// Goal: `npm run bench:compare` reports what the server side spends — each row's server CPU (read from
// /proc for the server processes only), CPU per pair, pairs per server core-second and the Roster/peer
// ratio of that figure — and runs the txn rows (locks taken a batch of keys per /v1/txn request) next to
// the one-request-per-step rows, skipping them, with the reason, for a peer that has no batch form; every
// system gets its warm-up load before its rows; the floor server (the least a durable lock server does
// here) runs the distinct and shared rows, and Roster's own CPU per pair over it is reported. No figure is
// judged here (speed belongs to the bench): the columns exist and hold numbers.
import { execFile } from 'node:child_process';
import { existsSync, mkdtempSync, readFileSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join, resolve } from 'node:path';
import { promisify } from 'node:util';
import { expect, test } from 'vitest';

const repoRoot = resolve(import.meta.dirname, '../..');
const run = promisify(execFile);

/**
 * The data dirs of the servers under test go on tmpfs where there is one: these rows are half a second at
 * two clients, and on a disk shared with the rest of the suite one fdatasync can take most of that, so a
 * server could finish a row having used less CPU than /proc's 10 ms tick can show.
 */
const scratchParent = existsSync('/dev/shm') ? '/dev/shm' : tmpdir();

interface Row {
  system: string; scenario: string; clients: number; batch: number; pairsPerS: number; errors: number;
  serverProcesses: number; cpuSpanS: number; serverCpuS: number; serverCores: number;
  serverCpuPerPairUs: number; pairsPerServerCoreS: number; clientCores: number; serverCpuPerPairUsByRole?: Record<string, number>;
}

test('bench:compare: server CPU per pair and per core-second on every row, txn rows on Roster, the CPU ratio against a peer, the floor', async () => {
  const dir = mkdtempSync(join(scratchParent, 'roster-compare-test-'));
  try {
    const json = join(dir, 'out.json');
    const { stdout } = await run('npx', ['tsx', 'bench/compare.ts', '--systems', 'roster,nats-kv,floor', '--clients', '2', '--duration', '0.5',
      '--warmup', '0.5', '--batch', '8', '--json', json, '--data-parent', dir], { cwd: repoRoot, timeout: 150_000 });
    expect(stdout).toMatch(/srv cores +srv µs\/pair +pairs\/core-s/);
    expect(stdout).toContain('warm-up: each system, once started, runs every scenario unmeasured for 0.5 s at 2 clients');
    expect(stdout).toMatch(/^roster +txn×8 +2 +\d+/m);
    expect(stdout).toContain('nats-kv txn: no multi-key transaction');
    expect(stdout).toMatch(/roster \/ nats-kv +distinct +2 .*×$/m);
    // The warm-up ran: each system did some pairs of every scenario it has before its rows.
    expect(stdout).toMatch(/^roster: warmed up, 0\.5 s each at 2 clients: distinct [1-9]\d* pairs, shared [1-9]\d* pairs, txn [1-9]\d* pairs$/m);
    expect(stdout).toMatch(/^floor: warmed up, 0\.5 s each at 2 clients: distinct [1-9]\d* pairs, shared [1-9]\d* pairs$/m);
    expect(stdout).toContain('floor txn: no multi-key transaction');
    expect(stdout).toMatch(/^ +roster +distinct\/2 +floor [\d.]+ µs per pair at [\d,]+ pairs\/s; Roster [\d.]+ µs at [\d,]+ pairs\/s, -?[\d.]+ µs per pair of its own$/m);

    const out = JSON.parse(readFileSync(json, 'utf8')) as {
      options: { scenarios: string[]; batch: number; systemWarmupS: number };
      systems: { system: string; skipped?: { scenario: string; why: string }[]; error?: string }[];
      rows: Row[];
      ratios: { roster: string; peer: string; scenario: string; cpuRatio: number; rosterPairsPerServerCoreS: number }[];
      overFloor: { scenario: string; clients: number; rosterUsPerPair: number; floorUsPerPair: number; overUsPerPair: number }[];
    };
    expect(out.options).toMatchObject({ scenarios: ['distinct', 'shared', 'txn'], batch: 8, systemWarmupS: 0.5 });
    expect(out.systems.map((s) => s.error)).toEqual([undefined, undefined, undefined]);
    for (const s of out.systems.slice(1)) expect(s.skipped).toEqual([{ scenario: 'txn', why: expect.stringContaining('no multi-key transaction') }]);
    expect(out.rows.map((r) => `${r.system} ${r.scenario} ${r.batch}`)).toEqual([
      'roster distinct 1', 'roster shared 1', 'roster txn 8', 'nats-kv distinct 1', 'nats-kv shared 1', 'floor distinct 1', 'floor shared 1',
    ]);
    for (const r of out.rows) {
      expect(r.errors, `${r.system} ${r.scenario}`).toBe(0);
      expect(r.pairsPerS, `${r.system} ${r.scenario}`).toBeGreaterThan(0);
      // One Roster process; one nats-server. The servers did the work, so they used CPU.
      expect(r.serverProcesses).toBe(1);
      expect(r.cpuSpanS).toBeGreaterThan(0);
      expect(r.serverCpuS, `${r.system} ${r.scenario}`).toBeGreaterThan(0);
      for (const x of [r.serverCores, r.serverCpuPerPairUs, r.pairsPerServerCoreS, r.clientCores]) expect(Number.isFinite(x)).toBe(true);
      expect(r.serverCpuPerPairUs * r.pairsPerServerCoreS).toBeCloseTo(1e6, 0);
      expect(r.serverCpuPerPairUsByRole).toBeUndefined();
    }
    const distinct = out.ratios.find((r) => r.peer === 'nats-kv' && r.scenario === 'distinct')!;
    expect(Number.isFinite(distinct.cpuRatio) && distinct.cpuRatio > 0).toBe(true);
    expect(distinct.rosterPairsPerServerCoreS).toBe(out.rows[0]!.pairsPerServerCoreS);
    expect(out.overFloor.map((f) => `${f.scenario}/${f.clients}`)).toEqual(['distinct/2', 'shared/2']);
    const floorRow = out.rows.find((r) => r.system === 'floor' && r.scenario === 'distinct')!;
    expect(out.overFloor[0]).toMatchObject({ roster: 'roster', rosterUsPerPair: out.rows[0]!.serverCpuPerPairUs, floorUsPerPair: floorRow.serverCpuPerPairUs });
    expect(out.overFloor[0]!.overUsPerPair).toBeCloseTo(out.rows[0]!.serverCpuPerPairUs - floorRow.serverCpuPerPairUs, 6);
  } finally {
    rmSync(dir, { recursive: true, force: true });
  }
}, 180_000);

test('bench:compare runs the cluster floor: six server processes counted, distinct and shared rows across its three nodes, no txn', async () => {
  const dir = mkdtempSync(join(scratchParent, 'roster-compare-test-'));
  try {
    const json = join(dir, 'out.json');
    const { stdout } = await run('npx', ['tsx', 'bench/compare.ts', '--systems', 'floor-cluster', '--clients', '3', '--duration', '0.5',
      '--warmup', '0.5', '--json', json, '--data-parent', dir], { cwd: repoRoot, timeout: 150_000 });
    expect(stdout).toMatch(/^floor-cluster: warmed up, 0\.5 s each at 3 clients: distinct [1-9]\d* pairs, shared [1-9]\d* pairs$/m);
    expect(stdout).toContain('floor-cluster txn: no multi-key transaction');
    const out = JSON.parse(readFileSync(json, 'utf8')) as { rows: Row[] };
    expect(out.rows.map((r) => `${r.system} ${r.scenario} ${r.clients}`)).toEqual(['floor-cluster distinct 3', 'floor-cluster shared 3']);
    for (const r of out.rows) {
      expect(r.errors).toBe(0);
      expect(r.pairsPerS).toBeGreaterThan(0);
      expect(r.serverProcesses).toBe(6);
      expect(r.serverCpuS).toBeGreaterThan(0);
      // The floor nodes' CPU and their nats-servers' apart, adding up to the whole.
      const byRole = r.serverCpuPerPairUsByRole!;
      expect(Object.keys(byRole)).toEqual(['nodes', 'nats-servers']);
      expect(byRole.nodes! + byRole['nats-servers']!).toBeCloseTo(r.serverCpuPerPairUs, 6);
    }
  } finally {
    rmSync(dir, { recursive: true, force: true });
  }
}, 180_000);

test('bench:compare --repeat: each row runs that many times, and the run with the median server CPU per pair is the one shown', async () => {
  const dir = mkdtempSync(join(scratchParent, 'roster-compare-test-'));
  try {
    const json = join(dir, 'out.json');
    const { stdout } = await run('npx', ['tsx', 'bench/compare.ts', '--systems', 'floor', '--scenarios', 'distinct', '--clients', '2', '--duration', '0.5',
      '--warmup', '0', '--repeat', '3', '--json', json, '--data-parent', dir], { cwd: repoRoot, timeout: 90_000 });
    expect(stdout).toContain('each row run 3 times back to back: the run with the median srv µs/pair is shown');
    const out = JSON.parse(readFileSync(json, 'utf8')) as { options: { repeat: number }; rows: (Row & { repeats: { serverCpuPerPairUs: number; errors: number }[] })[] };
    expect(out.options.repeat).toBe(3);
    expect(out.rows).toHaveLength(1);
    const [row] = out.rows;
    expect(row!.repeats).toHaveLength(3);
    const sorted = row!.repeats.map((r) => r.serverCpuPerPairUs).sort((a, b) => a - b);
    expect(row!.serverCpuPerPairUs).toBe(sorted[1]);
    expect(row!.errors).toBe(0);
  } finally {
    rmSync(dir, { recursive: true, force: true });
  }
}, 120_000);

test('bench:compare refuses a batch larger than a transaction holds, and an unknown scenario, before starting anything', async () => {
  const refused = (args: string[]) => run('npx', ['tsx', 'bench/compare.ts', ...args], { cwd: repoRoot, timeout: 60_000 }).then(
    () => { throw new Error('accepted'); },
    (err: { code: number; stderr: string }) => err,
  );
  const big = await refused(['--batch', '65']);
  expect(big.code).toBe(2);
  expect(big.stderr).toContain('--batch: "65" is not a whole number from 1 to 64');
  const unknown = await refused(['--scenarios', 'txn,bulk']);
  expect(unknown.code).toBe(2);
  expect(unknown.stderr).toContain('--scenarios: "bulk" is not one of distinct, shared, txn');
  const warmup = await refused(['--warmup', 'soon']);
  expect(warmup.code).toBe(2);
  expect(warmup.stderr).toContain('--warmup: "soon" is not a number of seconds');
  const repeat = await refused(['--repeat', '10']);
  expect(repeat.code).toBe(2);
  expect(repeat.stderr).toContain('--repeat: "10" is not a whole number from 1 to 9');
}, 120_000);
