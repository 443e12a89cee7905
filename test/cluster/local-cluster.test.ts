// Goal: `npm run cluster` as a user runs it — three nodes ready with one line each, a write on one read
// on another, and SIGTERM stopping everything it started (no node answers afterwards).
import { spawn, type ChildProcess } from 'node:child_process';
import { expect, test } from 'vitest';
import { canBind } from '../../cluster/dev/nats-launcher.ts';
import { client, repoRoot, sleep, tsxLoader } from '../support/agent.ts';

/** The nine ports the nodes take from base (base+0…2, base+10…12, base+20…22) can all be bound now. */
async function allFree(base: number): Promise<boolean> {
  const ports = [0, 10, 20].flatMap((o) => [0, 1, 2].map((k) => base + o + k));
  return (await Promise.all(ports.map(canBind))).every(Boolean);
}

/**
 * Starts `npm run cluster`'s script on a random port base and waits for its closing `nats` line. The base
 * lies below the range other tests draw free ports from (20,000+) and below Linux's ephemeral range; a
 * start that still lost a port to another process ("address already in use") is tried again on another base.
 */
async function startLocalCluster(): Promise<{ base: number; proc: ChildProcess; out: () => string; exited: Promise<number | null> }> {
  for (let attempt = 1; ; attempt++) {
    let base = 10_000 + Math.floor(Math.random() * 1_000) * 10;
    while (!(await allFree(base))) base = 10_000 + Math.floor(Math.random() * 1_000) * 10;
    const proc = spawn(process.execPath, ['--import', tsxLoader, 'cluster/dev/local.ts', '--http-port-base', String(base)], { cwd: repoRoot, stdio: ['ignore', 'pipe', 'pipe'] });
    let out = '';
    proc.stdout!.on('data', (d: Buffer) => { out += d.toString(); });
    proc.stderr!.on('data', (d: Buffer) => { out += d.toString(); });
    const exited = new Promise<number | null>((res) => proc.once('exit', (code) => res(code)));
    const deadline = Date.now() + 90_000;
    while (!/^nats /m.test(out) && proc.exitCode === null && Date.now() < deadline) await sleep(200);
    if (/^nats /m.test(out)) return { base, proc, out: () => out, exited };
    if (proc.exitCode === null) proc.kill('SIGTERM');
    await exited;
    if (attempt >= 3 || !/EADDRINUSE|address already in use/.test(out)) throw new Error(`cluster not ready:\n${out}`);
  }
}

test('npm run cluster starts three nodes, serves one registry, and stops on SIGTERM', async () => {
  const { base, proc, out: output, exited } = await startLocalCluster();
  try {
    const out = output();
    const nodes = [...out.matchAll(/^node (node\d) http=(\S+) grpc=(\S+)$/gm)].map((m) => ({ name: m[1], url: m[2]!, grpc: m[3] }));
    expect(nodes.map((n) => n.name)).toEqual(['node1', 'node2', 'node3']);
    expect(nodes.map((n) => n.url)).toEqual([0, 10, 20].map((o) => `http://127.0.0.1:${base + o}`));
    expect((await client(nodes[0]!).put('/v1/kv/local/a', 'v')).text).toBe('true');
    const read = await client(nodes[2]!).get('/v1/kv/local/a?raw&consistent');
    expect([read.status, read.text]).toEqual([200, 'v']);
  } finally {
    proc.kill('SIGTERM');
  }
  expect(await exited).toBe(0);
  await expect(fetch(`http://127.0.0.1:${base}/v1/status/leader`)).rejects.toThrow();
}, 150_000);
