/**
 * What the benches share: starting a real Roster process (the compiled agent, see support/built-agent.ts; fresh data dir,
 * free HTTP and gRPC ports) and stopping it, plus nearest-rank percentiles and table formatting.
 */
import { spawn } from 'node:child_process';
import { mkdirSync, mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { join, resolve } from 'node:path';
import { performance } from 'node:perf_hooks';
import { agentEntry } from './support/built-agent.ts';

const repoRoot = resolve(import.meta.dirname, '..');
const readyPattern = /roster listening http=(http:\/\/[^\s"]+) grpc=([^\s"]+)/;
const readyTimeoutMs = 30_000;
/** After SIGTERM, how long the server gets before SIGKILL. */
const stopTimeoutMs = 10_000;

export interface Server {
  url: string;
  /** The agent's process id (the node process itself: tsx is loaded with --import, not a wrapper). */
  pid: number;
  /** performance.now() just before the spawn and when the ready line was seen: start-up time is the difference. */
  spawnedAt: number;
  readyAt: number;
  /** host:port of the gRPC health service. */
  grpc: string;
  dataDir: string;
  /** Set once the process has exited, with its code or signal. */
  exited(): string | undefined;
  /** Last part of its stdout and stderr, for failure reports. */
  tail(): string;
  /**
   * SIGTERM, wait for exit (SIGKILL after `stopTimeoutMs`, 10 s), remove the data dir unless kept. Resolves
   * with a failure report when the server did not exit cleanly on SIGTERM (not when it had stopped before:
   * that was reported where it was noticed), else undefined.
   */
  stop(): Promise<string | undefined>;
  /** SIGKILL (a crash: no shutdown snapshot) and wait for the exit; the data dir is then handled as stop does. */
  kill(): Promise<void>;
}

export interface StartOptions {
  /**
   * Use this data dir (made if missing) instead of a fresh one under `dataParent`, so a second start can
   * recover what a first one wrote. @default a fresh mkdtemp dir
   */
  dataDir?: string;
  /** Leave the data dir in place on stop, kill or a failed start; the caller removes it. @default false */
  keepDataDir?: boolean;
  /** The agent's entry script, to start another build than this tree's (bench:pair's base). @default this tree's (agentEntry) */
  entry?: string;
  /** How long to wait for the ready line; recovering a large data dir takes longer than an empty start. @default 30000 */
  readyTimeoutMs?: number;
  /** After SIGTERM, how long stop waits before SIGKILL; the shutdown snapshot of a large state takes longer. @default 10000 */
  stopTimeoutMs?: number;
  /** Flags for node itself, before the entry (bench:gc's `--trace-gc-nvp`); ROSTER_BENCH_NODE_ARGS still applies. */
  nodeArgs?: readonly string[];
  /** Called with each piece of the agent's stdout as it arrives (the ready line's piece included). */
  onStdout?: (text: string) => void;
}

/**
 * The agent's command line: free ports, `dataDir`, info logs, a config file lifting the connection caps
 * (unless `extraArgs` names one) and, with ROSTER_BENCH_CPU_PROF=<dir>, a V8 CPU profile written there on exit.
 */
function agentArgs(extraArgs: string[], dataDir: string, entry: string[], ownNodeArgs: readonly string[]): string[] {
  // Every bench client comes from one address: lift the per-client and agent-wide caps above the largest client count.
  const configFile = join(dataDir, 'bench-config.json');
  writeFileSync(configFile, JSON.stringify({ limits: { http_max_conns_per_client: 10_000, stream_max_conns_per_client: 10_000, stream_max_conns: 10_000 } }));
  const profileDir = process.env.ROSTER_BENCH_CPU_PROF;
  const profiling = profileDir ? ['--cpu-prof', '--cpu-prof-dir', profileDir] : [];
  // ROSTER_BENCH_NODE_ARGS: extra flags for node itself (e.g. V8's heap sizes), for experiments.
  const nodeArgs = (process.env.ROSTER_BENCH_NODE_ARGS ?? '').split(' ').filter((a) => a !== '');
  return [...profiling, ...ownNodeArgs, ...nodeArgs, ...entry,
    '--http-port', '0', '--grpc-port', '0', '--data-dir', dataDir, '--node-name', 'bench', '--log-level', 'info',
    ...(extraArgs.includes('--config-file') ? [] : ['--config-file', configFile]),
    ...extraArgs];
}

/**
 * Starts Roster with `--http-port 0 --grpc-port 0`, a fresh data dir under `dataParent` (or `opts.dataDir`)
 * and `extraArgs`, and waits for its `roster listening http=<url> grpc=<host:port>` line.
 */
export async function startRoster(extraArgs: string[], dataParent: string, opts: StartOptions = {}): Promise<Server> {
  const dataDir = opts.dataDir ?? mkdtempSync(join(dataParent, 'roster-bench-'));
  if (opts.dataDir !== undefined) mkdirSync(dataDir, { recursive: true });
  const removeDataDir = () => { if (!opts.keepDataDir) rmSync(dataDir, { recursive: true, force: true }); };
  const readyMs = opts.readyTimeoutMs ?? readyTimeoutMs;
  const stopMs = opts.stopTimeoutMs ?? stopTimeoutMs;
  const args = agentArgs(extraArgs, dataDir, opts.entry === undefined ? agentEntry() : [opts.entry], opts.nodeArgs ?? []);
  const spawnedAt = performance.now();
  const proc = spawn(process.execPath, args, { cwd: repoRoot, stdio: ['ignore', 'pipe', 'pipe'] });
  let out = '';
  const keep = (d: Buffer) => { out = (out + d.toString()).slice(-16_384); };
  proc.stdout.on('data', keep);
  proc.stderr.on('data', keep);
  const onStdout = opts.onStdout;
  if (onStdout !== undefined) proc.stdout.on('data', (d: Buffer) => onStdout(d.toString()));
  let exitedWith: string | undefined;
  const exited = new Promise<number | null>((res) => proc.once('exit', (code, signal) => {
    exitedWith = code !== null ? `exit code ${code}` : `signal ${signal}`;
    res(code);
  }));

  let ready: [string, string];
  try {
    ready = await new Promise<[string, string]>((res, rej) => {
      const timer = setTimeout(() => rej(new Error(`Roster not ready within ${readyMs / 1000} s:\n${out}`)), readyMs);
      let seen = '';
      proc.stdout.on('data', (d: Buffer) => {
        seen += d.toString();
        const m = readyPattern.exec(seen);
        if (m) { clearTimeout(timer); res([m[1]!.replace(/\/+$/, ''), m[2]!]); }
      });
      void exited.then(() => { clearTimeout(timer); rej(new Error(`Roster stopped (${exitedWith}) before it was ready:\n${out}`)); });
    });
  } catch (err) {
    if (proc.exitCode === null && proc.signalCode === null) proc.kill('SIGKILL');
    await exited;
    removeDataDir();
    throw err;
  }
  const readyAt = performance.now();
  return {
    url: ready[0], grpc: ready[1], dataDir, pid: proc.pid!, spawnedAt, readyAt,
    exited: () => exitedWith,
    tail: () => out,
    stop: async () => {
      const diedEarlier = exitedWith !== undefined;
      let code: number | null;
      if (proc.exitCode === null && proc.signalCode === null) {
        proc.kill('SIGTERM');
        const timer = setTimeout(() => proc.kill('SIGKILL'), stopMs);
        code = await exited;
        clearTimeout(timer);
      } else {
        code = await exited;
      }
      removeDataDir();
      return code !== 0 && !diedEarlier ? `Roster exited with ${exitedWith} on SIGTERM\n${out}` : undefined;
    },
    kill: async () => {
      if (proc.exitCode === null && proc.signalCode === null) proc.kill('SIGKILL');
      await exited;
      removeDataDir();
    },
  };
}

/** Nearest-rank percentile over every sample. */
export function percentile(sorted: Float64Array, p: number): number {
  if (sorted.length === 0) return Number.NaN;
  const rank = Math.ceil((p / 100) * sorted.length);
  return sorted[Math.min(sorted.length, Math.max(1, rank)) - 1]!;
}

/** One table line: the first cell left-aligned, the others right-aligned, each in its column's width. */
export function formatRow(cells: readonly string[], widths: readonly number[]): string {
  return cells.map((c, i) => (i === 0 ? c.padEnd(widths[i]!) : c.padStart(widths[i]!))).join(' ').trimEnd();
}

/** Milliseconds with two decimals, '-' when there is no number. */
export const ms = (x: number) => (Number.isNaN(x) ? '-' : x.toFixed(2));

/** Stops `server` when there is one; a failure to stop cleanly goes to stderr and makes it return false. */
export async function stopAndReport(server: Server | undefined): Promise<boolean> {
  const failure = await server?.stop();
  if (failure === undefined) return true;
  process.stderr.write(`bench: ${failure}\n`);
  return false;
}
