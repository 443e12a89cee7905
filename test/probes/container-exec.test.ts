// Goal: the container exec probe drives the Docker Engine API (create exec, start, inspect) on a fake engine over a unix socket, maps exit codes and engine errors to Consul's texts, and names the address when no engine answers.
import { spawn, type ChildProcess } from 'node:child_process';
import { mkdtempSync, rmSync } from 'node:fs';
import http from 'node:http';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, beforeAll, beforeEach, expect, test } from 'vitest';
import { containerExecProbe } from '../../src/probes/index.ts';
import { closedPort, listen } from './servers.ts';

/** One request the fake engine received. */
interface Seen {
  method: string;
  path: string;
  body: unknown;
}

/**
 * A fake Docker Engine: containers "missing" (404) and "paused" (409); any other id runs the exec's
 * Cmd on this machine and reports its real output and exit code.
 */
function fakeEngine(seen: Seen[], children: Set<ChildProcess>): http.Server {
  const execs = new Map<string, { cmd: string[]; exitCode: number | null }>();
  return http.createServer((req, res) => {
    const chunks: Buffer[] = [];
    req.on('data', (c: Buffer) => chunks.push(c));
    req.on('end', () => {
      const text = Buffer.concat(chunks).toString();
      const body: unknown = text === '' ? undefined : JSON.parse(text);
      const path = req.url ?? '';
      seen.push({ method: req.method ?? '', path, body });
      const json = (status: number, value: unknown) => res.writeHead(status, { 'Content-Type': 'application/json' }).end(JSON.stringify(value));
      const create = /^\/containers\/([^/]+)\/exec$/.exec(path);
      if (req.method === 'POST' && create) {
        const id = decodeURIComponent(create[1]!);
        if (id === 'missing') return json(404, { message: `No such container: ${id}` });
        if (id === 'paused') return json(409, { message: `Container ${id} is paused, unpause the container before exec` });
        const execId = `exec${execs.size + 1}`;
        execs.set(execId, { cmd: (body as { Cmd: string[] }).Cmd, exitCode: null });
        return json(201, { Id: execId });
      }
      const start = /^\/exec\/([^/]+)\/start$/.exec(path);
      if (req.method === 'POST' && start) {
        const exec = execs.get(start[1]!);
        if (!exec) return json(404, { message: 'No such exec instance' });
        const [file, ...args] = exec.cmd;
        const child = spawn(file!, args, { stdio: ['ignore', 'pipe', 'pipe'] });
        children.add(child);
        res.writeHead(200, { 'Content-Type': 'application/vnd.docker.raw-stream' });
        child.stdout.on('data', (c: Buffer) => res.write(c));
        child.stderr.on('data', (c: Buffer) => res.write(c));
        child.on('close', (code) => {
          children.delete(child);
          exec.exitCode = code;
          res.end();
        });
        return;
      }
      const inspect = /^\/exec\/([^/]+)\/json$/.exec(path);
      if (req.method === 'GET' && inspect) {
        const exec = execs.get(inspect[1]!);
        if (!exec) return json(404, { message: 'No such exec instance' });
        return json(200, { ExitCode: exec.exitCode, Running: false });
      }
      json(404, { message: 'page not found' });
    });
  });
}

const dir = mkdtempSync(join(tmpdir(), 'roster-engine-'));
const socketPath = join(dir, 'docker.sock');
const dockerHost = `unix://${socketPath}`;
const seen: Seen[] = [];
const children = new Set<ChildProcess>();
const engine = fakeEngine(seen, children);
const tcpEngine = fakeEngine(seen, children);
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
