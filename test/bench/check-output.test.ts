// Goal: `npm run bench:check-output` really starts an agent per check_update_interval, probes its checks and
// prints each row: with 0s the changing outputs are written, with 5m none is in the measured span (each check
// wrote its first output when it turned passing); its options refuse bad values.
import { execFile } from 'node:child_process';
import { resolve } from 'node:path';
import { promisify } from 'node:util';
import { expect, test } from 'vitest';

const repoRoot = resolve(import.meta.dirname, '../..');
const run = promisify(execFile);

test('a short run prints a row per interval and their ratio', async () => {
  const { stdout } = await run('npx', ['tsx', 'bench/check-output.ts', '--checks', '10', '--seconds', '5', '--settle', '3'], { cwd: repoRoot, timeout: 120_000 });
  expect(stdout).toContain('roster check output bench: 10 HTTP checks every 1s whose output changes at each probe, 3s to settle, 5s measured');
  const entries = (interval: string) => {
    const m = new RegExp(`check_update_interval ${interval} +([\\d.]+) entries/s, [\\d.]+% of a core, \\d+ probes/s`).exec(stdout);
    expect(m, stdout).not.toBeNull();
    return Number(m![1]);
  };
  expect(entries('0s')).toBeGreaterThan(0);
  expect(entries('5m')).toBe(0);
  expect(stdout).toMatch(/0s \/ 5m +[\d.]+ entries\/s against none, [\d.]+× the CPU/);
}, 150_000);

test('the options refuse what they cannot run, naming the option (exit 2)', async () => {
  for (const [args, message] of [
    [['--checks', '1'], '--checks: "1" is not a whole number from 10 to 5000'],
    [['--seconds', '1'], '--seconds: "1" is not a number of seconds'],
    [['--intervals', ','], '--intervals: give at least one duration'],
  ] as const) {
    const failed = await run('npx', ['tsx', 'bench/check-output.ts', ...args], { cwd: repoRoot }).then(() => undefined, (err: { code?: number; stderr?: string }) => err);
    expect(failed?.code, args.join(' ')).toBe(2);
    expect(failed?.stderr).toContain(message);
  }
}, 60_000);
