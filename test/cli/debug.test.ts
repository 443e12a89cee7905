// Goal: `roster debug` against a started agent: with profiling off it still captures the agent, members, log
// and metrics (--no-archive leaves the directory), names the two profiles it could not take in index.json
// and on stderr, and exits 0; with enable_debug on it writes <output>.tar.gz holding every capture: the
// agent's self, members and log state, its log at debug (the requests made meanwhile), metrics at the
// start and every interval, a CPU profile and a heap profile. Bad durations are usage errors.
import { existsSync, mkdirSync, readdirSync, readFileSync } from 'node:fs';
import { join } from 'node:path';
import { extract } from 'tar';
import { describe, expect, test } from 'vitest';
import { call } from '../support/agent.ts';
import { useConfigAgent } from '../support/config-agent.ts';
import { roster, startRoster } from './support.ts';

describe('roster debug', () => {
  const a = useConfigAgent('roster-cli-debug-', {});

  test('profiling off: the rest is captured, the profiles are named as missing, exit 0', async () => {
    const out = join(a.dir, 'plain');
    const r = await roster(['debug', '--duration', '1s', '--interval', '1s', '--output', out, '--no-archive'], { agent: a.agent.url });
    expect(r.code).toBe(0);
    expect(r.stdout).toContain(`Saved ${out}\n`);
    expect(r.stderr).toMatch(/roster: cpuProfile not captured: profiling is off: set enable_debug/);
    expect(r.stderr).toMatch(/roster: heapProfile not captured: profiling is off/);
    const index = JSON.parse(readFileSync(join(out, 'index.json'), 'utf8')) as { captures: Record<string, { file: string; error?: string }> };
    expect(Object.entries(index.captures).filter(([, c]) => c.error !== undefined).map(([k]) => k).sort()).toEqual(['cpuProfile', 'heapProfile']);
    expect(readdirSync(out).sort()).toEqual(['agent.json', 'agent.log', 'host.json', 'index.json', 'members.json', 'metrics', 'operator-log.json']);
    expect(readdirSync(join(out, 'metrics')).sort()).toEqual(['0.prom', '1.prom']);
  });

  test('profiling on: one archive holding every capture', async () => {
    a.write({ enable_debug: true });
    expect((await call(a.agent.url, 'PUT', '/v1/agent/reload')).status).toBe(200);
    const out = join(a.dir, 'bundle');
    const run = startRoster(['debug', '-duration=3s', '-interval=1s', '-output', out], { agent: a.agent.url, timeoutMs: 30_000 });
    await run.waitFor(/Capturing from/);
    for (let i = 0; i < 20; i++) await call(a.agent.url, 'PUT', '/v1/kv/debugged', 'v');
    const r = await run.exited;
    expect(r.code).toBe(0);
    expect(r.stderr).toBe('');
    expect(r.stdout).toContain(`Saved ${out}.tar.gz\n`);
    expect(existsSync(out)).toBe(false);
    const unpacked = join(a.dir, 'unpacked');
    mkdirSync(unpacked);
    await extract({ file: `${out}.tar.gz`, cwd: unpacked });
    const root = join(unpacked, 'bundle');
    const read = (name: string) => readFileSync(join(root, name), 'utf8');
    expect(JSON.parse(read('agent.json'))).toMatchObject({ Config: { NodeName: 'node1' } });
    expect(JSON.parse(read('members.json'))).toEqual(expect.arrayContaining([expect.objectContaining({ Name: 'node1' })]));
    expect(JSON.parse(read('operator-log.json'))).toBeTypeOf('object');
    expect(JSON.parse(read('host.json'))).toMatchObject({ Disk: { path: a.agent.dataDir }, Errors: [] });
    expect(read('agent.log')).toMatch(/\[DEBUG\] request: .*path=\/v1\/kv\/debugged status=200/);
    expect(readdirSync(join(root, 'metrics')).sort()).toEqual(['0.prom', '1.prom', '2.prom', '3.prom']);
    expect(read('metrics/3.prom')).toContain('roster_http_requests_total');
    const cpu = JSON.parse(read('cpu.cpuprofile')) as { nodes: unknown[]; samples: unknown[] };
    expect(cpu.samples.length).toBeGreaterThan(0);
    expect(JSON.parse(read('heap.heapprofile'))).toHaveProperty('head');
    const index = JSON.parse(read('index.json')) as { interrupted: boolean; durationMs: number; captures: Record<string, { error?: string }> };
    expect(index.interrupted).toBe(false);
    expect(index.durationMs).toBe(3000);
    expect(Object.values(index.captures).every((c) => c.error === undefined)).toBe(true);
  }, 60_000);

  test('Ctrl-C ends the capture early and saves what was captured', async () => {
    const out = join(a.dir, 'interrupted');
    const run = startRoster(['debug', '--duration', '60s', '--interval', '1s', '--output', out, '--no-archive'], { agent: a.agent.url, timeoutMs: 30_000 });
    await run.waitFor(/Capturing from/);
    await call(a.agent.url, 'PUT', '/v1/kv/before-the-interrupt', 'v');
    await new Promise((r) => setTimeout(r, 1500));
    const sent = Date.now();
    run.proc.kill('SIGINT');
    const r = await run.exited;
    expect(r.code).toBe(0);
    expect(Date.now() - sent).toBeLessThan(10_000);
    const index = JSON.parse(readFileSync(join(out, 'index.json'), 'utf8')) as { interrupted: boolean; captures: Record<string, { error?: string }> };
    expect(index.interrupted).toBe(true);
    expect(index.captures.cpuProfile!.error).toBe('interrupted');
    expect(index.captures.log!.error).toBeUndefined();
    expect(readFileSync(join(out, 'agent.log'), 'utf8')).toContain('path=/v1/kv/before-the-interrupt');
    expect(readdirSync(join(out, 'metrics')).length).toBeGreaterThanOrEqual(2);
  }, 40_000);

  test('durations out of range are usage errors, and nothing is written', async () => {
    for (const args of [['--duration', '6m'], ['--duration', 'soon'], ['--interval', '10ms'], ['--log-level', 'loud']]) {
      const r = await roster(['debug', ...args, '--output', join(a.dir, 'never')], { agent: a.agent.url });
      expect(r.code).toBe(2);
      expect(existsSync(join(a.dir, 'never'))).toBe(false);
    }
  });
});
