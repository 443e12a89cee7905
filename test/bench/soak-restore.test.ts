// Goal: `npm run bench:soak`'s restore mode, the evidence for the restore time of a large snapshot, really
// loads a started agent, saves its snapshot and restores it into a fresh agent and a fresh 3-node cluster,
// reading every key count and a sample of values back on each node; its own options refuse bad values.
import { execFile } from 'node:child_process';
import { resolve } from 'node:path';
import { promisify } from 'node:util';
import { expect, test } from 'vitest';

const repoRoot = resolve(import.meta.dirname, '../..');
const run = promisify(execFile);

test('npm run bench:soak --modes restore saves a loaded agent and restores it into a fresh agent and a fresh cluster, verified', async () => {
  const { stdout } = await run('npx', ['tsx', 'bench/soak.ts', '--modes', 'restore', '--restore-keys', '3000', '--seconds', '120'],
    { cwd: repoRoot, timeout: 240_000 });
  // 3,000 keys are 47 transactions of up to 64 sets: all of them written, one snapshot holds them.
  expect(stdout).toMatch(/load {6}3000 keys in transactions of 64/);
  expect(stdout).toMatch(/save {6}GET \/v1\/snapshot: [\d.]+ MiB \(index \d+\) in [\d.]+ s/);
  expect(stdout).toMatch(/restore {3}PUT \/v1\/snapshot answered \{"Index":\d+\} in [\d.]+ s; consistent read of the last key answered after [\d.]+ s\n/);
  expect(stdout).toMatch(/memory {4}agent: VmRSS [\d.]+ MiB before, [\d.]+ MiB after; peak VmHWM [\d.]+ MiB/);
  for (const node of [1, 2, 3]) expect(stdout).toMatch(new RegExp(`memory {4}node ${node}: VmRSS [\\d.]+ MiB before`));
  expect(stdout).toContain('verify    3000 keys listed and 1002 sampled values right on the agent');
  expect(stdout).toContain('verify    3000 keys listed and 1002 sampled values right on each of the 3 nodes');
  expect(stdout).toMatch(/restore into one agent: 3000 keys, answered in [\d.]+ s, last key read after [\d.]+ s, peak VmHWM [\d.]+ MiB: verified/);
  expect(stdout).toMatch(/restore into a 3-node cluster: 3000 keys, .*: verified/);
}, 300_000);

test('the restore options refuse what they cannot run, naming the option (exit 2)', async () => {
  for (const [args, message] of [
    [['--restore-keys', '0'], '--restore-keys: "0" is not a whole number from 1 to'],
    [['--restore-into', 'disk'], '--restore-into: "disk" is not one of single, cluster'],
    [['--modes', 'restores'], '--modes: "restores" is not one of single, cluster, restore'],
  ] as const) {
    const failed = await run('npx', ['tsx', 'bench/soak.ts', '--modes', 'restore', ...args], { cwd: repoRoot, timeout: 60_000 })
      .then(() => undefined, (err: { code: number; stderr: string }) => err);
    expect(failed?.code).toBe(2);
    expect(failed?.stderr).toContain(message);
  }
}, 120_000);
