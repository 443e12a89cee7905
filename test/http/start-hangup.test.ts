// Goal: SIGHUP never stops the agent, also while it starts. A SIGHUP that comes before the agent has read its
// config file is held and needs nothing (what the agent then reads is in effect); one that comes after the
// read and before the agent is ready makes one reload once it is. Each start is held at a known point by a
// named pipe the agent reads from: the config file (before the read) or the data dir's node-id (after it).
import { execFileSync, spawn, type ChildProcess } from 'node:child_process';
import { randomUUID } from 'node:crypto';
import { closeSync, constants, mkdirSync, mkdtempSync, openSync, readFileSync, rmSync, writeFileSync, writeSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, describe, expect, test } from 'vitest';
import { agentNode, client, repoRoot, tsxLoader } from '../support/agent.ts';

const dirs: string[] = [];
const procs: ChildProcess[] = [];
afterAll(() => {
  // Only the agents this file started, by their handles.
  for (const p of procs) if (p.exitCode === null && p.signalCode === null) p.kill('SIGKILL');
  for (const d of dirs) rmSync(d, { recursive: true, force: true });
});

function scratch(): string {
  const dir = mkdtempSync(join(tmpdir(), 'roster-hup-'));
  dirs.push(dir);
  return dir;
}

/** Starts an agent from the sources; its output is collected. */
function launch(args: string[]) {
  const proc = spawn(agentNode, ['--import', tsxLoader, join(repoRoot, 'src/main.ts'), '--http-port', '0', '--grpc-port', '0', '--node-name', 'hup', ...args], {
    cwd: repoRoot, stdio: ['ignore', 'pipe', 'pipe'],
  });
  procs.push(proc);
  let out = '';
  proc.stdout!.on('data', (d: Buffer) => { out += d.toString(); });
  proc.stderr!.on('data', (d: Buffer) => { out += d.toString(); });
  const exited = new Promise<number | string | null>((r) => proc.once('exit', (code, signal) => r(code ?? signal)));
  return { proc, exited, output: () => out };
}

/** Waits for `check`, bounded; `what` names it in the failure. */
async function until(what: string, check: () => boolean | Promise<boolean>, timeoutMs = 15_000): Promise<void> {
  const deadline = Date.now() + timeoutMs;
  while (!(await check())) {
    if (Date.now() > deadline) throw new Error(`timed out waiting for ${what}`);
    await new Promise((r) => setTimeout(r, 10));
  }
}

/** Whether the process has a handler for SIGHUP (bit 0 of SigCgt): without one, a SIGHUP ends it. */
function catchesHangup(pid: number): boolean {
  const mask = /^SigCgt:\s*([0-9a-f]+)$/m.exec(readFileSync(`/proc/${pid}/status`, 'utf8'))?.[1];
  return mask !== undefined && (parseInt(mask.slice(-1), 16) & 1) === 1;
}

/** Opens a named pipe for writing once a reader has it open (a non-blocking open fails with ENXIO until then). */
async function openWhenRead(fifo: string): Promise<number> {
  let fd: number | undefined;
  await until(`a reader of ${fifo}`, () => {
    try {
      fd = openSync(fifo, constants.O_WRONLY | constants.O_NONBLOCK);
      return true;
    } catch (err) {
      if ((err as NodeJS.ErrnoException).code !== 'ENXIO') throw err;
      return false;
    }
  });
  return fd!;
}

const readyPattern = /roster listening http=(http:\/\/[^\s"]+)/;

describe('SIGHUP during the start', () => {
  test('before the config file is read: held, the agent starts, and the configuration it read is in effect', async () => {
    const dir = scratch();
    const config = join(dir, 'agent.json');
    execFileSync('mkfifo', [config]);
    const agent = launch(['--data-dir', join(dir, 'data'), '--config-file', config]);
    // The agent waits on the pipe to read its configuration: SIGHUP must already be handled.
    await until('a SIGHUP handler', () => catchesHangup(agent.proc.pid!), 10_000);
    agent.proc.kill('SIGHUP');
    agent.proc.kill('SIGHUP');
    const fd = await openWhenRead(config);
    writeSync(fd, JSON.stringify({ datacenter: 'held' }));
    closeSync(fd);
    await until('the ready line', () => readyPattern.test(agent.output()) || agent.proc.exitCode !== null || agent.proc.signalCode !== null);
    expect(agent.proc.signalCode).toBeNull();
    const url = readyPattern.exec(agent.output())![1]!;
    expect((await client({ url }).get('/v1/agent/self')).json().Config.Datacenter).toBe('held');
    const said = agent.output().split('\n').filter((l) => l.includes('SIGHUP came while the agent started'));
    expect(said).toHaveLength(1);
    expect(JSON.parse(said[0]!).msg).toBe('SIGHUP came while the agent started, before it read its configuration: the configuration read is in effect');
    // No reload: it would read the pipe again.
    expect(agent.output()).not.toContain('reloading the configuration');
    agent.proc.kill('SIGTERM');
    expect(await agent.exited).toBe(0);
  });

  test('after the config file was read and before the agent is ready: one reload once it is', async () => {
    const dir = scratch();
    const data = join(dir, 'data');
    mkdirSync(data);
    // The agent reads its node ID after its configuration: a pipe there holds it between the two.
    execFileSync('mkfifo', [join(data, 'node-id')]);
    const config = join(dir, 'agent.json');
    writeFileSync(config, '{}');
    const agent = launch(['--data-dir', data, '--config-file', config]);
    const fd = await openWhenRead(join(data, 'node-id'));
    // The file changes after the agent read it; the supervisor says so with SIGHUP (twice: one reload).
    writeFileSync(config, JSON.stringify({ service: { name: 'late', id: 'late-1', port: 8080 } }));
    agent.proc.kill('SIGHUP');
    agent.proc.kill('SIGHUP');
    writeSync(fd, `${randomUUID()}\n`);
    closeSync(fd);
    await until('the ready line', () => readyPattern.test(agent.output()) || agent.proc.exitCode !== null || agent.proc.signalCode !== null);
    expect(agent.proc.signalCode).toBeNull();
    const url = readyPattern.exec(agent.output())![1]!;
    // The reload runs after the ready line: the file's service comes with it.
    await until('the service of the changed file', async () => 'late-1' in (await client({ url }).get('/v1/agent/services')).json());
    const reloads = agent.output().split('\n').filter((l) => l.includes('"msg":"reloading the configuration'));
    expect(reloads.map((l) => JSON.parse(l).msg)).toEqual(['reloading the configuration: SIGHUP came while the agent started, after it had read its configuration']);
    agent.proc.kill('SIGTERM');
    expect(await agent.exited).toBe(0);
  });
});
