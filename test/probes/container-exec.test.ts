// Goal: the container exec probe drives the Docker Engine API (create exec, start, inspect) on a fake engine over a unix socket, maps exit codes and engine errors to Consul's texts, and names the address when no engine answers.
import type { ChildProcess } from 'node:child_process';
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, beforeAll, beforeEach, expect, test } from 'vitest';
import { containerExecProbe } from '../../src/probes/index.ts';
import { fakeDockerEngine, type EngineCall } from '../support/fake-docker.ts';
import { closedPort, listen } from './servers.ts';

const dir = mkdtempSync(join(tmpdir(), 'roster-engine-'));
const socketPath = join(dir, 'docker.sock');
const dockerHost = `unix://${socketPath}`;
const seen: EngineCall[] = [];
const children = new Set<ChildProcess>();
const engine = fakeDockerEngine(seen, children);
const tcpEngine = fakeDockerEngine(seen, children);
let tcpPort = 0;

beforeAll(async () => {
  await new Promise<void>((resolve) => engine.listen(socketPath, resolve));
  tcpPort = (await listen(tcpEngine)).port;
});
beforeEach(() => {
  seen.length = 0;
});
afterAll(async () => {
  for (const child of children) child.kill('SIGKILL');
  engine.closeAllConnections();
  await new Promise((resolve) => engine.close(resolve));
  tcpEngine.closeAllConnections();
  await new Promise((resolve) => tcpEngine.close(resolve));
  rmSync(dir, { recursive: true, force: true });
});

const exec = (args: string[], extra: Partial<Parameters<typeof containerExecProbe>[0]> = {}) =>
  containerExecProbe({ containerId: 'web-1', args, dockerHost, ...extra })();

test('exit 0 → passing with the output, through the three Engine API calls', async () => {
  expect(await exec(['/bin/sh', '-c', 'echo ready; echo warm >&2'])).toEqual({ status: 'passing', output: 'ready\nwarm\n' });
  expect(seen).toEqual([
    {
      method: 'POST',
      path: '/containers/web-1/exec',
      body: { AttachStdin: false, AttachStdout: true, AttachStderr: true, Tty: false, Cmd: ['/bin/sh', '-c', 'echo ready; echo warm >&2'] },
    },
    { method: 'POST', path: '/exec/exec1/start', body: { Detach: false, Tty: true } },
    { method: 'GET', path: '/exec/exec1/json', body: undefined },
  ]);
});

test('exit 1 → warning, exit 2 → critical', async () => {
  expect(await exec(['/bin/sh', '-c', 'echo slow; exit 1'])).toEqual({ status: 'warning', output: 'slow\n' });
  expect(await exec(['/bin/sh', '-c', 'echo down; exit 2'])).toEqual({ status: 'critical', output: 'down\n' });
});

test('no args runs the script through the shell with -c', async () => {
  const result = await containerExecProbe({ containerId: 'web-1', script: 'echo "$0 says hi"', shell: '/bin/sh', dockerHost })();
  expect(result).toEqual({ status: 'passing', output: '/bin/sh says hi\n' });
  expect((seen[0]!.body as { Cmd: string[] }).Cmd).toEqual(['/bin/sh', '-c', 'echo "$0 says hi"']);
});

test('long output keeps the last bytes behind the Captured prefix', async () => {
  const result = await exec(['/bin/sh', '-c', "i=0; while [ $i -lt 1000 ]; do printf '%09d\\n' $i; i=$((i+1)); done"], { outputBytesMax: 20 });
  expect(result).toEqual({ status: 'passing', output: 'Captured 20 of 10000 bytes\n...\n000000998\n000000999\n' });
});

test('an unknown container (404) and a paused one (409) → critical with Consul texts', async () => {
  expect(await containerExecProbe({ containerId: 'missing', args: ['true'], dockerHost })()).toEqual({
    status: 'critical',
    output: 'create exec failed for unknown container missing',
  });
  expect(await containerExecProbe({ containerId: 'paused', args: ['true'], dockerHost })()).toEqual({
    status: 'critical',
    output: 'create exec failed since container paused is paused or stopped',
  });
});

test('a timeout gives up on the engine with the Timed out text', async () => {
  expect(await exec(['/bin/sleep', '5'], { timeoutMs: 300 })).toEqual({ status: 'critical', output: 'Timed out (300ms) running check' });
});

test('no engine at the address → critical naming the address', async () => {
  const nowhere = join(dir, 'nothing.sock');
  expect(await containerExecProbe({ containerId: 'web-1', args: ['true'], dockerHost: `unix://${nowhere}` })()).toEqual({
    status: 'critical',
    output: `cannot reach the container engine at unix://${nowhere}: connect ENOENT ${nowhere}`,
  });
});

test('an engine on tcp://host:port', async () => {
  expect(await exec(['/bin/sh', '-c', 'echo over tcp'], { dockerHost: `tcp://127.0.0.1:${tcpPort}` })).toEqual({ status: 'passing', output: 'over tcp\n' });
  const closed = await closedPort();
  expect((await exec(['true'], { dockerHost: `tcp://127.0.0.1:${closed}` })).output).toBe(
    `cannot reach the container engine at tcp://127.0.0.1:${closed}: connect ECONNREFUSED 127.0.0.1:${closed}`,
  );
});

test('an address that is neither unix:// nor tcp:// is refused', async () => {
  expect((await containerExecProbe({ containerId: 'web-1', args: ['true'], dockerHost: 'npipe:////./pipe/docker_engine' })()).output).toBe(
    'unsupported container engine address npipe:////./pipe/docker_engine: give unix:///path or tcp://host:port',
  );
});
