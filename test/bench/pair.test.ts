// Goal: `npm run bench:pair`, the before/after of a change on a machine whose speed drifts, really runs two
// started agents at once under the lock loop, reads each one's server CPU over the same window, prints the
// rounds and the ratio of this tree to the base, and writes them; its options refuse what it cannot run.
import { execFile } from 'node:child_process';
import { existsSync, mkdtempSync, readFileSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join, resolve } from 'node:path';
import { promisify } from 'node:util';
import { afterAll, expect, test } from 'vitest';

const repoRoot = resolve(import.meta.dirname, '../..');
const run = promisify(execFile);
const dir = mkdtempSync(join(tmpdir(), 'roster-pair-test-'));
afterAll(() => rmSync(dir, { recursive: true, force: true }));

interface Written {
  rounds: Array<{ first: string; base: { pairsPerS: number; serverCpuUsPerPair: number; errors: number }; this: { pairsPerS: number; serverCpuUsPerPair: number; errors: number }; cpuRatio: number }>;
  cpuRatioMedian: number;
}

test('two rounds of this tree against itself: both agents measured, the ratios printed and written', async () => {
  const file = join(dir, 'pair.json');
  // The base is this tree's own build, so no second build is made here; the ratio then only shows the noise.
  const { stdout } = await run('npx', ['tsx', 'bench/pair.ts', '--base-dir', repoRoot, '--rounds', '2', '--clients', '4',
    '--duration', '1', '--warmup', '0.5', '--json', file], { cwd: repoRoot, timeout: 180_000 });
  expect(stdout).toContain('rounds: 2; each: both agents started afresh, 4 clients each on distinct keys at once, 0.5 s warm-up, 1 s window');
  expect(stdout).toMatch(/round {2}1 {2}base +\d+ pairs\/s +[\d.]+ µs\/pair {2}p99 +[\d.]+ ms {2}\| {2}this +\d+ pairs\/s +[\d.]+ µs\/pair {2}p99 +[\d.]+ ms {2}\| {2}cpu ratio [\d.]+ {2}rate ratio [\d.]+\n/);
  expect(stdout).toMatch(/this \/ base over 2 rounds: server CPU per pair [\d.]+ \(median; [\d.]+–[\d.]+\), pairs\/s [\d.]+/);
  const written = JSON.parse(readFileSync(file, 'utf8')) as Written;
  expect(written.rounds.map((r) => r.first)).toEqual(['base', 'this']);
  for (const r of written.rounds) {
    for (const side of [r.base, r.this]) {
      expect(side.pairsPerS).toBeGreaterThan(10);
      expect(side.serverCpuUsPerPair).toBeGreaterThan(1);
      expect(side.errors).toBe(0);
    }
    expect(r.cpuRatio).toBeCloseTo(r.this.serverCpuUsPerPair / r.base.serverCpuUsPerPair, 6);
  }
  expect(written.cpuRatioMedian).toBeGreaterThan(0);
}, 240_000);

test('--base builds the commit in a temporary worktree, runs it, and removes the worktree afterwards', async () => {
  const file = join(dir, 'pair-base.json');
  const { stdout } = await run('npx', ['tsx', 'bench/pair.ts', '--base', 'HEAD', '--rounds', '1', '--clients', '2',
    '--duration', '1', '--warmup', '0.5', '--json', file], { cwd: repoRoot, timeout: 240_000 });
  const built = /against ([0-9a-f]{7}) \(built in (\S+)\)/.exec(stdout);
  expect(built, stdout).not.toBeNull();
  const head = (await run('git', ['rev-parse', '--short=7', 'HEAD'], { cwd: repoRoot })).stdout.trim();
  expect(built![1]).toBe(head);
  expect(stdout).toMatch(/round {2}1 {2}base +\d+ pairs\/s/);
  expect(existsSync(built![2]!)).toBe(false);
  expect((await run('git', ['worktree', 'list'], { cwd: repoRoot })).stdout).not.toContain(built![2]!);
  expect((JSON.parse(readFileSync(file, 'utf8')) as Written).rounds).toHaveLength(1);
}, 300_000);

test('the options refuse what they cannot run, naming the option (exit 2)', async () => {
  for (const [args, message] of [
    [[], 'give one of --base and --base-dir'],
    [['--base', 'HEAD', '--base-dir', repoRoot], 'give one of --base and --base-dir'],
    [['--base', 'no-such-ref-anywhere'], '--base: "no-such-ref-anywhere" names no commit of this repository'],
    [['--base-dir', dir], `--base-dir: ${join(dir, 'dist/server/src/main.js')} does not exist (run npm run build there)`],
    [['--base', 'HEAD', '--scenario', 'txn'], '--scenario: "txn" is not one of distinct, shared'],
    [['--base', 'HEAD', '--rounds', '0'], '--rounds: "0" is not a whole number from 1 to 100'],
  ] as const) {
    const failed = await run('npx', ['tsx', 'bench/pair.ts', ...args], { cwd: repoRoot }).then(() => undefined, (err: { code?: number; stderr?: string }) => err);
    expect(failed?.code, args.join(' ')).toBe(2);
    expect(failed?.stderr, args.join(' ')).toContain(message);
  }
}, 120_000);
