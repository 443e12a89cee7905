// Goal: `npm run bench:catalog` really registers its services on a started agent and prints each row of
// figures (registrations per quarter with the agent's CPU per registration, TTL passes, health queries,
// the restart), finding every service again after the restart; its options refuse bad values.
import { execFile } from 'node:child_process';
import { resolve } from 'node:path';
import { promisify } from 'node:util';
import { expect, test } from 'vitest';

const repoRoot = resolve(import.meta.dirname, '../..');
const run = promisify(execFile);

test('a short run prints every row and finds all its services after the restart', async () => {
  const { stdout } = await run('npx', ['tsx', 'bench/catalog.ts', '--services', '400', '--clients', '4'], { cwd: repoRoot, timeout: 120_000 });
  expect(stdout).toContain('roster catalog bench: 400 services with a TTL check each, 4 clients, 100 service names');
  for (const quarter of ['1–100', '101–200', '201–300', '301–400']) {
    expect(stdout).toMatch(new RegExp(`register ${quarter} +\\d+/s, \\d+ µs of agent CPU each`));
  }
  expect(stdout).toMatch(/TTL pass, one at a time \(2000\) +\d+\/s, \d+ µs of agent CPU each/);
  expect(stdout).toMatch(/GET \/v1\/health\/service\/<name> \(4 instances\) +[\d.]+ ms each/);
  expect(stdout).toMatch(/restart: SIGTERM, then start to ready +[\d.]+ s/);
}, 150_000);

test('the options refuse what they cannot run, naming the option (exit 2)', async () => {
  for (const [args, message] of [
    [['--services', '10'], '--services: "10" is not a whole number from 100 to 200000'],
    [['--clients', '0'], '--clients: "0" is not a whole number from 1 to 256'],
    [['--bogus'], "Unknown option '--bogus'"],
  ] as const) {
    const failed = await run('npx', ['tsx', 'bench/catalog.ts', ...args], { cwd: repoRoot }).then(() => undefined, (err: { code?: number; stderr?: string }) => err);
    expect(failed?.code, args.join(' ')).toBe(2);
    expect(failed?.stderr).toContain(message);
  }
}, 60_000);
