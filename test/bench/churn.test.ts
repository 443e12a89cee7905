// Goal: `npm run bench:churn`, the evidence that an agent's memory stays flat under churn, really drives a
// started agent through every kind of round (sessions, locks, services and checks, blocking queries,
// transactions, filtered reads, stream subscriptions, gRPC Watch calls), prints its readings and a verdict,
// and writes them; its options refuse bad values.
import { execFile } from 'node:child_process';
import { mkdtempSync, readFileSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join, resolve } from 'node:path';
import { promisify } from 'node:util';
import { afterAll, expect, test } from 'vitest';

const repoRoot = resolve(import.meta.dirname, '../..');
const run = promisify(execFile);
const dir = mkdtempSync(join(tmpdir(), 'roster-churn-'));
afterAll(() => rmSync(dir, { recursive: true, force: true }));

test('a short churn run prints its readings and a verdict, and writes them as JSON', async () => {
  const file = join(dir, 'churn.json');
  // The verdict of so short a run says nothing about leaks; whether it is flat or not, the bench reports one.
  const { stdout } = await run('npx', ['tsx', 'bench/churn.ts', '--seconds', '8', '--sample', '1', '--json', file],
    { cwd: repoRoot, timeout: 120_000 }).catch((err: { stdout?: string }) => ({ stdout: err.stdout ?? '' }));
  expect(stdout).toContain('roster churn bench: 8 s, a reading every 1 s');
  expect(stdout).toMatch(/ +\d+ s +\d+ rounds {2}RSS [\d.]+ MiB {2}heap [\d.]+ MiB {2}fds \d+ {2}state \d+ B\n/);
  expect(stdout).toMatch(/\d+ rounds in 8 s; resident memory: peak [\d.]+ MiB in the first half, [\d.]+ MiB in the second: (flat|GROWING)/);
  const written = JSON.parse(readFileSync(file, 'utf8')) as { rounds: number; samples: Array<{ rssMiB: number; fds: number }> };
  expect(written.rounds).toBeGreaterThan(10);
  expect(written.samples.length).toBeGreaterThanOrEqual(4);
  for (const s of written.samples) expect(s.rssMiB).toBeGreaterThan(10);
}, 150_000);

test('the options refuse what they cannot run, naming the option (exit 2)', async () => {
  for (const [args, message] of [
    [['--seconds', '0'], '--seconds: "0" is not a number of seconds ((0, 86400])'],
    [['--sample', '0.5'], '--sample: "0.5" is not a number of seconds ([1, 600])'],
    [['--bogus'], "Unknown option '--bogus'"],
  ] as const) {
    const failed = await run('npx', ['tsx', 'bench/churn.ts', ...args], { cwd: repoRoot }).then(() => undefined, (err: { code?: number; stderr?: string }) => err);
    expect(failed?.code, args.join(' ')).toBe(2);
    expect(failed?.stderr).toContain(message);
  }
});
