/**
 * The reads comparison: wrk from Debian (64 connections, 2 threads) against a uWebSockets.js hello-world
 * (bench/hello-uws.ts, its own process) and against Roster's `GET /v1/kv/<key>` on a small value. wrk is
 * a C load generator, so the client's cost is small next to either server's; the ratio of the two rates
 * is what Roster's read path costs over the bare HTTP server underneath it.
 */
import { join, resolve } from 'node:path';
import { debianBinary, startChild, type Child } from './tools.ts';

const repoRoot = resolve(import.meta.dirname, '../..');
const readyTimeoutMs = 20_000;
/** wrk ends by itself after -d; this much longer and it is killed. */
const wrkGraceMs = 15_000;
export const wrkConnections = 64;
export const wrkThreads = 2;

export interface WrkResult {
  url: string;
  requestsPerS: number;
  p50Ms: number;
  p99Ms: number;
  /** Non-2xx/3xx answers plus socket errors (connect, read, write, timeout). */
  errors: number;
}

export interface HelloServer { url: string; child: Child }

export function startHelloUws(): Promise<HelloServer> {
  return startScriptServer('hello-uws', 'bench/hello-uws.ts', []);
}

/**
 * Starts one of the bench's own servers, `node --import tsx <script> ...args`, and waits for its
 * `<name> listening <url>` line; it is stopped if it does not print one within the time allowed.
 */
export async function startScriptServer(name: string, script: string, args: string[]): Promise<HelloServer> {
  // As Roster (bench/server.ts): ROSTER_BENCH_CPU_PROF=<dir> writes a V8 CPU profile there on exit.
  const profileDir = process.env.ROSTER_BENCH_CPU_PROF;
  const profiling = profileDir ? ['--cpu-prof', '--cpu-prof-dir', profileDir] : [];
  const child = startChild(process.execPath, [...profiling, '--import', 'tsx', join(repoRoot, script), ...args], { cwd: repoRoot });
  try {
    const url = await new Promise<string>((res, rej) => {
      const timer = setTimeout(() => rej(new Error(`${name} not ready within ${readyTimeoutMs} ms:\n${child.output()}`)), readyTimeoutMs);
      const ready = new RegExp(`${name} listening (http://\\S+)`);
      child.proc.stdout!.on('data', () => {
        const m = ready.exec(child.output());
        if (m) { clearTimeout(timer); res(m[1]!); }
      });
      void child.exit.then(() => { clearTimeout(timer); rej(new Error(`${name} stopped (${child.exited()}):\n${child.output()}`)); });
    });
    return { url, child };
  } catch (err) {
    await child.stop();
    throw err;
  }
}

/** wrk's latency figures carry their unit: 580.00us, 1.20ms, 2.00s. */
function toMs(value: string, unit: string): number {
  const n = Number(value);
  return unit === 'us' ? n / 1000 : unit === 's' ? n * 1000 : unit === 'm' ? n * 60_000 : n;
}

export function parseWrk(url: string, out: string): WrkResult {
  const rate = /Requests\/sec:\s+([\d.]+)/.exec(out);
  if (rate === null) throw new Error(`wrk printed no "Requests/sec:" line:\n${out}`);
  const pct = (p: string) => {
    const m = new RegExp(`^\\s+${p}%\\s+([\\d.]+)(us|ms|s|m)\\s*$`, 'm').exec(out);
    return m === null ? Number.NaN : toMs(m[1]!, m[2]!);
  };
  const non2xx = /Non-2xx or 3xx responses:\s+(\d+)/.exec(out);
  const socket = /Socket errors: connect (\d+), read (\d+), write (\d+), timeout (\d+)/.exec(out);
  const socketErrors = socket === null ? 0 : socket.slice(1).reduce((n, x) => n + Number(x), 0);
  return { url, requestsPerS: Number(rate[1]), p50Ms: pct('50'), p99Ms: pct('99'), errors: (non2xx === null ? 0 : Number(non2xx[1])) + socketErrors };
}

/** Runs wrk for `durationS` whole seconds against `url` and reads its summary. */
export async function runWrk(url: string, durationS: number): Promise<WrkResult> {
  const wrk = debianBinary('wrk', 'wrk');
  const seconds = Math.max(1, Math.round(durationS));
  const child = startChild(wrk, ['-t', String(wrkThreads), '-c', String(wrkConnections), '-d', `${seconds}s`, '--latency', url]);
  const killer = setTimeout(() => void child.stop(), seconds * 1000 + wrkGraceMs);
  await child.exit;
  clearTimeout(killer);
  if (child.exited() !== 'exit code 0') throw new Error(`wrk ${url} ended with ${child.exited()}:\n${child.output()}`);
  return parseWrk(url, child.output());
}
