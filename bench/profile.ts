/**
 * `npm run bench:profile [-- options]`: where the time goes in the rows whose performance targets are
 * missed (bench/README.md lists the targets). For each scenario it starts the system as bench:compare does, but with V8's CPU
 * profiler in every Roster process (ROSTER_BENCH_CPU_PROF), runs the row, and reads over the row's
 * measured window:
 *   - the CPU time of every process it started, of itself (the bench client) and of the machine (/proc);
 *   - each Roster process's main thread from its profile: busy share, busy time by component (each
 *     sample goes to the nearest frame on its stack that belongs to a known component, so a socket write
 *     made by the NATS client counts for the NATS client), and the hottest functions.
 * The profiler itself costs time, so the rows run slower here than in bench:compare; the shares are the
 * point. bench/README.md describes the output.
 */
import { mkdirSync, mkdtempSync, readdirSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { execFileSync } from 'node:child_process';
import { cpus, tmpdir } from 'node:os';
import { dirname, join, resolve } from 'node:path';
import { runRow, type RowResult, type Scenario } from './measure.ts';
import { runWrk, type WrkResult } from './peers/reads.ts';
import { startRosterCluster, type RosterCluster } from './peers/roster-cluster.ts';
import { RosterDriver, RosterHttp, describeAnswer } from './peers/roster.ts';
import { describeMachine } from './peers/tools.ts';
import { readProfile, type MainThread } from './peers/cpu-profile.ts';
import { LogMeter, logReport, type LogWindow } from './peers/log-meter.ts';
import { ms, startRoster, type Server } from './server.ts';
import { systemWarmupSDefault } from './compare/model.ts';
import { agentDescription } from './support/built-agent.ts';
import { benchOptions, count, namesOf, parseBenchArgs, resultsPath, seconds } from './support/options.ts';

const repoRoot = resolve(import.meta.dirname, '..');
const warmupMs = 500;
const clientsDefault = 64;
const scenarioNames = ['single-distinct', 'single-shared', 'cluster-distinct', 'reads'] as const;
type ScenarioName = typeof scenarioNames[number];
const described: Record<ScenarioName, string> = {
  'single-distinct': 'one node, distinct keys (targets at 64 clients: ≥ 20,000 pairs/s, ≥ 10× etcd, p99 ≤ 10 ms, ≤ 40 µs of server CPU per pair)',
  'single-shared': 'one node, one shared key, queued acquire (target at 64 clients: ≥ 10× etcd)',
  'cluster-distinct': 'three nodes over three nats-servers, distinct keys (targets at 64 clients: ≥ 5,000 pairs/s, ≥ 4× etcd, ≥ 1.5× NATS KV R3, CPU per pair ≤ NATS KV R3\'s)',
  reads: 'GET /v1/kv/<key> under wrk -t2 -c64 (target: ≥ 50% of uWebSockets.js hello-world)',
};

// ---------------------------------------------------------------- options

interface Options {
  durationS: number;
  /** Seconds of the same load, unprofiled by the reading, before the window (as bench:compare's --warmup). */
  systemWarmupS: number;
  clients: number;
  scenarios: ScenarioName[];
  jsonPath: string;
  dataParent: string;
  /** Keep the .cpuprofile files (for Chrome DevTools or speedscope) in this directory. */
  keepProfiles: string | undefined;
}

const usage = `usage: npm run bench:profile -- [options]
  --duration <seconds>   measured window per scenario, after ${warmupMs} ms warm-up             [default 5]
  --warmup <seconds>     the same load, not read, once the system has started (as bench:compare) [default ${systemWarmupSDefault}]
  --clients <n>          clients of the lock scenarios (reads: wrk's 64 connections)        [default ${clientsDefault}]
  --scenarios <list>     of ${scenarioNames.join(', ')}                [default all]
  --keep-profiles <dir>  keep each Roster process's .cpuprofile there (open in Chrome DevTools)
  --json <path>          results as JSON                  [default bench/results/profile-<time>.json]
  --data-parent <dir>    where the Roster data dirs are made                        [default os.tmpdir()]`;

function parseOptions(argv: string[]): Options {
  const values = parseBenchArgs(argv, {
    duration: { type: 'string' }, clients: { type: 'string' }, scenarios: { type: 'string' }, json: { type: 'string' },
    'data-parent': { type: 'string' }, 'keep-profiles': { type: 'string' }, warmup: { type: 'string' },
  });
  return {
    durationS: seconds('duration', values.duration, 5, { min: 1, minIncluded: true, max: 600 }),
    systemWarmupS: seconds('warmup', values.warmup, systemWarmupSDefault, { min: 0, minIncluded: true, max: 600 }),
    clients: count('clients', values.clients, clientsDefault, 1, 4096),
    scenarios: namesOf('scenarios', values.scenarios, scenarioNames),
    jsonPath: resultsPath(values.json, 'profile'),
    dataParent: values['data-parent'] ?? tmpdir(),
    keepProfiles: values['keep-profiles'] === undefined ? undefined : resolve(values['keep-profiles']),
  };
}

// ---------------------------------------------------------------- CPU accounting from /proc

const ticksPerSecond = Number(execFileSync('getconf', ['CLK_TCK']).toString().trim()) || 100;

interface ProcTicks { pid: number; name: string; user: number; system: number; threads: Map<number, number> }
interface CpuSnapshot { atUs: number; procs: Map<number, ProcTicks>; machine: number[] }

/** µs on the monotonic clock V8's profiles use (the same as process.hrtime). */
const nowUs = () => Number(process.hrtime.bigint() / 1000n);

function statFields(path: string): string[] | undefined {
  try {
    const text = readFileSync(path, 'utf8');
    // The command name is in parentheses and may hold spaces: fields count from after its ')'.
    return [text.slice(0, text.indexOf(' (')), text.slice(text.indexOf('(') + 1, text.lastIndexOf(')')), ...text.slice(text.lastIndexOf(')') + 2).split(' ')];
  } catch {
    return undefined;
  }
}

/** This process and every process it started (directly), each with its threads' CPU ticks. */
function snapshot(): CpuSnapshot {
  const procs = new Map<number, ProcTicks>();
  for (const entry of readdirSync('/proc')) {
    const pid = Number(entry);
    if (!Number.isInteger(pid)) continue;
    const f = statFields(`/proc/${pid}/stat`);
    if (f === undefined) continue;
    if (pid !== process.pid && Number(f[3]) !== process.pid) continue;
    const threads = new Map<number, number>();
    try {
      for (const t of readdirSync(`/proc/${pid}/task`)) {
        const tf = statFields(`/proc/${pid}/task/${t}/stat`);
        if (tf !== undefined) threads.set(Number(t), Number(tf[13]) + Number(tf[14]));
      }
    } catch { /* exited meanwhile */ }
    procs.set(pid, { pid, name: processName(pid, f[1]!), user: Number(f[13]), system: Number(f[14]), threads });
  }
  const machine = readFileSync('/proc/stat', 'utf8').split('\n')[0]!.trim().split(/\s+/).slice(1).map(Number);
  return { atUs: nowUs(), procs, machine };
}

/** Names of the processes seen in this scenario's snapshots, by pid (cleared for each scenario). */
const names = new Map<number, string>();
function processName(pid: number, comm: string): string {
  if (pid === process.pid) return 'bench client (this process)';
  const known = names.get(pid);
  if (known !== undefined) return known;
  let args: string[] = [];
  try { args = readFileSync(`/proc/${pid}/cmdline`, 'utf8').split('\0'); } catch { /* gone */ }
  const name = args.some((a) => a.endsWith('src/main.ts') || a.endsWith('src/main.js'))
    ? `roster ${args[args.lastIndexOf('--node-name') + 1] ?? ''}`.trim()
    : comm === 'nats-server' ? `nats-server ${args.find((a) => a.endsWith('.conf'))?.replace(/^.*\//, '') ?? ''}`.trim()
      : comm;
  names.set(pid, name);
  return name;
}

interface ProcessCpu { pid: number; name: string; cpuPct: number; userPct: number; systemPct: number; mainThreadPct: number }
interface MachineCpu { busyPct: number; userPct: number; systemPct: number; softirqPct: number; idlePct: number; iowaitPct: number; stealPct: number; cores: number }

function cpuBetween(a: CpuSnapshot, b: CpuSnapshot): { processes: ProcessCpu[]; machine: MachineCpu } {
  const seconds = (b.atUs - a.atUs) / 1e6;
  const pct = (ticks: number) => (100 * ticks) / ticksPerSecond / seconds;
  const processes: ProcessCpu[] = [];
  for (const [pid, end] of b.procs) {
    const start = a.procs.get(pid);
    if (start === undefined) continue;
    processes.push({
      pid, name: end.name,
      cpuPct: pct(end.user + end.system - start.user - start.system),
      userPct: pct(end.user - start.user), systemPct: pct(end.system - start.system),
      mainThreadPct: pct((end.threads.get(pid) ?? 0) - (start.threads.get(pid) ?? 0)),
    });
  }
  processes.sort((x, y) => y.cpuPct - x.cpuPct);
  // /proc/stat: user nice system idle iowait irq softirq steal (in ticks, summed over the cores).
  const d = b.machine.map((v, k) => v - (a.machine[k] ?? 0));
  const cores = cpus().length;
  const m = (k: number) => pct(d[k] ?? 0);
  const machine = {
    userPct: m(0) + m(1), systemPct: m(2) + m(5), softirqPct: m(6), idlePct: m(3), iowaitPct: m(4), stealPct: m(7), cores,
    busyPct: m(0) + m(1) + m(2) + m(5) + m(6) + m(7),
  };
  return { processes, machine };
}

// ---------------------------------------------------------------- scenarios

interface ScenarioResult {
  scenario: ScenarioName;
  description: string;
  row?: RowResult;
  reads?: WrkResult;
  cpu?: ReturnType<typeof cpuBetween>;
  windowS?: number;
  /** What the logs did over the window (lock scenarios): each node's commits, and the nats-servers' traffic. */
  log?: LogWindow;
  mainThreads: (MainThread & { process: string })[];
  error?: string;
}

/** Takes CPU snapshots at the window's ends (performance.now() times), as close as timers allow. */
class WindowMeter {
  start: CpuSnapshot | undefined;
  end: CpuSnapshot | undefined;
  private timers: NodeJS.Timeout[] = [];
  at(from: number, until: number, logs?: LogMeter): void {
    this.timers.push(setTimeout(() => { this.start = snapshot(); logs?.atStart(); }, Math.max(0, from - performance.now())));
    this.timers.push(setTimeout(() => { this.end = snapshot(); logs?.atEnd(); }, Math.max(0, until - performance.now())));
  }
  clear(): void { for (const t of this.timers) clearTimeout(t); }
}

async function runScenario(name: ScenarioName, o: Options, profileDir: string): Promise<ScenarioResult> {
  const result: ScenarioResult = { scenario: name, description: described[name], mainThreads: [] };
  names.clear();
  const meter = new WindowMeter();
  let single: Server | undefined;
  let cluster: RosterCluster | undefined;
  let driver: RosterDriver | undefined;
  process.env.ROSTER_BENCH_CPU_PROF = profileDir;
  try {
    if (name === 'cluster-distinct') {
      cluster = await startRosterCluster(o.dataParent);
    } else {
      single = await startRoster([], o.dataParent);
    }
    const urls = cluster?.nodes.map((n) => n.url) ?? [single!.url];
    if (name === 'reads') {
      const http = new RosterHttp(urls[0]!, 1);
      try {
        const put = await http.request('PUT', '/v1/kv/bench/read', 'a small value for the read bench');
        if (put.status !== 200) throw new Error(describeAnswer('write bench/read', put));
      } finally {
        await http.close();
      }
      if (o.systemWarmupS > 0) await runWrk(`${urls[0]}/v1/kv/bench/read`, o.systemWarmupS);
      // wrk has no warm-up: measure from half a second in to half a second before its end.
      const startedAt = performance.now();
      meter.at(startedAt + warmupMs, startedAt + o.durationS * 1000 - warmupMs);
      result.reads = await runWrk(`${urls[0]}/v1/kv/bench/read`, o.durationS);
    } else {
      driver = new RosterDriver({ urls, connectionsPerNode: Math.ceil(o.clients / urls.length), contention: 'queue' });
      const scenario: Scenario = name === 'single-shared' ? 'shared' : 'distinct';
      const warm = { durationS: o.systemWarmupS, warmupMs: 0, sharedLatencyFrom: 'lock', keyPrefix: 'bench' } as const;
      if (o.systemWarmupS > 0) await runRow(driver, scenario, o.clients, warm);
      const logs = new LogMeter(urls, cluster?.nats.servers.map((n) => ({ name: n.name, monitorUrl: n.monitorUrl })) ?? []);
      result.row = await runRow(driver, scenario, o.clients, {
        durationS: o.durationS, warmupMs, sharedLatencyFrom: 'lock', keyPrefix: 'bench',
        onWindow: (from, until) => meter.at(from, until, logs),
      });
      result.log = await logs.finish(cluster === undefined ? ['roster'] : cluster.nodes.map((_, k) => `roster n${k + 1}`));
    }
    const { start, end } = meter;
    if (start === undefined || end === undefined) throw new Error('the window ended before its CPU could be read');
    result.cpu = cpuBetween(start, end);
    result.windowS = (end.atUs - start.atUs) / 1e6;
  } catch (err) {
    result.error = err instanceof Error ? err.message : String(err);
  } finally {
    meter.clear();
    if (driver !== undefined) await driver.close().catch(() => undefined);
    // Stopping writes the profiles (V8 writes them as the process exits).
    if (single !== undefined) {
      const failure = await single.stop();
      if (failure !== undefined) result.error ??= failure;
    }
    if (cluster !== undefined) await cluster.stop().catch((err: unknown) => { result.error ??= String(err); });
    delete process.env.ROSTER_BENCH_CPU_PROF;
  }
  if (result.error === undefined && meter.start !== undefined && meter.end !== undefined) {
    for (const file of readdirSync(profileDir).filter((f) => f.endsWith('.cpuprofile'))) {
      // CPU.<date>.<time>.<pid>.<thread>.<seq>.cpuprofile: thread 0 is the main thread.
      const [, , , pid, thread] = file.split('.');
      if (thread !== '0') continue;
      const main = readProfile(join(profileDir, file), meter.start.atUs, meter.end.atUs);
      // Named when the window's CPU was read (the process has exited since).
      result.mainThreads.push({ process: names.get(Number(pid)) ?? `pid ${pid}`, ...main });
    }
    result.mainThreads.sort((a, b) => a.process.localeCompare(b.process));
  }
  return result;
}

// ---------------------------------------------------------------- output

const pct = (x: number) => `${x.toFixed(0)}%`;

function report(r: ScenarioResult): string {
  const out = [`== ${r.scenario}: ${r.description}`];
  if (r.error !== undefined) return [...out, `failed: ${r.error}`].join('\n');
  if (r.row !== undefined) {
    out.push(`row: ${r.row.clients} clients, ${r.row.pairsPerS.toFixed(0)} pairs/s, p50 ${ms(r.row.p50Ms)} ms, p99 ${ms(r.row.p99Ms)} ms, errors ${r.row.errors} (profiled: slower than bench:compare)`);
  }
  if (r.reads !== undefined) out.push(`wrk: ${r.reads.requestsPerS.toFixed(0)} req/s, p50 ${ms(r.reads.p50Ms)} ms, p99 ${ms(r.reads.p99Ms)} ms, errors ${r.reads.errors} (profiled)`);
  const cpu = r.cpu!;
  const m = cpu.machine;
  out.push(`CPU over the ${r.windowS!.toFixed(1)} s window, % of one core (the machine has ${m.cores}: ${m.cores * 100}%):`);
  out.push(`  machine      busy ${pct(m.busyPct)} (user ${pct(m.userPct)}, system ${pct(m.systemPct)}, softirq ${pct(m.softirqPct)}, steal ${pct(m.stealPct)}), idle ${pct(m.idlePct)}, iowait ${pct(m.iowaitPct)}`);
  for (const p of cpu.processes.filter((x) => x.cpuPct >= 0.5)) {
    out.push(`  ${p.name.padEnd(36)} ${pct(p.cpuPct).padStart(4)}  (user ${pct(p.userPct)}, system ${pct(p.systemPct)}; main thread ${pct(p.mainThreadPct)})`);
  }
  if (r.log !== undefined && r.row !== undefined) out.push(...logReport(r.log, r.row.pairsPerS * r.windowS!));
  for (const t of r.mainThreads) {
    out.push(`${t.process}: main thread busy ${pct(t.busyPct)} of the window in its profile; its busy time by component:`);
    for (const c of t.components.filter((x) => x.pct >= 0.5)) out.push(`  ${pct(c.pct).padStart(4)}  ${c.name}`);
    out.push('  hottest functions (own time, share of busy time):');
    for (const f of t.hottest) out.push(`  ${pct(f.pct).padStart(4)}  ${f.fn}`);
  }
  return out.join('\n');
}

// ---------------------------------------------------------------- main

async function main(): Promise<number> {
  const o = benchOptions(usage, parseOptions);
  const machine = describeMachine(o.dataParent);
  let commit = 'unknown';
  try { commit = execFileSync('git', ['-C', repoRoot, 'rev-parse', '--short', 'HEAD']).toString().trim(); } catch { /* not a checkout */ }
  const startedAt = new Date().toISOString();
  process.stdout.write(`roster profile  ${startedAt}  commit ${commit}\n`
    + `machine: cpu ${machine.cpu} x${machine.cores}, node ${machine.node}, ${machine.platform}; data dirs under ${o.dataParent} (${machine.dataFs}); ${agentDescription()}\n`
    + `each scenario: ${o.clients} clients (reads: wrk -c64), ${o.durationS} s window after ${warmupMs} ms warm-up${o.systemWarmupS > 0 ? ` (and ${o.systemWarmupS} s of the same load once started)` : ''}; every Roster process runs with --cpu-prof\n\n`);
  let failed = false;
  const results: ScenarioResult[] = [];
  for (const name of o.scenarios) {
    const dir = mkdtempSync(join(tmpdir(), 'roster-profile-'));
    try {
      const r = await runScenario(name, o, dir);
      results.push(r);
      if (r.error !== undefined || (r.row?.errors ?? 0) > 0 || (r.reads?.errors ?? 0) > 0) failed = true;
      process.stdout.write(`${report(r)}\n\n`);
      if (o.keepProfiles !== undefined) {
        const keep = join(o.keepProfiles, name);
        mkdirSync(keep, { recursive: true });
        for (const f of readdirSync(dir)) writeFileSync(join(keep, f), readFileSync(join(dir, f)));
      }
    } finally {
      rmSync(dir, { recursive: true, force: true });
    }
  }
  mkdirSync(dirname(o.jsonPath), { recursive: true });
  writeFileSync(o.jsonPath, `${JSON.stringify({ version: 1, startedAt, finishedAt: new Date().toISOString(), commit, machine, options: { durationS: o.durationS, clients: o.clients, warmupMs, systemWarmupS: o.systemWarmupS }, results }, null, 2)}\n`);
  process.stdout.write(`results: ${o.jsonPath}${o.keepProfiles === undefined ? '' : `\nprofiles: ${o.keepProfiles}/<scenario>/`}\n`);
  return failed ? 1 : 0;
}

process.exitCode = await main();
