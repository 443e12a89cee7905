// Goal: `npm run bench:profile`, the evidence behind the performance section, reads profiles right — a
// sample counts for the nearest component on its stack, only inside the window, idle apart — and the
// command itself profiles a really started Roster and reports where its main thread's time went.
import { execFile } from 'node:child_process';
import { mkdtempSync, readdirSync, readFileSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join, resolve } from 'node:path';
import { pathToFileURL } from 'node:url';
import { promisify } from 'node:util';
import { describe, expect, test } from 'vitest';
import { summarizeProfile, type CpuProfile } from '../../bench/peers/cpu-profile.ts';

const repoRoot = resolve(import.meta.dirname, '../..');
const own = (path: string) => pathToFileURL(join(repoRoot, path)).href;

/** root → processTicks (node) → handler (src/http) → writeBuffer (native); root → apply (src/state); idle; GC. */
function syntheticProfile(): CpuProfile {
  const frame = (functionName: string, url: string) => ({ functionName, url, lineNumber: 0 });
  return {
    nodes: [
      { id: 1, callFrame: frame('(root)', ''), children: [2, 5, 6, 7, 8] },
      { id: 2, callFrame: frame('processTicksAndRejections', 'node:internal/process/task_queues'), children: [3] },
      { id: 3, callFrame: frame('handler', own('src/http/server.ts')), children: [4] },
      { id: 4, callFrame: frame('writeBuffer', '') },
      { id: 5, callFrame: frame('apply', own('src/state/apply/dispatch.ts')) },
      { id: 6, callFrame: frame('(idle)', '') },
      { id: 7, callFrame: frame('(garbage collector)', '') },
      { id: 8, callFrame: frame('listOnTimeout', 'node:internal/timers') },
    ],
    startTime: 1_000_000,
    // Sample times 1,000,100 + 100·k: k = 0..9; each stands for the 100 µs until the next.
    samples: [4, 4, 3, 5, 6, 6, 7, 8, 4, 4],
    timeDeltas: [100, 100, 100, 100, 100, 100, 100, 100, 100, 100],
  };
}

describe('the profile reader', () => {
  test('a native call counts for the component that called it; idle is not busy; nothing outside the window counts', () => {
    // The window holds samples k = 1..8: writeBuffer, handler, apply, idle, idle, GC, timers, writeBuffer.
    const m = summarizeProfile(syntheticProfile(), 'synthetic', 1_000_200, 1_000_900);
    expect(m.windowMs).toBeCloseTo(0.8);
    expect(m.busyPct).toBeCloseTo(75); // 6 of 8 samples
    const share = Object.fromEntries(m.components.map((c) => [c.name, c.pct]));
    expect(share['HTTP front end (uWS calls, request, routing, rendering)']).toBeCloseTo(50); // 3 of 6 busy samples
    expect(share['apply (state, lock and session steps)']).toBeCloseTo(100 / 6);
    expect(share['garbage collection']).toBeCloseTo(100 / 6);
    expect(share['Node and V8 internals (timers, microtasks, streams) with no Roster frame']).toBeCloseTo(100 / 6);
    expect(m.components.reduce((n, c) => n + c.pct, 0)).toBeCloseTo(100);
    expect(m.hottest[0]).toEqual({ fn: 'writeBuffer  (native)', pct: expect.closeTo(100 / 3, 5) });
  });

  test('a window with no samples is reported empty, not divided by zero', () => {
    const m = summarizeProfile(syntheticProfile(), 'synthetic', 2_000_000, 3_000_000);
    expect(m).toMatchObject({ windowMs: 0, busyPct: 0, components: [], hottest: [] });
  });
});

test('npm run bench:profile profiles a started Roster under a lock row and says where its main thread went', async () => {
  const dir = mkdtempSync(join(tmpdir(), 'roster-profile-test-'));
  try {
    const json = join(dir, 'out.json');
    const { stdout } = await promisify(execFile)('npx', ['tsx', 'bench/profile.ts', '--scenarios', 'single-distinct', '--clients', '4',
      '--duration', '1', '--warmup', '0.5', '--json', json, '--keep-profiles', join(dir, 'profiles')], { cwd: repoRoot, timeout: 90_000 });
    expect(stdout).toContain('== single-distinct');
    expect(stdout).toMatch(/row: 4 clients, \d+ pairs\/s.*errors 0/);
    expect(stdout).toMatch(/roster bench: main thread busy \d+% of the window/);
    expect(stdout).toMatch(/^log over the window: [\d,]+ group commits carrying [\d,]+ entries \([\d.]+ per commit; [\d.]+ commits per pair\)$/m);
    const out = JSON.parse(readFileSync(json, 'utf8')) as {
      results: { error?: string; row: { pairsPerS: number }; cpu: { processes: { name: string; cpuPct: number }[] };
        log: { nodes: { node: string; commits: number; entries: number }[]; nats?: unknown };
        mainThreads: { process: string; busyPct: number; components: { name: string; pct: number }[] }[] }[];
    };
    const [r] = out.results;
    expect(r!.error).toBeUndefined();
    expect(r!.row.pairsPerS).toBeGreaterThan(0);
    // Its WAL committed during the window, each commit carrying at least one entry (two per pair).
    const [log] = r!.log.nodes;
    expect(log!.node).toBe('roster');
    expect(log!.commits).toBeGreaterThan(0);
    expect(log!.entries).toBeGreaterThanOrEqual(log!.commits);
    expect(r!.log.nats).toBeUndefined();
    // The started agent did the work: it used CPU and its HTTP front end and WAL show in its profile.
    expect(r!.cpu.processes.find((p) => p.name.startsWith('roster'))!.cpuPct).toBeGreaterThan(0);
    const [main] = r!.mainThreads;
    expect(main!.process).toBe('roster bench'); // `roster <node name>`, as in the CPU list
    expect(main!.busyPct).toBeGreaterThan(0);
    const names = main!.components.map((c) => c.name);
    expect(names).toContain('HTTP front end (uWS calls, request, routing, rendering)');
    expect(names).toContain('WAL (encoding, write, fdatasync)');
    expect(main!.components.reduce((n, c) => n + c.pct, 0)).toBeCloseTo(100);
    const kept = readdirSync(join(dir, 'profiles', 'single-distinct')).filter((f) => f.endsWith('.cpuprofile'));
    expect(kept.length).toBeGreaterThan(0);
    expect(readFileSync(join(dir, 'profiles', 'single-distinct', kept[0]!), 'utf8')).toContain('"samples"');
  } finally {
    rmSync(dir, { recursive: true, force: true });
  }
}, 120_000);

