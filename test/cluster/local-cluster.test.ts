// Goal: `npm run cluster` as a user runs it — three nodes ready with one line each, a write on one read
// on another, and SIGTERM stopping everything it started (no node answers afterwards).
import { spawn } from 'node:child_process';
import { expect, test } from 'vitest';
import { client, repoRoot, sleep, tsxLoader } from '../support/agent.ts';

test('npm run cluster starts three nodes, serves one registry, and stops on SIGTERM', async () => {
  // Ports base … base+22, below Linux's ephemeral range (32768+) so no port picked "free" elsewhere lands here.
  const base = 20_000 + Math.floor(Math.random() * 1_100) * 10;
  const proc = spawn(process.execPath, ['--import', tsxLoader, 'cluster/dev/local.ts', '--http-port-base', String(base)], { cwd: repoRoot, stdio: ['ignore', 'pipe', 'pipe'] });
  let out = '';
  proc.stdout.on('data', (d: Buffer) => { out += d.toString(); });
  proc.stderr.on('data', (d: Buffer) => { out += d.toString(); });
  const exited = new Promise<number | null>((res) => proc.once('exit', (code) => res(code)));
  try {
    const deadline = Date.now() + 90_000;
    while (!/^nats /m.test(out)) {
      if (Date.now() > deadline || proc.exitCode !== null) throw new Error(`cluster not ready:\n${out}`);
      await sleep(200);
    }
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
