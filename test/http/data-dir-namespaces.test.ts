// Goal: one agent per data dir also when the agents cannot see each other's processes — two containers
// sharing a volume, each running the agent as pid 1 in its own PID namespace. The second is refused
// (exit 2, the data dir in use) while the first runs, and takes the data dir over once the first has
// stopped; nothing written through the first is lost. Needs `unshare` and root (skipped without them).
import { spawn, spawnSync, type ChildProcess } from 'node:child_process';
import { once } from 'node:events';
import { rmSync } from 'node:fs';
import { join } from 'node:path';
import { afterAll, describe, expect, test } from 'vitest';
import { call, repoRoot, tempDataDir, tsxLoader } from '../support/agent.ts';

const canUnshare = spawnSync('unshare', ['-p', '-f', '--mount-proc', 'true']).status === 0;
const started: ChildProcess[] = [];
const dataDir = tempDataDir();

/** The agent as pid 1 of a PID namespace of its own (with its own /proc), as a container runs it. */
function inNamespace(name: string): { proc: ChildProcess; output: () => string; ready: Promise<string> } {
  const proc = spawn('unshare', ['-p', '-f', '--mount-proc', process.execPath, '--import', tsxLoader, join(repoRoot, 'src/main.ts'),
    '--data-dir', dataDir, '--node-name', name, '--http-port', '0', '--grpc-port', '0'], { cwd: repoRoot, stdio: ['ignore', 'pipe', 'pipe'] });
  started.push(proc);
  let out = '';
  const ready = new Promise<string>((resolve, reject) => {
    const onData = (d: Buffer) => {
      out += d.toString();
      const m = /roster listening http=(http:\/\/[^\s"]+)/.exec(out);
      if (m) resolve(m[1]!);
    };
    proc.stdout!.on('data', onData);
    proc.stderr!.on('data', onData);
    proc.once('exit', () => reject(new Error(`exited before it was ready:\n${out.slice(-2000)}`)));
  });
  ready.catch(() => {});
  return { proc, output: () => out, ready };
}

/** SIGTERM to the agent (unshare's child, pid 1 inside), then unshare's exit, which follows the agent's. */
async function stop(proc: ChildProcess): Promise<void> {
  const agentPid = Number(spawnSync('pgrep', ['-P', String(proc.pid)], { encoding: 'utf8' }).stdout.trim());
  if (proc.exitCode !== null || proc.signalCode !== null) return;
  const exited = once(proc, 'exit');
  // No child found (the agent already gone) reads as 0, and a signal to pid 0 would reach this whole
  // process group, the test runner included: unshare itself is ended instead.
  if (Number.isInteger(agentPid) && agentPid > 0) process.kill(agentPid, 'SIGTERM');
  else proc.kill('SIGTERM');
  await exited;
}

afterAll(() => {
  for (const p of started) {
    if (p.exitCode !== null) continue;
    const child = Number(spawnSync('pgrep', ['-P', String(p.pid)], { encoding: 'utf8' }).stdout.trim());
    if (child > 0) process.kill(child, 'SIGKILL');
    p.kill('SIGKILL');
  }
  rmSync(dataDir, { recursive: true, force: true });
});

describe.skipIf(!canUnshare)('agents in separate PID namespaces on one data dir', () => {
  test('the second is refused while the first runs, and starts once it has stopped', async () => {
    const first = inNamespace('first');
    const url = await first.ready;
    for (let i = 0; i < 20; i++) expect((await call(url, 'PUT', `/v1/kv/ns/${i}`, `v${i}`)).status).toBe(200);

    const second = inNamespace('second');
    const [code] = await once(second.proc, 'exit');
    expect(code).toBe(2);
    expect(second.output()).toMatch(/in use by another roster agent \(pid 1 on /);
    // The first serves on, its data dir whole.
    expect((await call(url, 'GET', '/v1/kv/ns/19?raw')).text).toBe('v19');

    await stop(first.proc);
    const third = inNamespace('first');
    const again = await third.ready;
    expect((await call(again, 'GET', '/v1/kv/ns/?keys')).json()).toHaveLength(20);
    await stop(third.proc);
  }, 60_000);
});
