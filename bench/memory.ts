/**
 * Memory and start-up bench: `npm run bench:memory [-- options]`.
 *
 * Starts a real Roster process (node --import tsx src/main.ts, its own temporary data dir, free ports) and
 *   1. loads --keys KV entries of 100 bytes (`PUT /v1/kv/mem/<i>`) and --sessions sessions
 *      (`PUT /v1/session/create`, TTL 24h so none expires during the run) over --concurrency keep-alive
 *      connections, with progress (rate, ETA) on stderr every 5 s;
 *   2. reads the agent's RSS from /proc/<pid>/status and its own view (`GET /v1/agent/self` Stats.runtime:
 *      rss, heap used/total, external) 4 s after the load, and again once the agent, left idle, has run a
 *      full collection and its RSS is steady (at most --idle seconds): the target applies to that idle
 *      reading, what holding the data costs; the peak RSS is printed too. Then the data dir's size;
 *   3. stops it with SIGTERM (it takes a shutdown snapshot), starts it again on the same data dir and times
 *      spawn → ready line and spawn → first `GET /v1/kv/mem/0` answering the right value, then checks a
 *      random sample of values, the full key count and every session id, and reads the memory again;
 *   4. writes --tail more keys (fewer than --snapshot-every, so they exist only in the WAL), SIGKILLs it
 *      and times the same recovery without a shutdown snapshot, with the same checks plus the tail.
 * It prints a table with the targets of the issue (≤ 1 GB RSS, ≤ 15 s from spawn to serving) marked met or
 * missed and writes every figure as JSON. See bench/README.md for what each figure means.
 */
import { execFileSync } from 'node:child_process';
import { mkdirSync, mkdtempSync, readdirSync, readFileSync, rmSync, statfsSync, statSync, writeFileSync } from 'node:fs';
import { cpus, tmpdir } from 'node:os';
import { dirname, join, resolve } from 'node:path';
import { performance } from 'node:perf_hooks';
import { setTimeout as sleep } from 'node:timers/promises';
import { parseArgs } from 'node:util';
import { Pool } from 'undici';
import { mulberry32 } from '../test/support/prng.ts';
import { benchOptions, exitOnInterrupt, formatRow, startRoster, type Server } from './server.ts';

const valueBytes = 100;
/** The targets: resident memory with the full load held, and spawn → serving after a restart. */
const rssTargetBytes = 1e9;
const restartTargetMs = 15_000;
/** Memory is read this long after the load's last answer, and once more after as long again. */
const settleMs = 2_000;
/** Then, with the agent idle, every this long (memoryReadings) until it is steady or --idle seconds passed. */
const idlePollMs = 5_000;
/** "V8 has run a full collection": heap used below this share of the settled reading. */
const gcDropRatio = 0.8;
/** "RSS is steady": this many readings within this ratio of each other. */
const idleSteadyReadings = 3;
const rssSteadyRatio = 0.02;
const progressEveryMs = 5_000;
/** A request with no answer for this long fails instead of hanging the bench (session list is tens of MB). */
const requestTimeoutMs = 30_000;
/** 503 (writes in flight) and 429 (per-client cap) are back-pressure, not failures: retried this often. */
const overloadRetriesMax = 5;
/** A restart gets this long to print its ready line and to answer the first read: 8× the target, so a miss is still measured. */
const recoveryTimeoutMs = 120_000;
/**
 * SIGTERM → exit may take this long before SIGKILL: the shutdown snapshot of a 1M-key state took about 10 s
 * (server.ts's default), and a kill there would turn the clean restart into a crash restart.
 */
const stopTimeoutMs = 120_000;
/** Between polls of the first read after a restart. */
const firstGetPollMs = 10;
/** Roster's default --snapshot-every; the WAL-only tail must stay below it. */
const snapshotEveryDefault = 20_000;
const repoRoot = resolve(import.meta.dirname, '..');

// ---------------------------------------------------------------- options

interface Options {
  keys: number;
  sessions: number;
  concurrency: number;
  sample: number;
  tail: number;
  seed: number;
  timeoutS: number;
  idleS: number;
  dataParent: string;
  json: string;
}

const usage = `usage: npm run bench:memory -- [options]
  --keys <n>             KV entries of ${valueBytes} bytes loaded                         [default 1000000]
  --sessions <n>         sessions created (TTL 24h, LockDelay 0s)                   [default 100000]
  --concurrency <n>      HTTP connections (requests in flight) during the load       [default 64]
  --sample <n>           random keys read back after each restart                    [default 1000]
  --tail <n>             keys written after the clean restart, before SIGKILL        [default 10000]
  --seed <n>             seed of the key sample                                      [default: time]
  --timeout <seconds>    the whole run must end within this                          [default 2400]
  --idle <seconds>       after the load and each restart, how long the agent is left idle at most
                         while waiting for V8's full collection (memory read every 5 s) [default 120]
  --data-parent <dir>    where the temporary data dir is made                        [default: os.tmpdir()]
  --json <path>          where the JSON results go       [default bench/results/memory-<ISO time>.json]`;

function count(name: string, raw: string | undefined, dflt: number, min: number, max: number): number {
  const n = Number(raw ?? String(dflt));
  if (!Number.isInteger(n) || n < min || n > max) throw new Error(`--${name}: "${raw}" is not a whole number from ${min} to ${max}`);
  return n;
}

function parseOptions(argv: string[]): Options {
  const { values } = parseArgs({
    args: argv, strict: true, allowPositionals: false,
    options: {
      keys: { type: 'string' }, sessions: { type: 'string' }, concurrency: { type: 'string' },
      sample: { type: 'string' }, tail: { type: 'string' }, seed: { type: 'string' }, timeout: { type: 'string' },
      idle: { type: 'string' }, 'data-parent': { type: 'string' }, json: { type: 'string' },
      help: { type: 'boolean', short: 'h' },
    },
  });
  const stamp = new Date().toISOString().replace(/[:.]/g, '-');
  const tail = count('tail', values.tail, 10_000, 0, 10_000_000);
  // More tail writes than --snapshot-every would let a periodic snapshot cover them: the crash restart would
  // no longer show what replaying the WAL costs.
  if (tail >= snapshotEveryDefault) throw new Error(`--tail: keep it below Roster's --snapshot-every (${snapshotEveryDefault}) so the tail is only in the WAL`);
  return {
    keys: count('keys', values.keys, 1_000_000, 1, 50_000_000),
    sessions: count('sessions', values.sessions, 100_000, 0, 10_000_000),
    concurrency: count('concurrency', values.concurrency, 64, 1, 4096),
    sample: count('sample', values.sample, 1_000, 1, 1_000_000),
    tail,
    seed: count('seed', values.seed, Date.now() % 2 ** 31, 0, 2 ** 31 - 1),
    timeoutS: count('timeout', values.timeout, 2_400, 1, 86_400),
    idleS: count('idle', values.idle, 120, 0, 3_600),
    dataParent: values['data-parent'] ?? tmpdir(),
    json: values.json ?? join(repoRoot, 'bench', 'results', `memory-${stamp}.json`),
  };
}

// ---------------------------------------------------------------- HTTP

interface Answer { status: number; text: string; retryAfter: string | undefined }

/** 503/429 answers retried over the whole run (every client): how often the server pushed back. */
let retriedTotal = 0;

class Http {
  private readonly pool: Pool;
  constructor(base: string, connections: number) {
    this.pool = new Pool(base, {
      connections, pipelining: 1,
      keepAliveTimeout: 60_000, keepAliveMaxTimeout: 600_000,
      headersTimeout: requestTimeoutMs, bodyTimeout: requestTimeoutMs, connectTimeout: requestTimeoutMs,
    });
  }

  async send(method: 'GET' | 'PUT', path: string, body?: string, json = false): Promise<Answer> {
    for (let attempt = 0; ; attempt++) {
      const res = await this.pool.request({
        method, path, ...(body !== undefined ? { body } : {}),
        ...(json ? { headers: { 'content-type': 'application/json' } } : {}),
      });
      const retryAfter = res.headers['retry-after'];
      const a = { status: res.statusCode, text: await res.body.text(), retryAfter: Array.isArray(retryAfter) ? retryAfter[0] : retryAfter };
      if ((a.status !== 503 && a.status !== 429) || attempt >= overloadRetriesMax) return a;
      retriedTotal++;
      await sleep(Math.min(5_000, 1_000 * (Number(a.retryAfter) || 1)));
    }
  }

  close(): Promise<void> {
    return this.pool.close();
  }

  /** Ends every request in flight at once (a timeout or interrupt must not wait for them). */
  destroy(): Promise<void> {
    return this.pool.destroy();
  }
}

const describe = (what: string, a: Answer) => `${what}: HTTP ${a.status} ${a.text.trim().slice(0, 200)}`;

// ---------------------------------------------------------------- what is written

const filler = 'abcdefghijklmnopqrstuvwxyz0123456789'.repeat(3);

/** The value of key `<prefix>/<i>`: unique per key (so a read proves the right entry came back), ASCII, 100 bytes. */
function valueOf(prefix: string, i: number): string {
  const head = `${prefix}/${i}:`;
  return head + filler.slice(0, valueBytes - head.length);
}

/** The seeded generator (mulberry32), so a printed seed reproduces the sample. */
const random = mulberry32;

// ---------------------------------------------------------------- running many requests

interface Phase { count: number; seconds: number; perS: number }

const duration = (s: number) => (s >= 60 ? `${Math.floor(s / 60)}m${String(Math.round(s % 60)).padStart(2, '0')}s` : `${s.toFixed(0)}s`);

/**
 * Runs `one(i)` for every i below `total` on `workers` concurrent loops, printing progress to stderr every
 * 5 s when `label` is given. The first failure stops every loop and is thrown; so is `stopped()`.
 */
async function runAll(label: string | undefined, total: number, workers: number, one: (i: number) => Promise<void>, stopped: () => boolean): Promise<Phase> {
  let next = 0;
  let done = 0;
  let failure: unknown;
  const t0 = performance.now();
  let lastAt = t0;
  let lastDone = 0;
  const timer = label === undefined ? undefined : setInterval(() => {
    const now = performance.now();
    const rate = done / ((now - t0) / 1000);
    const recent = (done - lastDone) / ((now - lastAt) / 1000);
    lastAt = now;
    lastDone = done;
    // The ETA uses the whole phase's rate: the last 5 s may fall on a pause (a snapshot) and say hours.
    process.stderr.write(`  ${label} ${done}/${total}  ${rate.toFixed(0)}/s (last 5 s ${recent.toFixed(0)}/s)  ETA ${rate > 0 ? duration((total - done) / rate) : '?'}\n`);
  }, progressEveryMs);
  const loop = async () => {
    while (failure === undefined && !stopped()) {
      const i = next++;
      if (i >= total) return;
      try {
        await one(i);
        done++;
      } catch (err) {
        failure ??= err;
      }
    }
  };
  try {
    await Promise.all(Array.from({ length: Math.min(workers, total) }, loop));
  } finally {
    if (timer !== undefined) clearInterval(timer);
  }
  if (failure !== undefined) throw failure;
  if (done < total) throw new Error(`${label ?? 'requests'}: stopped after ${done} of ${total}`);
  const seconds = (performance.now() - t0) / 1000;
  return { count: total, seconds, perS: total / seconds };
}

// ---------------------------------------------------------------- measuring

interface Memory {
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

async function readMemory(http: Http, pid: number): Promise<Memory> {
  const a = await http.send('GET', '/v1/agent/self');
  if (a.status !== 200) throw new Error(describe('agent self', a));
  const rt = ((JSON.parse(a.text) as { Stats?: { runtime?: Record<string, string> } }).Stats?.runtime) ?? {};
  const proc = procMemory(pid);
  return {
    vmRssBytes: proc.rss, vmHwmBytes: proc.hwm,
    agentRssBytes: Number(rt.rss_bytes), heapUsedBytes: Number(rt.heap_used_bytes),
    heapTotalBytes: Number(rt.heap_total_bytes), externalBytes: Number(rt.external_bytes),
  };
}

interface Readings {
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
async function memoryReadings(http: Http, pid: number, idleS: number): Promise<Readings> {
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

interface DiskUse { bytes: number; parts: Record<string, number> }

/** Apparent size of every file under `dir`, in total and per top-level entry (`wal/`, `snap/`, `node-id`, ...). */
function diskUse(dir: string): DiskUse {
  const sizeOf = (path: string): number => {
    const st = statSync(path);
    if (!st.isDirectory()) return st.size;
    return readdirSync(path).reduce((n, name) => n + sizeOf(join(path, name)), 0);
  };
  const parts: Record<string, number> = {};
  for (const name of readdirSync(dir)) {
    const path = join(dir, name);
    parts[statSync(path).isDirectory() ? `${name}/` : name] = sizeOf(path);
  }
  return { bytes: Object.values(parts).reduce((a, b) => a + b, 0), parts };
}

/** The newest snapshot's index, from its file name (`snap/<index>.snap`); 0 when there is none. */
function newestSnapshotIndex(dataDir: string): number {
  try {
    return readdirSync(join(dataDir, 'snap')).map((n) => /^(\d+)\.snap$/.exec(n)?.[1]).filter((x) => x !== undefined)
      .reduce((m, x) => Math.max(m, Number(x)), 0);
  } catch {
    return 0;
  }
}

interface Recovered { atMs: number; index: number; keys: number; sessions: number }

/** The agent's `state recovered` log line: when (ms after spawn) and what the log and snapshot held. */
function recoveredLine(server: Server): Recovered | undefined {
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

// ---------------------------------------------------------------- checking what came back

interface Verification {
  sampled: number;
  sampleWrong: number;
  keysListed: number;
  sessionsListed: number;
  sessionsMissing: number;
  tailListed: number | undefined;
  tailSampleWrong: number | undefined;
  firstProblem: string | undefined;
}

const verificationOk = (v: Verification, o: Options, tail: boolean) =>
  v.sampleWrong === 0 && v.keysListed === o.keys && v.sessionsListed === o.sessions && v.sessionsMissing === 0
  && (!tail || (v.tailListed === o.tail && v.tailSampleWrong === 0));

async function listLength(http: Http, path: string): Promise<number> {
  const a = await http.send('GET', path);
  if (a.status === 404) return 0; // an empty prefix answers 404
  if (a.status !== 200) throw new Error(describe(`GET ${path}`, a));
  return (JSON.parse(a.text) as unknown[]).length;
}

/** Reads back `indices` of `<prefix>/<i>` (raw values) and counts the ones missing or wrong. */
async function checkValues(http: Http, prefix: string, indices: number[], o: Options, stopped: () => boolean, note: (p: string) => void): Promise<number> {
  let wrong = 0;
  await runAll(undefined, indices.length, o.concurrency, async (k) => {
    const i = indices[k]!;
    const a = await http.send('GET', `/v1/kv/${prefix}/${i}?raw`);
    if (a.status !== 200 || a.text !== valueOf(prefix, i)) {
      wrong++;
      note(describe(`${prefix}/${i}`, a));
    }
  }, stopped);
  return wrong;
}

async function verify(http: Http, o: Options, sessionIds: readonly string[], tail: boolean, stopped: () => boolean): Promise<Verification> {
  let firstProblem: string | undefined;
  const note = (p: string) => { firstProblem ??= p; };
  const next = random(o.seed);
  const indices = [0, o.keys - 1, ...Array.from({ length: Math.min(o.sample, o.keys) }, () => Math.floor(next() * o.keys))];
  const sampleWrong = await checkValues(http, 'mem', indices, o, stopped, note);
  const keysListed = await listLength(http, '/v1/kv/mem/?keys');
  if (keysListed !== o.keys) note(`${keysListed} keys listed under mem/, ${o.keys} written`);

  const a = await http.send('GET', '/v1/session/list');
  if (a.status !== 200) throw new Error(describe('session list', a));
  const listed = new Set((JSON.parse(a.text) as { ID: string }[]).map((s) => s.ID));
  const sessionsMissing = sessionIds.filter((id) => !listed.has(id)).length;
  if (sessionsMissing > 0) note(`${sessionsMissing} created sessions missing from the list`);

  let tailListed: number | undefined;
  let tailSampleWrong: number | undefined;
  if (tail) {
    tailListed = await listLength(http, '/v1/kv/memtail/?keys');
    if (tailListed !== o.tail) note(`${tailListed} keys listed under memtail/, ${o.tail} written`);
    const tailIndices = Array.from({ length: Math.min(o.sample, o.tail) }, () => Math.floor(next() * o.tail));
    tailSampleWrong = await checkValues(http, 'memtail', tailIndices, o, stopped, note);
  }
  return { sampled: indices.length, sampleWrong, keysListed, sessionsListed: listed.size, sessionsMissing, tailListed, tailSampleWrong, firstProblem };
}

// ---------------------------------------------------------------- restarts

interface Recovery {
  how: 'SIGTERM' | 'SIGKILL';
  /** Signal → exit of the previous process (SIGTERM: includes its shutdown snapshot). */
  stopMs: number;
  /** Set when SIGTERM did not end in exit code 0 (e.g. SIGKILL after stopTimeoutMs). */
  stopFailure: string | undefined;
  /** Newest snapshot on disk at the restart, and what the restart had to replay from the WAL on top of it. */
  snapshotIndex: number;
  replayedEntries: number | undefined;
  recovered: Recovered | undefined;
  /** Spawn → the `roster listening` line, and spawn → the first GET of mem/0 answering its value. */
  readyMs: number;
  firstGetMs: number;
  firstGetPolls: number;
  verification: Verification;
  memory: Readings;
}

// ---------------------------------------------------------------- output

const mb = (bytes: number) => (Number.isNaN(bytes) ? '-' : `${(bytes / 1e6).toFixed(1)} MB`);
const secs = (msVal: number) => `${(msVal / 1000).toFixed(2)} s`;
const verdict = (ok: boolean) => (ok ? 'met' : 'MISSED');

const cols = ['figure', 'value', 'target', ''] as const;
const widths = [50, 32, 9, 6];

/** The commit measured, and whether src/ differed from it (figures from uncommitted server code are not comparable). */
function revision(): { commit: string; srcChanged: boolean } {
  try {
    const git = (...args: string[]) => execFileSync('git', args, { cwd: repoRoot, encoding: 'utf8' }).trim();
    return { commit: git('rev-parse', '--short', 'HEAD'), srcChanged: git('status', '--porcelain', '--', 'src', 'machines') !== '' };
  } catch {
    return { commit: 'unknown', srcChanged: false };
  }
}

function fsTypeOf(dir: string): string {
  const names: Record<number, string> = { 0xef53: 'ext4', 0x58465342: 'xfs', 0x9123683e: 'btrfs', 0x01021994: 'tmpfs', 0x794c7630: 'overlayfs' };
  try {
    const t = statfsSync(dir).type;
    return names[t] ?? `0x${t.toString(16)}`;
  } catch {
    return 'unknown';
  }
}

function memoryRows(label: string, r: Readings): string[][] {
  const heap = (m: Memory) => `${mb(m.heapUsedBytes)} / ${mb(m.heapTotalBytes)} / ${mb(m.externalBytes)}`;
  return [
    [`RSS ${label}, ${settleMs * 2 / 1000} s later (VmRSS)`, mb(r.settled.vmRssBytes), '', ''],
    [`  heap used / total / external`, heap(r.settled), '', ''],
    [`RSS ${label}, idle ${r.idleAfterS.toFixed(0)} s more (VmRSS)`, mb(r.idle.vmRssBytes), '≤ 1 GB', verdict(r.idle.vmRssBytes <= rssTargetBytes)],
    [`  heap used / total / external`, heap(r.idle), '', ''],
    [`  peak RSS since spawn (VmHWM)`, mb(r.idle.vmHwmBytes), '', ''],
  ];
}

function recoveryRows(r: Recovery, o: Options): string[][] {
  const v = r.verification;
  const what = r.how === 'SIGTERM' ? 'restart after SIGTERM' : 'restart after SIGKILL';
  const rows = [
    [r.how === 'SIGTERM' ? 'SIGTERM → exit (shutdown snapshot)' : 'SIGKILL → exit', secs(r.stopMs), '', r.stopFailure === undefined ? '' : 'UNCLEAN'],
    [`${what}: spawn → ready line`, secs(r.readyMs), '≤ 15 s', verdict(r.readyMs <= restartTargetMs)],
    [`${what}: spawn → first right GET`, `${secs(r.firstGetMs)}`, '≤ 15 s', verdict(r.firstGetMs <= restartTargetMs)],
    [`  spawn → 'state recovered' log line`, r.recovered === undefined ? '-' : secs(r.recovered.atMs), '', ''],
    [`  snapshot index / WAL entries replayed`, `${r.snapshotIndex} / ${r.replayedEntries ?? '-'}`, '', ''],
    [`  sampled keys right`, `${v.sampled - v.sampleWrong}/${v.sampled}`, '', verdict(v.sampleWrong === 0)],
    [`  keys listed under mem/`, `${v.keysListed}/${o.keys}`, '', verdict(v.keysListed === o.keys)],
    [`  sessions listed / created missing`, `${v.sessionsListed} / ${v.sessionsMissing}`, '', verdict(v.sessionsListed === o.sessions && v.sessionsMissing === 0)],
  ];
  if (v.tailListed !== undefined) {
    rows.push([`  WAL-only tail keys listed / sampled wrong`, `${v.tailListed}/${o.tail} / ${v.tailSampleWrong}`, '', verdict(v.tailListed === o.tail && v.tailSampleWrong === 0)]);
  }
  return [...rows, ...memoryRows(`after ${r.how} restart`, r.memory)];
}

// ---------------------------------------------------------------- main

interface Results {
  options: Options;
  machine: { node: string; cpu: string; cpus: number; dataDirFs: string; commit: string; srcChanged: boolean };
  freshStartMs: number;
  load: { keys: Phase; sessions: Phase; tail: Phase | undefined; retried: number };
  afterLoad: Readings;
  diskAfterLoad: DiskUse;
  recoveries: Recovery[];
  targets: { rssBytesMax: number; restartMsMax: number; rssMet: boolean; restartMet: boolean };
  verified: boolean;
}

/** What a timeout or an interrupt has to clean up: the process running now (or starting) and the pool. */
interface Live {
  server: Server | undefined;
  starting: Promise<Server> | undefined;
  http: Http | undefined;
  stopped: boolean;
  phase: string;
}

async function launch(live: Live, parent: string, dataDir: string, readyTimeoutMs: number): Promise<Server> {
  // Once cleanup has begun nothing new may start: it would outlive the bench and recreate the removed data dir.
  if (live.stopped) throw new Error('stopped');
  live.starting = startRoster([], parent, { dataDir, keepDataDir: true, readyTimeoutMs, stopTimeoutMs });
  try {
    live.server = await live.starting;
  } finally {
    live.starting = undefined;
  }
  return live.server;
}

async function connect(live: Live, server: Server, o: Options): Promise<Http> {
  await live.http?.close();
  live.http = new Http(server.url, o.concurrency);
  return live.http;
}

/** Polls GET mem/0 until it answers its value; returns how many polls that took. */
async function firstRightRead(http: Http, server: Server, live: Live): Promise<number> {
  const want = valueOf('mem', 0);
  for (let polls = 1; ; polls++) {
    if (live.stopped) throw new Error('stopped');
    if (performance.now() - server.spawnedAt > recoveryTimeoutMs) throw new Error(`mem/0 not readable within ${recoveryTimeoutMs / 1000} s of the spawn`);
    try {
      const a = await http.send('GET', '/v1/kv/mem/0?raw');
      if (a.status === 200 && a.text === want) return polls;
    } catch { /* not accepting yet: poll again */ }
    await sleep(firstGetPollMs);
  }
}

async function restart(how: 'SIGTERM' | 'SIGKILL', live: Live, parent: string, dataDir: string, o: Options, sessionIds: string[], failures: string[]): Promise<Recovery> {
  const previous = live.server!;
  const stopAt = performance.now();
  let stopFailure: string | undefined;
  if (how === 'SIGTERM') {
    stopFailure = await previous.stop();
    if (stopFailure !== undefined) failures.push(stopFailure);
  } else {
    await previous.kill();
  }
  const stopMs = performance.now() - stopAt;
  live.server = undefined;
  const snapshotIndex = newestSnapshotIndex(dataDir);

  live.phase = `restarting after ${how}`;
  const server = await launch(live, parent, dataDir, recoveryTimeoutMs);
  const http = await connect(live, server, o);
  const firstGetPolls = await firstRightRead(http, server, live);
  const firstGetMs = performance.now() - server.spawnedAt;
  const recovered = recoveredLine(server);
  process.stdout.write(`restart after ${how}: ready ${secs(server.readyAt - server.spawnedAt)}, first right GET ${secs(firstGetMs)} after spawn; verifying\n`);

  live.phase = `verifying after the ${how} restart`;
  const verification = await verify(http, o, sessionIds, how === 'SIGKILL', () => live.stopped);
  if (!verificationOk(verification, o, how === 'SIGKILL')) failures.push(`after the ${how} restart: ${verification.firstProblem ?? 'counts differ'}`);
  live.phase = `reading memory after the ${how} restart`;
  const memory = await memoryReadings(http, server.pid, o.idleS);
  return {
    how, stopMs, stopFailure: stopFailure?.split('\n')[0], snapshotIndex,
    replayedEntries: recovered === undefined ? undefined : recovered.index - snapshotIndex,
    recovered, readyMs: server.readyAt - server.spawnedAt, firstGetMs, firstGetPolls, verification, memory,
  };
}

async function loadKeys(http: Http, prefix: string, total: number, o: Options, live: Live, label: string | undefined): Promise<Phase> {
  return runAll(label, total, o.concurrency, async (i) => {
    const a = await http.send('PUT', `/v1/kv/${prefix}/${i}`, valueOf(prefix, i));
    if (a.status !== 200 || a.text.trim() !== 'true') throw new Error(describe(`PUT ${prefix}/${i}`, a));
  }, () => live.stopped);
}

async function loadSessions(http: Http, o: Options, live: Live, ids: string[]): Promise<Phase> {
  const body = JSON.stringify({ TTL: '24h', LockDelay: '0s' });
  return runAll('sessions', o.sessions, o.concurrency, async () => {
    const a = await http.send('PUT', '/v1/session/create', body, true);
    if (a.status !== 200) throw new Error(describe('session create', a));
    const id = (JSON.parse(a.text) as { ID?: unknown }).ID;
    if (typeof id !== 'string' || id === '') throw new Error(describe('session create returned no ID', a));
    ids.push(id);
  }, () => live.stopped);
}

async function run(o: Options, live: Live, parent: string, failures: string[]): Promise<Results> {
  const dataDir = join(parent, 'data');
  const cpu = cpus();
  const machine = { node: process.version, cpu: cpu[0]?.model.trim() ?? 'unknown', cpus: cpu.length, dataDirFs: fsTypeOf(parent), ...revision() };
  process.stdout.write(`roster memory bench  commit ${machine.commit}${machine.srcChanged ? ' (src/ has uncommitted changes)' : ''}  node ${machine.node}  `
    + `cpu ${machine.cpu} x${machine.cpus}  data dir ${dataDir} (${machine.dataDirFs})\n`
    + `load: ${o.keys} keys of ${valueBytes} bytes (PUT /v1/kv/mem/<i>), ${o.sessions} sessions (TTL 24h, LockDelay 0s), `
    + `${o.concurrency} connections; sample ${o.sample} keys, seed ${o.seed}; WAL-only tail ${o.tail} keys\n`);

  live.phase = 'starting Roster';
  let server = await launch(live, parent, dataDir, recoveryTimeoutMs);
  const freshStartMs = server.readyAt - server.spawnedAt;
  let http = await connect(live, server, o);

  live.phase = 'loading keys';
  const keys = await loadKeys(http, 'mem', o.keys, o, live, 'keys');
  process.stdout.write(`loaded ${o.keys} keys in ${keys.seconds.toFixed(1)} s (${keys.perS.toFixed(0)}/s)\n`);
  live.phase = 'creating sessions';
  const sessionIds: string[] = [];
  const sessions = await loadSessions(http, o, live, sessionIds);
  process.stdout.write(`created ${o.sessions} sessions in ${sessions.seconds.toFixed(1)} s (${sessions.perS.toFixed(0)}/s)\n`);

  live.phase = 'reading memory after the load';
  const afterLoad = await memoryReadings(http, server.pid, o.idleS);
  const diskAfterLoad = diskUse(dataDir);

  const recoveries: Recovery[] = [];
  recoveries.push(await restart('SIGTERM', live, parent, dataDir, o, sessionIds, failures));
  server = live.server!;
  http = live.http!;

  live.phase = 'writing the WAL-only tail';
  const tail = o.tail > 0 ? await loadKeys(http, 'memtail', o.tail, o, live, 'tail') : undefined;
  recoveries.push(await restart('SIGKILL', live, parent, dataDir, o, sessionIds, failures));

  // The target is what holding the data costs: the idle readings. The ones right after the work are printed too.
  const rssMet = [afterLoad.idle, ...recoveries.map((r) => r.memory.idle)].every((m) => m.vmRssBytes <= rssTargetBytes);
  const restartMet = recoveries.every((r) => r.readyMs <= restartTargetMs && r.firstGetMs <= restartTargetMs);
  return {
    options: o, machine, freshStartMs,
    load: { keys, sessions, tail, retried: retriedTotal },
    afterLoad, diskAfterLoad, recoveries,
    targets: { rssBytesMax: rssTargetBytes, restartMsMax: restartTargetMs, rssMet, restartMet },
    verified: recoveries.every((r) => verificationOk(r.verification, o, r.how === 'SIGKILL')),
  };
}

function table(r: Results): string {
  const o = r.options;
  const rows: string[][] = [
    ['fresh start, empty data dir: spawn → ready line', secs(r.freshStartMs), '', ''],
    [`load ${o.keys} keys`, `${r.load.keys.seconds.toFixed(1)} s, ${r.load.keys.perS.toFixed(0)}/s`, '', ''],
    [`load ${o.sessions} sessions`, `${r.load.sessions.seconds.toFixed(1)} s, ${r.load.sessions.perS.toFixed(0)}/s`, '', ''],
    ...memoryRows('after load', r.afterLoad),
    ['data dir after load (apparent size)', mb(r.diskAfterLoad.bytes), '', ''],
    // The log and the snapshots; the node id and the bench's config file are a few bytes.
    ...Object.entries(r.diskAfterLoad.parts).filter(([name]) => name.endsWith('/')).map(([name, b]) => [`  ${name}`, mb(b), '', '']),
    ...r.recoveries.flatMap((x) => recoveryRows(x, o)),
  ];
  return [formatRow(cols, widths), ...rows.map((row) => formatRow(row, widths))].join('\n');
}

async function main(): Promise<number> {
  const o = benchOptions(usage, parseOptions);
  const parent = mkdtempSync(join(o.dataParent, 'roster-memory-'));
  const live: Live = { server: undefined, starting: undefined, http: undefined, stopped: false, phase: 'start' };
  const failures: string[] = [];

  // Whatever happens — success, an error, the overall timeout or Ctrl-C — the agent is stopped by its own
  // handle and the temporary data dir is removed. A clean end stops it with SIGTERM (and reports an unclean
  // exit); otherwise its data is thrown away, so SIGKILL is enough and does not wait on a shutdown snapshot.
  let cleaned: Promise<void> | undefined;
  const cleanup = (clean: boolean) => cleaned ??= (async () => {
    live.stopped = true;
    if (clean) await live.http?.close().catch(() => {});
    else await live.http?.destroy().catch(() => {});
    const starting = await live.starting?.catch(() => undefined);
    const server = live.server ?? starting;
    if (server !== undefined) {
      if (clean) {
        const failure = await server.stop();
        if (failure !== undefined) failures.push(failure);
      } else {
        await server.kill();
      }
    }
    rmSync(parent, { recursive: true, force: true });
  })();
  const interrupted = exitOnInterrupt(() => cleanup(false));

  let overall: NodeJS.Timeout | undefined;
  const timedOut = new Promise<never>((_, reject) => {
    overall = setTimeout(() => reject(new Error(
      `overall timeout: not finished within ${o.timeoutS} s (while ${live.phase}); raise --timeout or lower --keys/--sessions`)), o.timeoutS * 1000);
  });
  try {
    const results = await Promise.race([run(o, live, parent, failures), timedOut]);
    await cleanup(true);
    process.stdout.write(`\n${table(results)}\n`);
    process.stdout.write(`\ntargets: RSS ≤ 1 GB ${verdict(results.targets.rssMet)}; restart to serving ≤ 15 s ${verdict(results.targets.restartMet)}; `
      + `data after both restarts ${results.verified ? 'complete' : 'INCOMPLETE'}; 503/429 retried ${results.load.retried}\n`);
    mkdirSync(dirname(o.json), { recursive: true });
    writeFileSync(o.json, `${JSON.stringify({ ...results, failures }, null, 2)}\n`);
    process.stdout.write(`results: ${o.json}\n`);
  } catch (err) {
    // An interrupt's cleanup is already running (the same promise): the run failing under it must not exit first.
    if (interrupted()) {
      await cleanup(false);
      return 130;
    }
    failures.push(err instanceof Error ? err.message : String(err));
    await cleanup(false);
  } finally {
    clearTimeout(overall);
  }
  for (const f of failures) process.stderr.write(`bench: ${f}\n`);
  return failures.length > 0 ? 1 : 0;
}

const code = await main();
// A timeout can leave requests or polls of the abandoned run pending; the agent is gone and its data removed.
process.exit(code);
