/**
 * What bench:memory measures of the agent: its memory (/proc and its own view) until it is idle and steady,
 * the data dir's size, the newest snapshot, and its own `state recovered` log line.
 */
import { lstatSync, readdirSync, readFileSync } from 'node:fs';
import { join } from 'node:path';
import { performance } from 'node:perf_hooks';
import { setTimeout as sleep } from 'node:timers/promises';
import type { Server } from '../server.ts';
import { describeAnswer, type Http } from './http.ts';

/** Memory is read this long after the load's last answer, and once more after as long again. */
export const settleMs = 2_000;
/** Then, with the agent idle, every this long (memoryReadings) until it is steady or --idle seconds passed. */
const idlePollMs = 5_000;
/** "V8 has run a full collection": heap used below this share of the settled reading. */
const gcDropRatio = 0.8;
/** "RSS is steady": this many readings within this ratio of each other. */
const idleSteadyReadings = 3;
const rssSteadyRatio = 0.02;

export interface Memory {
  /** Resident set and its peak since the process started, from /proc/<pid>/status (bytes; NaN off Linux). */
  vmRssBytes: number;
  vmHwmBytes: number;
  /** process.memoryUsage() inside the agent, from /v1/agent/self Stats.runtime. */
  agentRssBytes: number;
  heapUsedBytes: number;
  heapTotalBytes: number;
  externalBytes: number;
}

function procMemory(pid: number): { rss: number; hwm: number } {
  try {
    const status = readFileSync(`/proc/${pid}/status`, 'utf8');
    const kb = (name: string) => Number(new RegExp(`^${name}:\\s+(\\d+) kB`, 'm').exec(status)?.[1] ?? Number.NaN) * 1024;
    return { rss: kb('VmRSS'), hwm: kb('VmHWM') };
  } catch {
    return { rss: Number.NaN, hwm: Number.NaN };
  }
}

export async function readMemory(http: Http, pid: number): Promise<Memory> {
  const a = await http.send('GET', '/v1/agent/self');
  if (a.status !== 200) throw new Error(describeAnswer('agent self', a));
  const rt = ((JSON.parse(a.text) as { Stats?: { runtime?: Record<string, string> } }).Stats?.runtime) ?? {};
  const proc = procMemory(pid);
  return {
    vmRssBytes: proc.rss, vmHwmBytes: proc.hwm,
    agentRssBytes: Number(rt.rss_bytes), heapUsedBytes: Number(rt.heap_used_bytes),
    heapTotalBytes: Number(rt.heap_total_bytes), externalBytes: Number(rt.external_bytes),
  };
}

export interface Readings {
  first: Memory;
  /** `settleMs` after `first`: what the process holds right after the work, garbage included. */
  settled: Memory;
  /** After the agent was left idle (see idleMemory): what it holds once V8 has collected and shrunk the heap. */
  idle: Memory;
  idleAfterS: number;
}

/**
 * Two readings `settleMs` apart after waiting `settleMs`, then readings every `idlePollMs` while the agent
 * is left alone, until V8 has run a full collection (heap used below `gcDropRatio` of the settled
 * reading) and RSS has stayed within `rssSteadyRatio` over `idleSteadyReadings` readings, or `idleS` passed.
 * A load leaves garbage that V8 collects only later (measured: 30–40 s after a 1M-key load, heap used
 * 1,003 → 328 MB, RSS 1,149 → 724 MB); the idle reading is what holding the data costs.
 */
export async function memoryReadings(http: Http, pid: number, idleS: number): Promise<Readings> {
  await sleep(settleMs);
  const first = await readMemory(http, pid);
  await sleep(settleMs);
  const settled = await readMemory(http, pid);
  const t0 = performance.now();
  const recent: Memory[] = [settled];
  let collected = false;
  for (;;) {
    const last = recent.at(-1)!;
    const elapsedS = (performance.now() - t0) / 1000;
    collected ||= last.heapUsedBytes < gcDropRatio * settled.heapUsedBytes;
    const window = recent.slice(-idleSteadyReadings);
    const steady = window.length === idleSteadyReadings
      && Math.max(...window.map((m) => m.vmRssBytes)) <= (1 + rssSteadyRatio) * Math.min(...window.map((m) => m.vmRssBytes));
    if ((collected && steady) || elapsedS >= idleS) return { first, settled, idle: last, idleAfterS: elapsedS };
    await sleep(idlePollMs);
    recent.push(await readMemory(http, pid));
  }
}

export interface DiskUse { bytes: number; parts: Record<string, number> }

/**
 * Apparent size of every file under `dir`, in total and per top-level entry (`wal/`, `snap/`, `node-id`, ...).
 * Links are not followed: the data-dir `LOCK` is a symbolic link whose target is a text, not a file.
 */
export function diskUse(dir: string): DiskUse {
  const sizeOf = (path: string): number => {
    const st = lstatSync(path);
    if (!st.isDirectory()) return st.size;
    return readdirSync(path).reduce((n, name) => n + sizeOf(join(path, name)), 0);
  };
  const parts = Object.fromEntries(readdirSync(dir).map((name) => {
    const path = join(dir, name);
    return [lstatSync(path).isDirectory() ? `${name}/` : name, sizeOf(path)];
  }));
  return { bytes: Object.values(parts).reduce((a, b) => a + b, 0), parts };
}

/** The newest snapshot's index, from its file name (`snap/<index>.snap`); 0 when there is none. */
export function newestSnapshotIndex(dataDir: string): number {
  try {
    return readdirSync(join(dataDir, 'snap')).map((n) => /^(\d+)\.snap$/.exec(n)?.[1]).filter((x) => x !== undefined)
      .reduce((m, x) => Math.max(m, Number(x)), 0);
  } catch {
    return 0;
  }
}

export interface Recovered { atMs: number; index: number; keys: number; sessions: number }

/** The agent's `state recovered` log line: when (ms after spawn) and what the log and snapshot held. */
export function recoveredLine(server: Server): Recovered | undefined {
  const spawnEpochMs = performance.timeOrigin + server.spawnedAt;
  for (const line of server.tail().split('\n')) {
    if (!line.includes('"state recovered"')) continue;
    try {
      const o = JSON.parse(line) as { time: number; index: number; keys: number; sessions: number };
      return { atMs: o.time - spawnEpochMs, index: o.index, keys: o.keys, sessions: o.sessions };
    } catch { /* not a whole JSON line: look further */ }
  }
  return undefined;
}
