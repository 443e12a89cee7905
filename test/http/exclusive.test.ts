// Goal: one agent per data dir and per port. A second agent on a data dir in use, or on an HTTP or gRPC
// port in use, stops at start with exit code 2 and a message naming what is taken (the data dir and its
// holder's pid, or the flag, address and port) while the first keeps serving; a lock left by a SIGKILLed
// agent (or naming a pid now reused by another process) does not block the next start; SIGTERM removes it.
import { spawn } from 'node:child_process';
import { writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { afterAll, describe, expect, test } from 'vitest';
import { client, repoRoot, startAgent, tempDataDir, tsxLoader, type Agent } from '../support/agent.ts';
import { parseHolder, readLock, startTicksOf } from '../../src/util/data-dir-lock.ts';

const started: Agent[] = [];
afterAll(async () => {
  for (const a of started) { await a.stop(); a.cleanup(); }
});

async function start(o: Parameters<typeof startAgent>[0] = {}): Promise<Agent> {
  const agent = await startAgent(o);
  started.push(agent);
  return agent;
}

/** Runs the agent with `args` until it exits on its own (bounded: killed after 20 s); its code and output. */
function runToExit(args: string[]): Promise<{ code: number | null; output: string }> {
  return new Promise((resolve) => {
    const proc = spawn(process.execPath, ['--import', tsxLoader, join(repoRoot, 'src/main.ts'), ...args], { cwd: repoRoot, stdio: ['ignore', 'pipe', 'pipe'] });
    let output = '';
    proc.stdout.on('data', (d: Buffer) => { output += d.toString(); });
    proc.stderr.on('data', (d: Buffer) => { output += d.toString(); });
    const timer = setTimeout(() => proc.kill('SIGKILL'), 20_000);
    proc.once('exit', (code) => { clearTimeout(timer); resolve({ code, output }); });
  });
}

const portOf = (address: string) => Number(/:(\d+)$/.exec(address)![1]);

describe('one agent per data dir', () => {
  test('a second agent on the same data dir exits 2 naming the dir and the holder; the first keeps serving', async () => {
    const a = await start();
    expect((await client(a).put('/v1/kv/one', 'a')).status).toBe(200);
    const b = await runToExit(['--http-port', '0', '--grpc-port', '0', '--data-dir', a.dataDir, '--node-name', 'node2']);
    expect(b.code).toBe(2);
    expect(b.output).toContain(`--data-dir ${a.dataDir}: in use by another roster agent (pid ${a.proc.pid}`);
    // A is untouched and still writes.
    expect((await client(a).put('/v1/kv/two', 'b')).status).toBe(200);
    expect((await client(a).get('/v1/kv/one?raw')).text).toBe('a');
  });

  test('a SIGKILLed agent leaves a stale lock: the next agent on that dir starts and has the data', async () => {
    const dataDir = tempDataDir();
    const a = await start({ dataDir });
    expect((await client(a).put('/v1/kv/kept', 'yes')).status).toBe(200);
    await a.kill9();
    expect(readLock(join(dataDir, 'LOCK'))).toBeDefined();
    const c = await start({ dataDir });
    expect((await client(c).get('/v1/kv/kept?raw')).text).toBe('yes');
    expect(parseHolder(readLock(join(dataDir, 'LOCK'))!)?.pid).toBe(c.proc.pid);
  });

  test('a lock naming a live pid with another start time (pid reused) is stale too', async () => {
    const dataDir = tempDataDir();
    // This test process is alive, but did not write the lock: its start time differs.
    writeFileSync(join(dataDir, 'LOCK'), JSON.stringify({ pid: process.pid, startTicks: (startTicksOf(process.pid) ?? 0) + 1 }));
    const a = await start({ dataDir });
    expect((await client(a).get('/v1/status/leader')).status).toBe(200);
  });

  test('SIGTERM removes the lock', async () => {
    const dataDir = tempDataDir();
    const a = await startAgent({ dataDir });
    expect(readLock(join(dataDir, 'LOCK'))).toBeDefined();
    expect(await a.stop()).toBe(0);
    expect(readLock(join(dataDir, 'LOCK'))).toBeUndefined();
    a.cleanup();
  });
});

describe('one agent per port', () => {
  test('an HTTP port in use stops the start: exit 2 naming the flag and the address; the first keeps serving', async () => {
    const a = await start();
    const port = portOf(a.url);
    const b = await runToExit(['--http-port', String(port), '--grpc-port', '0', '--data-dir', tempDataDir(), '--node-name', 'node2']);
    expect(b.code).toBe(2);
    expect(b.output).toContain(`--http-port ${port}: address 127.0.0.1:${port} is already in use`);
    // Every request still reaches A (nothing shares its port): its own data, many times over.
    await client(a).put('/v1/kv/owner', 'a');
    for (let k = 0; k < 20; k++) expect((await client(a).get('/v1/kv/owner?raw')).text).toBe('a');
  });

  test('a gRPC port in use stops the start the same way', async () => {
    const a = await start();
    const port = portOf(a.grpc);
    const b = await runToExit(['--http-port', '0', '--grpc-port', String(port), '--data-dir', tempDataDir(), '--node-name', 'node2']);
    expect(b.code).toBe(2);
    expect(b.output).toContain(`--grpc-port ${port}: address 127.0.0.1:${port} is already in use`);
  });

  test('port 0 still picks a free port for each agent', async () => {
    const [a, b] = [await start(), await start()];
    expect(portOf(a.url)).not.toBe(portOf(b.url));
    expect(portOf(a.grpc)).not.toBe(portOf(b.grpc));
  });
});
