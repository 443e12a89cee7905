/**
 * CLI start-up bench: `npm run bench:cli [-- options]`.
 *
 * Times whole `roster` calls as a shell runs them: `node bin/roster.mjs <args>` from spawn to exit, each
 * --runs times (after one unmeasured warm-up call each), the calls taken in turn so a busy moment of a
 * shared machine lands on all of them alike. The rows:
 *   node -e 0        the floor: Node starting and exiting with nothing to load
 *   --help           commander and the command definitions only
 *   --version        the same, printing the version
 *   kv get refused   a client call whose agent is not there (a closed port; exits 1)
 *   members          a client call answered by a running agent
 *   kv get           a client call answered by a running agent (a key the bench wrote)
 *   agent --help     the agent's flags: loads the agent's configuration code, not the server
 * For the last three the bench starts an agent (the compiled agent, bench/support/built-agent.ts, fresh data dir, free ports:
 * bench/server.ts) and stops it at the end; its start-up is not measured. It prints the median and p90 of
 * each row in ms and its ratio to the floor's median. It builds nothing: it needs `npm run build`, and
 * refuses to run when the build is missing or older than a source (bin/roster.mjs would then run the
 * TypeScript sources through tsx, which is not what it measures).
 */
import { spawnSync } from 'node:child_process';
import { existsSync, readdirSync, statSync } from 'node:fs';
import { createServer } from 'node:net';
import { cpus, tmpdir } from 'node:os';
import { join, resolve } from 'node:path';
import { performance } from 'node:perf_hooks';
import { revision } from './memory/report.ts';
import { formatRow, percentile, startRoster, stopAndReport, type Server } from './server.ts';
import { benchOptions, count, namesOf, parseBenchArgs } from './support/options.ts';
import { runBench } from './support/run.ts';

const repoRoot = resolve(import.meta.dirname, '..');
const bin = join(repoRoot, 'bin/roster.mjs');
const callNames = ['floor', 'help', 'version', 'refused', 'members', 'kv-get', 'agent-help'] as const;
type CallName = (typeof callNames)[number];
const needAgent: readonly CallName[] = ['members', 'kv-get'];

const usage = `usage: npm run bench:cli -- [options]   (after npm run build)
  --runs <n>       measured calls of each row, after one warm-up call      [default 20, 1 to 200]
  --calls <list>   rows to run, out of ${callNames.join(', ')}   [default all]`;

interface Options {
  runs: number;
  calls: CallName[];
}

interface Call {
  name: CallName;
  label: string;
  args: string[];
  /** The exit status the call must end with; another one fails the run. */
  status: number;
}

function parse(argv: string[]): Options {
  const v = parseBenchArgs(argv, { runs: { type: 'string' }, calls: { type: 'string' } });
  return { runs: count('runs', v.runs, 20, 1, 200), calls: namesOf('calls', v.calls, callNames) };
}

/** Why the build cannot be measured (missing, or older than a source bin/roster.mjs checks), else undefined. */
function buildProblem(): string | undefined {
  const stamp = join(repoRoot, 'dist/server/package.json');
  if (!existsSync(join(repoRoot, 'dist/server/src/cli/roster.js')) || !existsSync(stamp)) return 'no build: run npm run build first';
  const built = statSync(stamp).mtimeMs;
  for (const dir of ['src', 'cluster', 'machines']) {
    for (const f of readdirSync(join(repoRoot, dir), { recursive: true, withFileTypes: true })) {
      const path = join(f.parentPath, f.name);
      if (f.isFile() && f.name.endsWith('.ts') && statSync(path).mtimeMs > built) return `${path} is newer than the build: run npm run build first`;
    }
  }
  return undefined;
}

/** A TCP port nothing listens on (taken from the kernel, then closed). */
async function closedPort(): Promise<number> {
  const server = createServer();
  await new Promise<void>((res) => server.listen(0, '127.0.0.1', res));
  const address = server.address();
  await new Promise<void>((res) => server.close(() => res()));
  if (address === null || typeof address === 'string') throw new Error('no port');
  return address.port;
}

function callsOf(names: readonly CallName[], agentUrl: string, refusedAddr: string): Call[] {
  const all: Call[] = [
    { name: 'floor', label: 'node -e 0', args: ['-e', '0'], status: 0 },
    { name: 'help', label: 'roster --help', args: [bin, '--help'], status: 0 },
    { name: 'version', label: 'roster --version', args: [bin, '--version'], status: 0 },
    { name: 'refused', label: 'roster kv get (no agent)', args: [bin, 'kv', 'get', 'x', '--http-addr', refusedAddr], status: 1 },
    { name: 'members', label: 'roster members', args: [bin, 'members', '--http-addr', agentUrl], status: 0 },
    { name: 'kv-get', label: 'roster kv get', args: [bin, 'kv', 'get', 'bench/cli', '--http-addr', agentUrl], status: 0 },
    { name: 'agent-help', label: 'roster agent --help', args: [bin, 'agent', '--help'], status: 0 },
  ];
  return all.filter((c) => names.includes(c.name));
}

/** Runs `call` once and answers its wall time in ms; a wrong exit status throws. */
function timeCall(call: Call): number {
  const start = performance.now();
  const r = spawnSync(process.execPath, call.args, { cwd: repoRoot, stdio: ['ignore', 'ignore', 'pipe'], env: { ...process.env, NO_COLOR: '1' } });
  const elapsed = performance.now() - start;
  if (r.status !== call.status) throw new Error(`${call.label}: exit ${r.status ?? r.signal}, expected ${call.status}\n${r.stderr.toString()}`);
  return elapsed;
}

function report(calls: readonly Call[], samples: Map<CallName, number[]>): void {
  const stats = calls.map((c) => {
    const sorted = Float64Array.from(samples.get(c.name)!).sort();
    return { label: c.label, median: percentile(sorted, 50), p90: percentile(sorted, 90) };
  });
  const floor = stats.find((s) => s.label === 'node -e 0')?.median;
  const widths = [26, 10, 10, 10];
  const lines = [formatRow(['call', 'median ms', 'p90 ms', '× floor'], widths)];
  for (const s of stats) {
    const ratio = floor === undefined ? '-' : `${(s.median / floor).toFixed(1)}×`;
    lines.push(formatRow([s.label, s.median.toFixed(1), s.p90.toFixed(1), ratio], widths));
  }
  process.stdout.write(`${lines.join('\n')}\n`);
}

async function main(o: Options): Promise<number> {
  const problem = buildProblem();
  if (problem !== undefined) {
    process.stderr.write(`bench: ${problem}\n`);
    return 2;
  }
  let server: Server | undefined;
  return runBench(async (run) => {
    const cpu = cpus();
    const { commit, srcChanged } = revision();
    process.stdout.write(`roster CLI start-up bench  commit ${commit}${srcChanged ? ' (src/ has uncommitted changes)' : ''}  node ${process.version}  `
      + `cpu ${cpu[0]?.model.trim() ?? 'unknown'} x${cpu.length}  ${o.runs} runs per call\n`);
    if (o.calls.some((c) => needAgent.includes(c))) {
      server = await startRoster([], tmpdir());
      const put = await fetch(`${server.url}/v1/kv/bench/cli`, { method: 'PUT', body: 'value' });
      if (!put.ok) throw new Error(`PUT bench/cli: ${put.status}`);
    }
    const calls = callsOf(o.calls, server?.url ?? '', `127.0.0.1:${await closedPort()}`);
    const samples = new Map<CallName, number[]>(calls.map((c) => [c.name, []]));
    for (const c of calls) timeCall(c); // warm-up: file system cache, the agent's first answers
    for (let i = 0; i < o.runs; i++) {
      if (run.interrupted()) return 130;
      for (const c of calls) samples.get(c.name)!.push(timeCall(c));
    }
    report(calls, samples);
  }, async () => {
    await stopAndReport(server);
  });
}

process.exitCode = await main(benchOptions(usage, parse));
