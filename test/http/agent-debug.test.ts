// Goal: the agent's profiles (GET /v1/agent/debug/cpu-profile and /heap-profile) on started agents: without
// authentication they are refused until enable_debug is set (a reload turns it on), then answer a V8 CPU
// profile and a sampling heap profile taken over `seconds`; one CPU profile at a time (503 with Retry-After);
// `seconds` outside 1..300 is refused; with authentication on, operator read is what it takes. And
// GET /v1/agent/host: the machine, the data dir's disk and the process's open files, in Consul's shape.
import { cpus, hostname } from 'node:os';
import { describe, expect, test } from 'vitest';
import { TokenAuthority, type Rule } from '../../src/auth/index.ts';
import { call, expectError, sleep } from '../support/agent.ts';
import { useConfigAgent } from '../support/config-agent.ts';

interface CpuProfile { nodes: { callFrame: { functionName: string; url: string } }[]; samples: number[]; timeDeltas: number[]; startTime: number; endTime: number }

describe('profiles without authentication', () => {
  const a = useConfigAgent('roster-debug-', {});

  test('refused until enable_debug is set; a reload sets it', async () => {
    const off = await call(a.agent.url, 'GET', '/v1/agent/debug/cpu-profile?seconds=1');
    expect(expectError(off, 403, 1004).message).toMatch(/^profiling is off: set enable_debug to true in the config file/);
    a.write({ enable_debug: true });
    expect((await call(a.agent.url, 'PUT', '/v1/agent/reload')).status).toBe(200);
  });

  test('a CPU profile over `seconds` of a working agent; a second one meanwhile is refused 503', async () => {
    const started = Date.now();
    const profile = call(a.agent.url, 'GET', '/v1/agent/debug/cpu-profile?seconds=2');
    // A second one asked for once the first has begun.
    await sleep(300);
    const second = await call(a.agent.url, 'GET', '/v1/agent/debug/cpu-profile?seconds=1');
    expectError(second, 503, 1016);
    expect(second.headers.get('retry-after')).toBe('5');
    // Work for the profile to see.
    for (let i = 0; i < 100; i++) await call(a.agent.url, 'PUT', `/v1/kv/profiled/${i % 10}`, 'v');
    const r = await profile;
    expect(r.status).toBe(200);
    expect(Date.now() - started).toBeGreaterThanOrEqual(2000);
    const p = r.json() as CpuProfile;
    expect(p.samples.length).toBe(p.timeDeltas.length);
    expect(p.samples.length).toBeGreaterThan(100);
    expect((p.endTime - p.startTime) / 1e6).toBeGreaterThanOrEqual(1.9);
    // The agent's own code served the writes meanwhile: its frames are in the profile.
    expect(p.nodes.some((n) => n.callFrame.url.includes('/src/http/'))).toBe(true);
  });

  test('a sampling heap profile; seconds outside 1..300 refused', async () => {
    const heap = await call(a.agent.url, 'GET', '/v1/agent/debug/heap-profile?seconds=1');
    expect(heap.status).toBe(200);
    const h = heap.json() as { head: { callFrame: unknown; children: unknown[] }; samples: unknown[] };
    expect(h.head.callFrame).toBeDefined();
    expect(Array.isArray(h.samples)).toBe(true);
    for (const seconds of ['0', '301', 'abc', '1.5']) {
      const r = await call(a.agent.url, 'GET', `/v1/agent/debug/heap-profile?seconds=${seconds}`);
      expect(expectError(r, 400, 1009).message).toBe(`seconds must be a whole number from 1 to 300, not "${seconds}"`);
    }
  });
});

describe('the host', () => {
  const a = useConfigAgent('roster-host-', {});

  test('memory, CPUs, host, the data dir\'s disk and the process, with no errors', async () => {
    const r = await call(a.agent.url, 'GET', '/v1/agent/host');
    expect(r.status).toBe(200);
    const h = r.json() as {
      Memory: { total: number; usedPercent: number }; CPU: unknown[]; Host: { hostname: string; kernelVersion: string };
      Disk: { path: string; total: number; free: number; inodesTotal: number }; Errors: string[]; CollectionTime: number;
      Process: { pid: number; openFiles: number; openFilesLimit: number | null; nodeVersion: string };
    };
    expect(h.Errors).toEqual([]);
    expect(h.Memory.total).toBeGreaterThan(0);
    expect(h.Memory.usedPercent).toBeGreaterThan(0);
    expect(h.CPU).toHaveLength(cpus().length);
    expect(h.Host.hostname).toBe(hostname());
    expect(h.Disk.path).toBe(a.agent.dataDir);
    expect(h.Disk.total).toBeGreaterThan(h.Disk.free);
    expect(h.Disk.inodesTotal).toBeGreaterThan(0);
    expect(h.Process.pid).toBe(a.agent.proc.pid);
    expect(h.Process.openFiles).toBeGreaterThan(10);
    expect(h.Process.openFilesLimit === null || h.Process.openFilesLimit > h.Process.openFiles).toBe(true);
    expect(Math.abs(h.CollectionTime / 1e6 - Date.now())).toBeLessThan(60_000);
  });
});

describe('profiles with authentication on', () => {
  const secret = 'a-debug-test-secret-that-is-long-enough-012345';
  const tokens = new TokenAuthority({ secret });
  const mint = (rules: Rule[]) => tokens.mint({ subject: 'ops', rules, ttlSeconds: 600 });
  const a = useConfigAgent('roster-debug-auth-', { auth: { jwt_secret: secret } });

  test('operator read takes a profile without enable_debug; agent read alone is 403', async () => {
    const operator = await mint([{ resource: 'operator', prefix: '', access: 'read' }]);
    const r = await call(a.agent.url, 'GET', '/v1/agent/debug/cpu-profile?seconds=1', undefined, { authorization: `Bearer ${operator}` });
    expect(r.status).toBe(200);
    expect((r.json() as CpuProfile).samples.length).toBeGreaterThan(0);
    const agentOnly = await mint([{ resource: 'agent', prefix: '', access: 'write' }]);
    expectError(await call(a.agent.url, 'GET', '/v1/agent/debug/heap-profile?seconds=1', undefined, { authorization: `Bearer ${agentOnly}` }), 403, 1004);
    expectError(await call(a.agent.url, 'GET', '/v1/agent/debug/heap-profile?seconds=1'), 401, 1002);
    expect((await call(a.agent.url, 'GET', '/v1/agent/host', undefined, { authorization: `Bearer ${operator}` })).status).toBe(200);
    expectError(await call(a.agent.url, 'GET', '/v1/agent/host', undefined, { authorization: `Bearer ${agentOnly}` }), 403, 1004);
  });
});
