/**
 * bench:soak's `restore` mode: backup and restore of a large registry through the public interface, with
 * really started agents (bench/server.ts):
 *   1. a source agent is loaded with --restore-keys keys (`PUT /v1/txn`, 64 sets per request, 8 requests
 *      in flight; each value about 70 bytes of JSON, unique to its key);
 *   2. `GET /v1/snapshot` is saved to a file: its size and the save time (request sent → last byte written),
 *      the agent's CPU time and memory around it; the source agent is then stopped;
 *   3. for each target of --restore-into: a fresh agent, or a fresh 3-node cluster (three nats-servers,
 *      bench/peers/roster-cluster.ts), gets the file in `PUT /v1/snapshot` (on its first node): the
 *      restore time (request sent → answer), the time until a consistent read of the last key answers its
 *      value on each node (from the same start), each node's memory (VmRSS, VmHWM) before and after and
 *      the CPU time it used meanwhile (on a shared machine the wall time includes waiting for a core);
 *   4. each node is checked: the key count (`?keys`) equals the keys loaded and a seeded sample of values
 *      (the first and the last key among them) reads back right.
 * The load stops at --seconds, reached or not: the rest runs on the keys written by then (printed). A wrong
 * count or value, an error answer, or an agent that does not stop cleanly on SIGTERM fails the run.
 */
import { createWriteStream, readFileSync, statSync } from 'node:fs';
import { readFile } from 'node:fs/promises';
import { loadavg } from 'node:os';
import { join } from 'node:path';
import { performance } from 'node:perf_hooks';
import { pipeline } from 'node:stream/promises';
import { setTimeout as sleep } from 'node:timers/promises';
import { request } from 'undici';
import { mulberry32 } from '../src/util/prng.ts';
import { describeAnswer, Http, runAll } from './memory/http.ts';
import { startRosterCluster, type RosterCluster } from './peers/roster-cluster.ts';
import { startRoster, type Server } from './server.ts';

export const restoreTargets = ['single', 'cluster'] as const;
export type RestoreTarget = (typeof restoreTargets)[number];

export interface RestoreOptions {
  keys: number;
  seconds: number;
  into: RestoreTarget[];
}

/** Sets per transaction: the most `PUT /v1/txn` takes. */
const opsPerTxn = 64;
/** Transactions in flight while loading: enough to keep the agent's group commit busy on two cores. */
const txnsInFlight = 8;
/** Values read back on each node after the restore, besides the first and the last key. */
const sampleSize = 1000;
const sampleSeed = 0x5eed;
/** Starting, saving, restoring and reading a 1M-key state: bounds for a wedged agent, not for a slow one. */
const readyTimeoutMs = 120_000;
const stopTimeoutMs = 120_000;
const snapshotTimeoutMs = 600_000;
const firstReadTimeoutMs = 300_000;
const progressEveryMs = 5_000;

const prefix = 'soak/restore/';
const keyOf = (i: number) => `${prefix}${String(i).padStart(8, '0')}`;

/** A small service record, unique to key `i` (so a read proves the right entry came back): about 70 bytes. */
function restoreValueOf(i: number): string {
  return JSON.stringify({ id: `svc-${i}`, addr: `10.${(i >> 16) & 255}.${(i >> 8) & 255}.${i & 255}:8080`, tags: ['primary', 'v2'], w: i % 100 });
}

const mib = (bytes: number) => `${(bytes / 1024 / 1024).toFixed(1)} MiB`;
const secs = (msVal: number) => `${(msVal / 1000).toFixed(2)} s`;

interface Usage { rss: number; hwm: number; cpuS: number }

/** Clock ticks per second of /proc/<pid>/stat's times (USER_HZ, 100 on Linux). */
const ticksPerS = 100;

/**
 * VmRSS and VmHWM (its peak since the start) of `pid` in bytes, and the CPU time it has used (user +
 * system, seconds), from /proc (NaN off Linux). The CPU time tells the work apart from the wait on a
 * shared machine.
 */
function usageOf(pid: number): Usage {
  try {
    const status = readFileSync(`/proc/${pid}/status`, 'utf8');
    const kb = (name: string) => Number(new RegExp(`^${name}:\\s+(\\d+) kB`, 'm').exec(status)?.[1] ?? Number.NaN) * 1024;
    // The fields after the command name's closing parenthesis: utime and stime are the 12th and 13th.
    const stat = readFileSync(`/proc/${pid}/stat`, 'utf8');
    const fields = stat.slice(stat.lastIndexOf(')') + 2).split(' ');
    return { rss: kb('VmRSS'), hwm: kb('VmHWM'), cpuS: (Number(fields[11]) + Number(fields[12])) / ticksPerS };
  } catch {
    return { rss: Number.NaN, hwm: Number.NaN, cpuS: Number.NaN };
  }
}

/** What the mode has running, so an interrupt or a failure stops it: agents, clusters and their HTTP pools. */
export class RestoreLive {
  private readonly stops: (() => Promise<string | undefined | void>)[] = [];
  stopped = false;

  /** Registers what `start` made; when the bench is already stopping it is stopped at once and this throws. */
  async track<T>(start: Promise<T>, stop: (t: T) => Promise<string | undefined | void>): Promise<T> {
    const t = await start;
    this.stops.push(() => stop(t));
    if (this.stopped) {
      await this.stopAll();
      throw new Error('stopped');
    }
    return t;
  }

  /** The bench is stopping (interrupt, failure): stops everything registered, and whatever is registered later. */
  async stopAll(): Promise<void> {
    this.stopped = true;
    await this.release();
  }

  /**
   * Stops everything registered so far, newest first. Returns the failures to stop cleanly (an agent that
   * did not exit 0 on SIGTERM within stopTimeoutMs), their first lines; the whole of each goes to stderr.
   */
  async release(): Promise<string[]> {
    const failures: string[] = [];
    for (let stop = this.stops.pop(); stop !== undefined; stop = this.stops.pop()) {
      const failure = await stop().then((f) => f ?? undefined, (err: unknown) => (err instanceof Error ? err.message : String(err)));
      if (failure === undefined) continue;
      process.stderr.write(`bench: ${failure}\n`);
      failures.push(failure.split('\n')[0]!);
    }
    return failures;
  }
}

// ---------------------------------------------------------------- load and save

function txnBody(from: number, to: number): string {
  const ops = [];
  for (let i = from; i < to; i++) ops.push({ KV: { Verb: 'set', Key: keyOf(i), Value: Buffer.from(restoreValueOf(i)).toString('base64') } });
  return JSON.stringify(ops);
}

/** Writes keys 0.. in transactions until `total` or `deadline`; returns how many (always a prefix 0..n-1). */
async function load(http: Http, total: number, deadline: number, live: RestoreLive): Promise<{ keys: number; ms: number }> {
  const txns = Math.ceil(total / opsPerTxn);
  const t0 = performance.now();
  let next = 0;
  let done = 0;
  let failure: unknown;
  const timer = setInterval(() => {
    const rate = (done * opsPerTxn) / ((performance.now() - t0) / 1000);
    process.stderr.write(`  loading ${Math.min(total, done * opsPerTxn)}/${total} keys, ${rate.toFixed(0)}/s\n`);
  }, progressEveryMs);
  const worker = async () => {
    while (next < txns && Date.now() < deadline && failure === undefined && !live.stopped) {
      const t = next++;
      const a = await http.send('PUT', '/v1/txn', txnBody(t * opsPerTxn, Math.min(total, (t + 1) * opsPerTxn)), true)
        .catch((err: unknown) => { failure ??= err; });
      if (a === undefined) return;
      if (a.status !== 200) failure ??= new Error(describeAnswer(`txn ${t}`, a));
      else done++;
    }
  };
  try {
    await Promise.all(Array.from({ length: txnsInFlight }, worker));
  } finally {
    clearInterval(timer);
  }
  if (failure !== undefined) throw failure;
  if (live.stopped) throw new Error('stopped');
  return { keys: Math.min(total, next * opsPerTxn), ms: performance.now() - t0 };
}

/** `GET /v1/snapshot` into `file`: the time from the request to the last byte written, the size, the index. */
async function save(url: string, file: string): Promise<{ ms: number; bytes: number; index: string }> {
  const t0 = performance.now();
  const res = await request(`${url}/v1/snapshot`, { method: 'GET', headersTimeout: snapshotTimeoutMs, bodyTimeout: snapshotTimeoutMs });
  if (res.statusCode !== 200) throw new Error(`GET /v1/snapshot: HTTP ${res.statusCode} ${(await res.body.text()).slice(0, 200)}`);
  await pipeline(res.body, createWriteStream(file));
  const index = res.headers['x-consul-index'];
  return { ms: performance.now() - t0, bytes: statSync(file).size, index: String(Array.isArray(index) ? index[0] : index) };
}

/**
 * Source agent: loaded, saved, stopped. Returns the keys written (a prefix of the --restore-keys asked for)
 * and a failure to stop it cleanly.
 */
async function makeSnapshot(o: RestoreOptions, parent: string, file: string, live: RestoreLive): Promise<{ keys: number; problems: string[] }> {
  const deadline = Date.now() + o.seconds * 1000;
  const source = await live.track(startRoster([], parent, { readyTimeoutMs, stopTimeoutMs }), (s) => s.stop());
  const http = await live.track(Promise.resolve(new Http(source.url, txnsInFlight)), (h) => h.close());
  const loaded = await load(http, o.keys, deadline, live);
  const cut = loaded.keys < o.keys ? ` (the load stopped at --seconds ${o.seconds}, before ${o.keys})` : '';
  process.stdout.write(`  load      ${loaded.keys} keys in transactions of ${opsPerTxn} (${txnsInFlight} in flight): `
    + `${secs(loaded.ms)}, ${(loaded.keys / (loaded.ms / 1000)).toFixed(0)} keys/s${cut}\n`);
  const before = usageOf(source.pid);
  const saved = await save(source.url, file);
  const after = usageOf(source.pid);
  process.stdout.write(`  save      GET /v1/snapshot: ${mib(saved.bytes)} (index ${saved.index}) in ${secs(saved.ms)}; the agent used `
    + `CPU ${(after.cpuS - before.cpuS).toFixed(1)} s meanwhile, VmRSS ${mib(before.rss)} before, ${mib(after.rss)} after\n`);
  const problems = (await live.release()).map((f) => `source agent: ${f}`);
  return { keys: loaded.keys, problems };
}

// ---------------------------------------------------------------- restore and verify

/** Polls a consistent read of the last key on `url` until it answers its value; ms since `t0`. */
async function firstRead(http: Http, keys: number, t0: number): Promise<number> {
  const want = restoreValueOf(keys - 1);
  for (;;) {
    const a = await http.send('GET', `/v1/kv/${keyOf(keys - 1)}?raw&consistent`).catch(() => undefined);
    if (a?.status === 200 && a.text === want) return performance.now() - t0;
    if (performance.now() - t0 > firstReadTimeoutMs) throw new Error(`the last key not read back within ${firstReadTimeoutMs / 1000} s of the restore`);
    await sleep(10);
  }
}

/** Keys whose values are read back on each node: the first, the last and a seeded sample. */
function sampleOf(keys: number): number[] {
  const next = mulberry32(sampleSeed);
  return [0, keys - 1, ...Array.from({ length: Math.min(sampleSize, keys) }, () => Math.floor(next() * keys))];
}

/** The problems of one node's state after the restore: key count and the sample's values. */
async function verify(http: Http, keys: number): Promise<string[]> {
  const problems: string[] = [];
  const a = await http.send('GET', `/v1/kv/${prefix}?keys`);
  const listed = a.status === 404 ? 0 : a.status === 200 ? (JSON.parse(a.text) as unknown[]).length : Number.NaN;
  if (listed !== keys) problems.push(Number.isNaN(listed) ? describeAnswer('key list', a) : `${listed} keys listed, ${keys} saved`);
  const sample = sampleOf(keys);
  await runAll(undefined, sample.length, txnsInFlight, async (k) => {
    const i = sample[k]!;
    const r = await http.send('GET', `/v1/kv/${keyOf(i)}?raw`);
    if (r.status !== 200 || r.text !== restoreValueOf(i)) problems.push(describeAnswer(`${keyOf(i)} read back wrong`, r));
  }, () => false);
  return problems;
}

/** Fresh nodes for `target`: one agent, or a 3-node cluster (its nats-servers included). */
async function freshNodes(target: RestoreTarget, parent: string, live: RestoreLive): Promise<Server[]> {
  if (target === 'single') return [await live.track(startRoster([], parent, { readyTimeoutMs, stopTimeoutMs }), (s) => s.stop())];
  const cluster = await live.track<RosterCluster>(startRosterCluster(parent, { readyTimeoutMs, stopTimeoutMs }), (c) => c.stop());
  return cluster.nodes;
}

/** Restores `file` into fresh nodes of `target`, prints what it measured; returns the problems found. */
async function restoreInto(target: RestoreTarget, file: string, keys: number, parent: string, live: RestoreLive): Promise<{ line: string; problems: string[] }> {
  const nodes = await freshNodes(target, parent, live);
  const pools = await Promise.all(nodes.map((n) => live.track(Promise.resolve(new Http(n.url, txnsInFlight)), (h) => h.close())));
  const body = await readFile(file);
  const before = nodes.map((n) => usageOf(n.pid));
  const t0 = performance.now();
  const res = await request(`${nodes[0]!.url}/v1/snapshot`, { method: 'PUT', body, headersTimeout: snapshotTimeoutMs, bodyTimeout: snapshotTimeoutMs });
  const answer = await res.body.text();
  const restoreMs = performance.now() - t0;
  if (res.statusCode !== 200) throw new Error(`PUT /v1/snapshot: HTTP ${res.statusCode} ${answer.slice(0, 200)}`);
  const readMs = await Promise.all(pools.map((p) => firstRead(p, keys, t0)));
  const after = nodes.map((n) => usageOf(n.pid));
  const name = (k: number) => (nodes.length === 1 ? 'agent' : `node ${k + 1}`);
  process.stdout.write(`  restore   PUT /v1/snapshot answered ${answer.trim()} in ${secs(restoreMs)}; consistent read of the last key answered after `
    + `${readMs.map((m, k) => `${secs(m)}${nodes.length === 1 ? '' : ` (${name(k)})`}`).join(', ')}\n`);
  for (const [k, b] of before.entries()) {
    const a = after[k]!;
    process.stdout.write(`  memory    ${name(k)}: VmRSS ${mib(b.rss)} before, ${mib(a.rss)} after; peak VmHWM ${mib(a.hwm)}; `
      + `CPU ${(a.cpuS - b.cpuS).toFixed(1)} s used meanwhile\n`);
  }
  const problems = (await Promise.all(pools.map(async (p, k) => (await verify(p, keys)).map((x) => `${name(k)}: ${x}`)))).flat();
  process.stdout.write(`  verify    ${problems.length === 0 ? `${keys} keys listed and ${sampleOf(keys).length} sampled values right on ${nodes.length === 1 ? 'the agent' : `each of the ${nodes.length} nodes`}`
    : `${problems.length} problems, the first: ${problems[0]}`}\n`);
  const line = `restore into ${target === 'single' ? 'one agent' : 'a 3-node cluster'}: ${keys} keys, answered in ${secs(restoreMs)}, `
    + `last key read after ${secs(Math.max(...readMs))}, peak VmHWM ${mib(Math.max(...after.map((m) => m.hwm)))}: ${problems.length === 0 ? 'verified' : 'WRONG'}`;
  problems.push(...(await live.release()).map((f) => `stopping the ${target === 'single' ? 'agent' : 'cluster'}: ${f}`));
  return { line, problems };
}

/**
 * The mode: one snapshot of a loaded agent, restored into each target of `o.into` in turn. Returns the
 * summary lines and the problems found (none when every node's count and sample were right).
 */
export async function restoreSoak(o: RestoreOptions, parent: string, live: RestoreLive): Promise<{ lines: string[]; problems: string[] }> {
  const file = join(parent, 'restore.snap');
  const into = o.into.map((t) => (t === 'single' ? 'a fresh agent' : 'a fresh 3-node cluster')).join(' and ');
  process.stdout.write(`restore: ${o.keys} keys into an agent, saved with GET /v1/snapshot, restored into ${into}\n`);
  const { keys, problems } = await makeSnapshot(o, parent, file, live);
  if (keys === 0) throw new Error(`no keys loaded within --seconds ${o.seconds}`);
  const lines: string[] = [];
  for (const target of o.into) {
    const what = target === 'single' ? 'a fresh agent' : 'a fresh 3-node cluster (3 nats-servers, R3)';
    process.stdout.write(`restore into ${what} (machine load average ${loadavg()[0]!.toFixed(1)}):\n`);
    const r = await restoreInto(target, file, keys, parent, live);
    lines.push(r.line);
    problems.push(...r.problems);
  }
  return { lines, problems };
}
