/**
 * `npm run bench:pair -- --base <commit> [options]`: this tree's agent against another build of it, the two
 * running at the same time on one machine, each driven by its own clients of the same loop. On a machine
 * whose speed drifts between runs (the same row gives figures 10–20% apart an hour later), two builds
 * measured one after the other cannot be told apart by less than that; measured together, every slow spell
 * slows both, and the ratio of their server CPU per pair over one window stays within a few percent. Each
 * round starts both agents afresh (which one starts first alternates), warms them up, measures one window,
 * and stops them; the summary is the median of the rounds' ratios. bench/README.md describes the output.
 */
import { execFileSync } from 'node:child_process';
import { existsSync, mkdtempSync, rmSync, symlinkSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join, resolve } from 'node:path';
import { runRow, type RowResult, type Scenario } from './measure.ts';
import { RosterDriver } from './peers/roster.ts';
import { WindowMeter } from './peers/proc-cpu.ts';
import { describeMachine } from './peers/tools.ts';
import { startRoster, stopAndReport, type Server } from './server.ts';
import { agentEntry } from './support/built-agent.ts';
import { revision } from './memory/report.ts';
import { benchOptions, count, namesOf, parseBenchArgs, resultsPath, seconds } from './support/options.ts';
import { runBench } from './support/run.ts';

const repoRoot = resolve(import.meta.dirname, '..');
const scenarioNames = ['distinct', 'shared'] as const;

interface Options {
  /** The commit to build and compare against, or undefined when `baseDir` names a built tree. */
  base: string | undefined;
  baseDir: string | undefined;
  rounds: number;
  clients: number;
  durationS: number;
  warmupS: number;
  scenario: Scenario;
  jsonPath: string;
}

const usage = `usage: npm run bench:pair -- (--base <commit> | --base-dir <dir>) [options]
  --base <commit>        the build to compare with: this commit, built in a temporary git worktree
  --base-dir <dir>       or a checkout already built (its dist/server/src/main.js), used as it is
  --rounds <n>           rounds, each with both agents started afresh                 [default 6]
  --clients <n>          clients of each agent (the machine carries twice as many)     [default 32]
  --duration <seconds>   measured window of each round                                 [default 8]
  --warmup <seconds>     the same load before the window, not measured                 [default 5]
  --scenario <name>      distinct (a key per client) or shared (one key, queued)       [default distinct]
  --json <path>          results as JSON                      [default bench/results/pair-<time>.json]`;

function parseOptions(argv: string[]): Options {
  const values = parseBenchArgs(argv, {
    base: { type: 'string' }, 'base-dir': { type: 'string' }, rounds: { type: 'string' }, clients: { type: 'string' },
    duration: { type: 'string' }, warmup: { type: 'string' }, scenario: { type: 'string' }, json: { type: 'string' },
  });
  if ((values.base === undefined) === (values['base-dir'] === undefined)) throw new Error('give one of --base and --base-dir');
  const scenarios = namesOf('scenario', values.scenario ?? 'distinct', scenarioNames);
  if (scenarios.length !== 1) throw new Error('--scenario: name one of distinct, shared');
  return {
    base: values.base === undefined ? undefined : commitOf(values.base),
    baseDir: values['base-dir'] === undefined ? undefined : resolve(values['base-dir']),
    rounds: count('rounds', values.rounds, 6, 1, 100),
    clients: count('clients', values.clients, 32, 1, 1024),
    durationS: seconds('duration', values.duration, 8, { max: 600 }),
    warmupS: seconds('warmup', values.warmup, 5, { min: 0, minIncluded: true, max: 600 }),
    scenario: scenarios[0]!,
    jsonPath: resultsPath(values.json, 'pair'),
  };
}

function builtMainOf(dir: string): string {
  return join(dir, 'dist/server/src/main.js');
}

/** The commit `ref` names, or a refusal naming it. */
function commitOf(ref: string): string {
  try {
    return execFileSync('git', ['rev-parse', '--verify', '--quiet', `${ref}^{commit}`], { cwd: repoRoot, encoding: 'utf8' }).trim();
  } catch {
    throw new Error(`--base: "${ref}" names no commit of this repository`);
  }
}

/** Checks `commit` out in a temporary worktree and builds it there; `remove` takes the worktree away. */
function buildBase(commit: string): { dir: string; remove(): void } {
  const dir = mkdtempSync(join(tmpdir(), 'roster-pair-base-'));
  const remove = () => {
    try { execFileSync('git', ['worktree', 'remove', '--force', dir], { cwd: repoRoot, stdio: 'ignore' }); } catch { /* removed below */ }
    rmSync(dir, { recursive: true, force: true });
  };
  try {
    execFileSync('git', ['worktree', 'add', '--detach', '--force', dir, commit], { cwd: repoRoot, stdio: 'ignore' });
    // The base builds with this tree's installed packages (a commit with other pins would need its own npm ci).
    symlinkSync(join(repoRoot, 'node_modules'), join(dir, 'node_modules'), 'dir');
    execFileSync('npm', ['run', '--silent', 'build'], { cwd: dir, stdio: ['ignore', 'ignore', 'inherit'] });
  } catch (err) {
    remove();
    throw err;
  }
  return { dir, remove };
}

type Side = 'base' | 'this';

interface SideResult {
  pairsPerS: number;
  p99Ms: number;
  errors: number;
  serverCpuUsPerPair: number;
}

interface Round {
  first: Side;
  base: SideResult;
  this: SideResult;
  /** this / base, server CPU per pair: below 1, this tree spends less. */
  cpuRatio: number;
  /** this / base, pairs per second. */
  rateRatio: number;
}

async function runSide(server: Server, side: Side, o: Options, round: number): Promise<SideResult> {
  const meter = new WindowMeter([server.pid]);
  const driver = new RosterDriver({ urls: [server.url], connectionsPerNode: o.clients, contention: o.scenario === 'shared' ? 'queue' : 'retry', name: side });
  const row: RowResult = await runRow(driver, o.scenario, o.clients, {
    durationS: o.durationS, warmupMs: o.warmupS * 1000, sharedLatencyFrom: 'lock', keyPrefix: `pair/${round}/${side}`, onWindow: meter.onWindow,
  });
  const cpu = meter.finish();
  const pairs = row.pairsPerS * o.durationS;
  return { pairsPerS: row.pairsPerS, p99Ms: row.p99Ms, errors: row.errors, serverCpuUsPerPair: pairs > 0 ? (cpu.serverCpuS * 1e6) / pairs : Number.NaN };
}

/** The agents of the round in progress: stopped at its end, or by the bench's cleanup on Ctrl-C. */
const servers = new Map<Side, Server>();

async function stopServers(): Promise<void> {
  for (const server of servers.values()) await stopAndReport(server);
  servers.clear();
}

async function runRound(o: Options, baseMain: string, round: number): Promise<Round> {
  const first: Side = round % 2 === 0 ? 'base' : 'this';
  const order: Side[] = first === 'base' ? ['base', 'this'] : ['this', 'base'];
  try {
    for (const side of order) servers.set(side, await startRoster([], tmpdir(), side === 'base' ? { entry: baseMain } : {}));
    const [a, b] = await Promise.all(order.map((side) => runSide(servers.get(side)!, side, o, round)));
    const results = { [order[0]!]: a!, [order[1]!]: b! } as Record<Side, SideResult>;
    return {
      first, base: results.base, this: results.this,
      cpuRatio: results.this.serverCpuUsPerPair / results.base.serverCpuUsPerPair,
      rateRatio: results.this.pairsPerS / results.base.pairsPerS,
    };
  } finally {
    await stopServers();
  }
}

/** The middle value; of an even count, the mean of the two middle ones. */
function median(xs: readonly number[]): number {
  const sorted = [...xs].sort((a, b) => a - b);
  const mid = Math.floor(sorted.length / 2);
  return sorted.length % 2 === 1 ? sorted[mid]! : (sorted[mid - 1]! + sorted[mid]!) / 2;
}
const fixed = (x: number, digits: number) => (Number.isFinite(x) ? x.toFixed(digits) : '-');

function sideText(name: string, r: SideResult): string {
  return `${name} ${fixed(r.pairsPerS, 0).padStart(6)} pairs/s ${fixed(r.serverCpuUsPerPair, 1).padStart(7)} µs/pair  p99 ${fixed(r.p99Ms, 2).padStart(6)} ms${r.errors > 0 ? `  errors ${r.errors}` : ''}`;
}

async function main(): Promise<number> {
  const o = benchOptions(usage, parseOptions);
  const commit = o.base;
  agentEntry(); // this tree's build, made now if it is missing or stale, before the base's
  if (o.baseDir !== undefined && !existsSync(builtMainOf(o.baseDir))) {
    process.stderr.write(`bench: --base-dir: ${builtMainOf(o.baseDir)} does not exist (run npm run build there)\n`);
    return 2;
  }
  let built: { dir: string; remove(): void } | undefined;
  return runBench(async (run) => {
    built = commit === undefined ? undefined : buildBase(commit);
    const baseDir = built?.dir ?? o.baseDir!;
    const { commit: head, srcChanged } = revision();
    console.log(`roster pair  ${new Date().toISOString()}  this tree (HEAD ${head}${srcChanged ? ', src/ has uncommitted changes' : ''}) against ${commit === undefined ? baseDir : `${commit.slice(0, 7)} (built in ${baseDir})`}`);
    const m = describeMachine(tmpdir());
    console.log(`machine: cpu ${m.cpu} x${m.cores}, node ${m.node}, ${m.platform}; data dirs under ${m.dataParent} (${m.dataFs}); compiled agents (dist/server of each tree)`);
    console.log(`rounds: ${o.rounds}; each: both agents started afresh, ${o.clients} clients each on ${o.scenario} keys at once, ${o.warmupS} s warm-up, ${o.durationS} s window`);
    console.log('µs/pair = the agent process\'s user+system CPU over the window (/proc) per pair; ratio = this tree / base (CPU below 1: this tree spends less)');
    const rounds: Round[] = [];
    for (let r = 0; r < o.rounds && !run.interrupted(); r++) {
      const round = await runRound(o, builtMainOf(baseDir), r);
      rounds.push(round);
      console.log(`round ${String(r + 1).padStart(2)}  ${sideText('base', round.base)}  |  ${sideText('this', round.this)}  |  cpu ratio ${fixed(round.cpuRatio, 3)}  rate ratio ${fixed(round.rateRatio, 3)}`);
    }
    if (run.interrupted()) return 130;
    const cpu = rounds.map((r) => r.cpuRatio);
    const rate = rounds.map((r) => r.rateRatio);
    console.log(`this / base over ${rounds.length} rounds: server CPU per pair ${fixed(median(cpu), 3)} (median; ${fixed(Math.min(...cpu), 3)}–${fixed(Math.max(...cpu), 3)}), pairs/s ${fixed(median(rate), 3)} (${fixed(Math.min(...rate), 3)}–${fixed(Math.max(...rate), 3)})`);
    writeFileSync(o.jsonPath, `${JSON.stringify({ at: new Date().toISOString(), head, srcChanged, base: commit ?? baseDir, options: { ...o, jsonPath: undefined }, rounds, cpuRatioMedian: median(cpu), rateRatioMedian: median(rate) }, null, 2)}\n`);
    console.log(`results: ${o.jsonPath}`);
  }, async () => {
    await stopServers();
    built?.remove();
  });
}

process.exitCode = await main();
