/**
 * `npm run bench:gc [-- options]`: one node (or, with --cluster, three) under a steady lock load for a while,
 * and what its garbage collector does over time. The agents run with V8's `--trace-gc-nvp` (one line per
 * collection, with what it kept and promoted); the load is the lock loop on distinct keys. For each slice of
 * the run the bench prints the agents' server CPU per pair and their scavenges: how many, the median bytes each kept in the young
 * generation and promoted to the old one, the median pause, and the full collections. A node whose
 * scavenges keep and promote more once it has run for a while pays for it in CPU per pair; bench/README.md
 * describes the output.
 */
import { existsSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join, resolve } from 'node:path';
import { performance } from 'node:perf_hooks';
import { runRow } from './measure.ts';
import { RosterDriver } from './peers/roster.ts';
import { cpuSecondsOf } from './peers/proc-cpu.ts';
import { describeMachine } from './peers/tools.ts';
import { startRoster, stopAndReport, type Server } from './server.ts';
import { startRosterCluster } from './peers/roster-cluster.ts';
import { agentDescription } from './support/built-agent.ts';
import { revision } from './memory/report.ts';
import { benchOptions, count, parseBenchArgs, resultsPath, seconds } from './support/options.ts';
import { runBench } from './support/run.ts';

interface Options {
  /** Three nodes over three nats-servers instead of one node. */
  cluster: boolean;
  /** A checkout already built whose agent runs instead of this tree's. */
  agentDir: string | undefined;
  durationS: number;
  sliceS: number;
  clients: number;
  jsonPath: string;
}

const usage = `usage: npm run bench:gc -- [options]
  --duration <seconds>   the load, from the agent's start                    [default 45]
  --slice <seconds>      the figures are given per slice of this length      [default 5]
  --clients <n>          clients of the lock loop, distinct keys             [default 64]
  --cluster              three nodes over three nats-servers (the load spread over them) instead of one
  --agent-dir <dir>      run the agent of this checkout, already built (npm run build there)  [default this tree]
  --json <path>          results as JSON                  [default bench/results/gc-<time>.json]`;

function parseOptions(argv: string[]): Options {
  const values = parseBenchArgs(argv, {
    duration: { type: 'string' }, slice: { type: 'string' }, clients: { type: 'string' }, cluster: { type: 'boolean' }, 'agent-dir': { type: 'string' },
    json: { type: 'string' },
  });
  const agentDir = values['agent-dir'] === undefined ? undefined : resolve(values['agent-dir']);
  if (agentDir !== undefined && !existsSync(builtMainOf(agentDir))) throw new Error(`--agent-dir: ${builtMainOf(agentDir)} does not exist (run npm run build there)`);
  const o = {
    cluster: values.cluster === true,
    agentDir,
    durationS: seconds('duration', values.duration, 45, { max: 3_600 }),
    sliceS: seconds('slice', values.slice, 5, { max: 600 }),
    clients: count('clients', values.clients, 64, 1, 1024),
    jsonPath: resultsPath(values.json, 'gc'),
  };
  if (o.sliceS > o.durationS) throw new Error(`--slice: ${o.sliceS} s is longer than --duration (${o.durationS} s)`);
  return o;
}

const builtMainOf = (dir: string) => join(dir, 'dist/server/src/main.js');

/** One collection from a `--trace-gc-nvp` line, timed by when the bench read it. */
interface Collection {
  atMs: number;
  kind: 'scavenge' | 'full';
  pauseMs: number;
  keptBytes: number;
  promotedBytes: number;
}

/** The collections in a piece of `--trace-gc-nvp` output; a line split between pieces is completed by the next. */
class GcTrace {
  readonly collections: Collection[] = [];
  private partial = '';

  read(text: string, atMs: number): void {
    const lines = (this.partial + text).split('\n');
    this.partial = lines.pop()!;
    for (const line of lines) {
      const kind = /\bgc=(\w+)/.exec(line)?.[1];
      if (kind !== 's' && kind !== 'mc') continue;
      const field = (name: string) => Number(new RegExp(`\\b${name}=([\\d.]+)`).exec(line)?.[1] ?? Number.NaN);
      this.collections.push({
        atMs, kind: kind === 's' ? 'scavenge' : 'full', pauseMs: field('pause'),
        keptBytes: field('new_space_survived'), promotedBytes: field('promoted'),
      });
    }
  }
}

interface Slice {
  fromS: number;
  untilS: number;
  pairs: number;
  serverCpuUsPerPair: number;
  scavenges: number;
  keptKbMedian: number;
  promotedKbMedian: number;
  scavengePauseMsMedian: number;
  fullCollections: number;
  /** All collections' pauses in the slice, per second of it. */
  pauseMsPerS: number;
}

const median = (xs: readonly number[]) => {
  if (xs.length === 0) return Number.NaN;
  const s = [...xs].sort((a, b) => a - b);
  const mid = Math.floor(s.length / 2);
  return s.length % 2 === 1 ? s[mid]! : (s[mid - 1]! + s[mid]!) / 2;
};

/** The index the agent has applied up to (every lock step is one entry). */
async function indexOf(server: Server): Promise<number> {
  const res = await fetch(`${server.url}/v1/kv/gc-bench-probe?recurse`);
  await res.arrayBuffer();
  return Number(res.headers.get('x-consul-index'));
}

interface Mark { atMs: number; cpuS: number; index: number }

function sliceOf(from: Mark, until: Mark, startMs: number, collections: readonly Collection[]): Slice {
  const inside = collections.filter((c) => c.atMs >= from.atMs && c.atMs < until.atMs);
  const scavenges = inside.filter((c) => c.kind === 'scavenge');
  const pairs = (until.index - from.index) / 2;
  const spanS = (until.atMs - from.atMs) / 1000;
  return {
    fromS: (from.atMs - startMs) / 1000, untilS: (until.atMs - startMs) / 1000, pairs,
    serverCpuUsPerPair: pairs > 0 ? ((until.cpuS - from.cpuS) * 1e6) / pairs : Number.NaN,
    scavenges: scavenges.length,
    keptKbMedian: median(scavenges.map((c) => c.keptBytes)) / 1024,
    promotedKbMedian: median(scavenges.map((c) => c.promotedBytes)) / 1024,
    scavengePauseMsMedian: median(scavenges.map((c) => c.pauseMs)),
    fullCollections: inside.length - scavenges.length,
    pauseMsPerS: inside.reduce((n, c) => n + c.pauseMs, 0) / spanS,
  };
}

const fixed = (x: number, digits: number) => (Number.isFinite(x) ? x.toFixed(digits) : '-');

function sliceText(s: Slice): string {
  return [
    `${fixed(s.fromS, 0).padStart(4)}–${fixed(s.untilS, 0).padEnd(4)} s`,
    fixed(s.pairs / (s.untilS - s.fromS), 0).padStart(8),
    fixed(s.serverCpuUsPerPair, 1).padStart(9),
    String(s.scavenges).padStart(10),
    fixed(s.keptKbMedian, 0).padStart(9),
    fixed(s.promotedKbMedian, 0).padStart(13),
    fixed(s.scavengePauseMsMedian, 2).padStart(10),
    String(s.fullCollections).padStart(6),
    fixed(s.pauseMsPerS, 1).padStart(11),
  ].join(' ');
}

/** What runs under the load: one agent, or three nodes and their nats-servers; each agent's GC trace. */
interface System {
  agents: Server[];
  traces: GcTrace[];
  stop(): Promise<void>;
}

let system: System | undefined;

async function startSystem(o: Options): Promise<System> {
  const traces: GcTrace[] = [];
  const optionsOf = () => {
    const trace = new GcTrace();
    traces.push(trace);
    return {
      nodeArgs: ['--trace-gc-nvp'], onStdout: (text: string) => trace.read(text, performance.now()),
      ...(o.agentDir === undefined ? {} : { entry: builtMainOf(o.agentDir) }),
    };
  };
  if (!o.cluster) {
    const server = await startRoster([], tmpdir(), optionsOf());
    return { agents: [server], traces, stop: async () => { await stopAndReport(server); } };
  }
  const cluster = await startRosterCluster(tmpdir(), optionsOf);
  return { agents: cluster.nodes, traces, stop: () => cluster.stop() };
}

/** The scavenges before and after each agent's first full collection under the load, all agents together. */
function aroundFirstFull(traces: readonly GcTrace[], startMs: number): { firstFullS: number[]; before: Collection[]; after: Collection[] } {
  const firstFullS: number[] = [];
  const before: Collection[] = [];
  const after: Collection[] = [];
  for (const t of traces) {
    const under = t.collections.filter((c) => c.atMs > startMs);
    const first = under.find((c) => c.kind === 'full');
    if (first !== undefined) firstFullS.push((first.atMs - startMs) / 1000);
    for (const c of under) if (c.kind === 'scavenge') (first === undefined || c.atMs < first.atMs ? before : after).push(c);
  }
  return { firstFullS, before, after };
}

async function main(): Promise<number> {
  const o = benchOptions(usage, parseOptions);
  return runBench(async (run) => {
    const { commit, srcChanged } = revision();
    const which = o.agentDir === undefined ? `commit ${commit}${srcChanged ? ' (src/ has uncommitted changes)' : ''}` : `the agent built in ${o.agentDir}`;
    console.log(`roster gc  ${new Date().toISOString()}  ${which}`);
    const m = describeMachine(tmpdir());
    console.log(`machine: cpu ${m.cpu} x${m.cores}, node ${m.node}, ${m.platform}; data dirs under ${m.dataParent} (${m.dataFs}); ${o.agentDir === undefined ? agentDescription() : 'compiled agent'}`);
    const shape = o.cluster ? 'three nodes over three nats-servers (µs/pair: the three nodes\' CPU, the nats-servers\' not counted; collections: the three nodes\')' : 'one node';
    console.log(`load: ${o.clients} clients of the lock loop on distinct keys for ${o.durationS} s from the start; ${shape}; the agents run with --trace-gc-nvp`);
    system = await startSystem(o);
    const { agents, traces } = system;
    const driver = new RosterDriver({ urls: agents.map((a) => a.url), connectionsPerNode: Math.ceil(o.clients / agents.length), contention: 'retry' });
    const startMs = performance.now();
    const marks: Mark[] = [];
    const mark = async () => {
      const atMs = performance.now();
      const cpuS = agents.reduce((n, a) => n + cpuSecondsOf(a.pid), 0);
      marks.push({ atMs, cpuS, index: await indexOf(agents[0]!) });
    };
    await mark();
    const sliceCount = Math.floor(o.durationS / o.sliceS);
    const timers = Array.from({ length: sliceCount }, (_, k) => setTimeout(() => void mark(), (k + 1) * o.sliceS * 1000));
    const row = await runRow(driver, 'distinct', o.clients, { durationS: o.durationS, warmupMs: 0, sharedLatencyFrom: 'lock', keyPrefix: 'gc-bench', stopped: () => run.interrupted() });
    for (const t of timers) clearTimeout(t);
    if (run.interrupted()) return 130;
    if (row.errors > 0) run.fail(`${row.errors} lock steps failed, the first: ${row.firstError}`);
    marks.sort((a, b) => a.atMs - b.atMs);
    const collections = traces.flatMap((t) => t.collections);
    const slices = marks.slice(1).map((until, k) => sliceOf(marks[k]!, until, startMs, collections));
    console.log(`${'slice'.padEnd(11)} ${'pairs/s'.padStart(8)} ${'µs/pair'.padStart(9)} ${'scavenges'.padStart(10)} ${'kept KB'.padStart(9)} ${'promoted KB'.padStart(13)} ${'pause ms'.padStart(10)} ${'full'.padStart(6)} ${'pause ms/s'.padStart(11)}`);
    for (const s of slices) console.log(sliceText(s));
    const { firstFullS, before, after } = aroundFirstFull(traces, startMs);
    const kb = (cs: Collection[], f: (c: Collection) => number) => fixed(median(cs.map(f)) / 1024, 0);
    console.log(firstFullS.length === 0
      ? `no full collection under the load; scavenges kept ${kb(before, (c) => c.keptBytes)} KB and promoted ${kb(before, (c) => c.promotedBytes)} KB (medians)`
      : `first full collection under the load at ${firstFullS.map((t) => `${fixed(t, 1)} s`).join(', ')}; scavenges before it kept ${kb(before, (c) => c.keptBytes)} KB and promoted ${kb(before, (c) => c.promotedBytes)} KB, after it ${kb(after, (c) => c.keptBytes)} KB and ${kb(after, (c) => c.promotedBytes)} KB (medians)`);
    console.log(`overall: ${fixed(row.pairsPerS, 0)} pairs/s, p99 ${fixed(row.p99Ms, 2)} ms`);
    const own = o.agentDir === undefined ? { commit, srcChanged } : {};
    writeFileSync(o.jsonPath, `${JSON.stringify({ at: new Date().toISOString(), ...own, options: { ...o, jsonPath: undefined }, slices, firstFullS, pairsPerS: row.pairsPerS, p99Ms: row.p99Ms }, null, 2)}\n`);
    console.log(`results: ${o.jsonPath}`);
  }, async () => {
    await system?.stop();
    system = undefined;
  });
}

process.exitCode = await main();
