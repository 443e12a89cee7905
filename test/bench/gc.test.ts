// Goal: `npm run bench:gc` really loads a started agent run with V8's GC trace, reads every collection from
// it, and prints per slice the agent's CPU per pair and its scavenges (count, kept, promoted, pause) and full
// collections, then writes them; its options refuse what it cannot run.
import { execFile } from 'node:child_process';
import { mkdtempSync, readFileSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join, resolve } from 'node:path';
import { promisify } from 'node:util';
import { afterAll, expect, test } from 'vitest';

const repoRoot = resolve(import.meta.dirname, '../..');
const run = promisify(execFile);
const dir = mkdtempSync(join(tmpdir(), 'roster-gc-bench-test-'));
afterAll(() => rmSync(dir, { recursive: true, force: true }));

interface Slice { fromS: number; untilS: number; pairs: number; serverCpuUsPerPair: number; scavenges: number; promotedKbMedian: number; fullCollections: number }

test('two slices of load: CPU per pair and the collections of each slice, printed and written', async () => {
  const file = join(dir, 'gc.json');
  const { stdout } = await run('npx', ['tsx', 'bench/gc.ts', '--duration', '4', '--slice', '2', '--clients', '8', '--json', file], { cwd: repoRoot, timeout: 120_000 });
  expect(stdout).toContain('load: 8 clients of the lock loop on distinct keys for 4 s from the start; one node; the agents run with --trace-gc-nvp');
  expect(stdout).toMatch(/slice +pairs\/s +µs\/pair +scavenges +kept KB +promoted KB +pause ms +full +pause ms\/s\n/);
  expect(stdout).toMatch(/\n +0–2 +s +\d+ +[\d.]+ +\d+ /);
  expect(stdout).toMatch(/(first full collection under the load at [\d.]+ s|no full collection under the load)/);
  const written = JSON.parse(readFileSync(file, 'utf8')) as { slices: Slice[] };
  expect(written.slices).toHaveLength(2);
  for (const s of written.slices) {
    expect(s.pairs).toBeGreaterThan(10);
    expect(s.serverCpuUsPerPair).toBeGreaterThan(1);
    // Two seconds of lock load allocate far more than a young generation holds: the trace was read.
    expect(s.scavenges).toBeGreaterThan(0);
    expect(s.promotedKbMedian).toBeGreaterThanOrEqual(0);
  }
  expect(written.slices[1]!.fromS).toBeCloseTo(written.slices[0]!.untilS, 6);
}, 150_000);

test('--cluster: three nodes over three nats-servers, the collections of all three read', async () => {
  const file = join(dir, 'gc-cluster.json');
  const { stdout } = await run('npx', ['tsx', 'bench/gc.ts', '--cluster', '--duration', '3', '--slice', '3', '--clients', '6', '--json', file], { cwd: repoRoot, timeout: 150_000 });
  expect(stdout).toContain('three nodes over three nats-servers');
  const written = JSON.parse(readFileSync(file, 'utf8')) as { slices: Slice[] };
  expect(written.slices).toHaveLength(1);
  expect(written.slices[0]!.pairs).toBeGreaterThan(10);
  // Every node applies every entry: three agents' scavenges at least, in three seconds of load.
  expect(written.slices[0]!.scavenges).toBeGreaterThanOrEqual(3);
}, 180_000);

test('the options refuse what they cannot run, naming the option (exit 2)', async () => {
  for (const [args, message] of [
    [['--slice', '10', '--duration', '5'], '--slice: 10 s is longer than --duration (5 s)'],
    [['--clients', '0'], '--clients: "0" is not a whole number from 1 to 1024'],
    [['--duration', 'soon'], '--duration: "soon" is not a number of seconds'],
    [['--what'], "Unknown option '--what'"],
  ] as const) {
    const err = await run('npx', ['tsx', 'bench/gc.ts', ...args], { cwd: repoRoot, timeout: 60_000 }).then(() => undefined, (e: { code: number; stderr: string }) => e);
    expect(err, args.join(' ')).toBeDefined();
    expect(err!.code).toBe(2);
    expect(err!.stderr).toContain(message);
  }
}, 120_000);
