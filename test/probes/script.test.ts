// Goal: the script probe maps exit codes 0/1/other to passing/warning/critical, captures stdout+stderr with Consul's tail and prefix, kills the whole process tree on timeout, and reports a missing executable.
import { mkdtempSync, readFileSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, expect, test } from 'vitest';
import { scriptProbe } from '../../src/probes/index.ts';

const dir = mkdtempSync(join(tmpdir(), 'roster-script-probe-'));
afterAll(() => rmSync(dir, { recursive: true, force: true }));

const sh = (script: string, extra: Partial<Parameters<typeof scriptProbe>[0]> = {}) => scriptProbe({ args: ['/bin/sh', '-c', script], ...extra })();

test('exit 0 → passing with the output', async () => {
  expect(await sh('echo all good; exit 0')).toEqual({ status: 'passing', output: 'all good\n' });
});

test('exit 1 → warning', async () => {
  expect(await sh('echo degraded; exit 1')).toEqual({ status: 'warning', output: 'degraded\n' });
});

test('exit 2 → critical', async () => {
  expect(await sh('exit 2')).toEqual({ status: 'critical', output: '' });
});

test('stdout and stderr land in one output', async () => {
  expect(await sh('echo out; sleep 0.05; echo err >&2')).toEqual({ status: 'passing', output: 'out\nerr\n' });
});

test('args are passed without a shell', async () => {
  expect(await scriptProbe({ args: ['/bin/echo', '$HOME', 'a b'] })()).toEqual({ status: 'passing', output: '$HOME a b\n' });
});

test('env is added to the environment', async () => {
  expect((await sh('echo "$ROSTER_PROBE_VAR"', { env: { ROSTER_PROBE_VAR: 'set' } })).output).toBe('set\n');
});

test('long output keeps the last 4096 bytes behind the Captured prefix', async () => {
  const result = await sh("i=0; while [ $i -lt 1000 ]; do printf '%09d\\n' $i; i=$((i+1)); done");
  const all = Array.from({ length: 1000 }, (_, i) => `${String(i).padStart(9, '0')}\n`).join('');
  expect(result).toEqual({ status: 'passing', output: `Captured 4096 of 10000 bytes\n...\n${all.slice(-4096)}` });
});

test('a timeout kills the whole process tree and says Timed out with the output so far', async () => {
  const pidFile = join(dir, 'child.pid');
  const result = await sh(`echo started; sleep 30 & echo $! > '${pidFile}'; wait`, { timeoutMs: 500 });
  expect(result).toEqual({ status: 'critical', output: 'Timed out (500ms) running check\n\nstarted\n' });
  const child = Number(readFileSync(pidFile, 'utf8'));
  expect(await gone(child)).toBe(true);
});

test('a timeout with no output is the bare Timed out text', async () => {
  expect(await scriptProbe({ args: ['/bin/sleep', '30'], timeoutMs: 1500 })()).toEqual({ status: 'critical', output: 'Timed out (1.5s) running check' });
});

test('the caller aborting kills the script', async () => {
  const controller = new AbortController();
  const pending = scriptProbe({ args: ['/bin/sleep', '30'] })(controller.signal);
  setTimeout(() => controller.abort(), 100);
  expect(await pending).toEqual({ status: 'critical', output: 'Canceled running check' });
});

test('a missing executable → critical with Go exec error text', async () => {
  expect(await scriptProbe({ args: ['/no/such/check-binary'] })()).toEqual({
    status: 'critical',
    output: 'fork/exec /no/such/check-binary: no such file or directory',
  });
  expect(await scriptProbe({ args: ['roster-no-such-check-binary'] })()).toEqual({
    status: 'critical',
    output: 'exec: "roster-no-such-check-binary": executable file not found in $PATH',
  });
});

/** True once pid no longer runs: gone, or a zombie nobody reaped (PID 1 here may not reap). Polls; no speed claim. */
async function gone(pid: number): Promise<boolean> {
  for (let attempt = 0; attempt < 100; attempt++) {
    try {
      process.kill(pid, 0);
    } catch {
      return true;
    }
    try {
      if (/^\d+ \(.*\) Z/.test(readFileSync(`/proc/${pid}/stat`, 'utf8'))) return true;
    } catch {
      return true;
    }
    await new Promise((resolve) => setTimeout(resolve, 50));
  }
  return false;
}
