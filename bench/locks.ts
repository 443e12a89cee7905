/**
 * Lock throughput and latency bench: `npm run bench:locks [-- options]`.
 *
 * Starts a real Roster process (node --import tsx src/main.ts, fresh data dir, free port) or talks to
 * an already running server (--url), then runs two scenarios for each client count:
 *   distinct  every client holds its own LockDelay-0s session and loops acquire/release on bench/<client>
 *   shared    every client loops acquire on bench/shared; on success it releases, on a refusal
 *             (seed: 409 code 1025, consul: 200 `false`) it counts a contended attempt and retries at once
 * and prints pairs/s, p50/p99 pair latency and, for the shared key, refused acquires per second.
 * See bench/README.md for how each number is measured.
 */
import { statfsSync } from 'node:fs';
import { cpus, tmpdir } from 'node:os';
import { performance } from 'node:perf_hooks';
import { parseArgs } from 'node:util';
import { Pool } from 'undici';
import { exitOnInterrupt, formatRow, ms, percentile, startRoster, stopAndReport, type Server } from './server.ts';

const warmupMs = 500;
/** Hard caps per client and scenario run, so a loop ends even if the clock check never trips. */
const pairsCapPerClient = 1_000_000;
const attemptsCapPerClient = 5_000_000;
/** A request with no answer for this long fails (and ends its loop) instead of hanging the bench. */
const requestTimeoutMs = 10_000;
const acquireBody = 'bench-holder';

// ---------------------------------------------------------------- options

interface Options {
  url: string | undefined;
  durationS: number;
  clients: number[];
  dialect: string | undefined;
  dataParent: string;
}

const usage = `usage: npm run bench:locks -- [options]
  --url <base>           bench a running server (e.g. http://127.0.0.1:8500) instead of starting Roster
  --duration <seconds>   measured time per scenario and client count, after ${warmupMs} ms warm-up [default 5]
  --clients <list>       comma-separated concurrent client counts                 [default 1,16,64]
  --dialect seed|consul  wire dialect of the Roster started by the bench          [default: Roster's own]
  --data-parent <dir>    where the started Roster's temporary data dir is made    [default: os.tmpdir()]`;

function parseOptions(argv: string[]): Options {
  const { values } = parseArgs({
    args: argv, strict: true, allowPositionals: false,
    options: {
      url: { type: 'string' },
      duration: { type: 'string' },
      clients: { type: 'string' },
      dialect: { type: 'string' },
      'data-parent': { type: 'string' },
      help: { type: 'boolean', short: 'h' },
    },
  });
  if (values.help) {
    process.stdout.write(`${usage}\n`);
    process.exit(0);
  }
  const durationS = Number(values.duration ?? '5');
  if (!Number.isFinite(durationS) || durationS <= 0) throw new Error(`--duration: "${values.duration}" is not a positive number of seconds`);
  const clients = (values.clients ?? '1,16,64').split(',').map((s) => s.trim()).filter((s) => s !== '').map((s) => {
    const n = Number(s);
    if (!Number.isInteger(n) || n < 1 || n > 4096) throw new Error(`--clients: "${s}" is not a client count (1-4096)`);
    return n;
  });
  if (clients.length === 0) throw new Error('--clients: give at least one client count');
  if (values.url !== undefined && values.dialect !== undefined) throw new Error('--dialect applies only to the Roster the bench starts, not to --url');
  return {
    url: values.url?.replace(/\/+$/, ''),
    durationS, clients,
    dialect: values.dialect,
    dataParent: values['data-parent'] ?? tmpdir(),
  };
}

// ---------------------------------------------------------------- HTTP

interface Answer { status: number; text: string }

class Http {
  readonly pool: Pool;
  constructor(base: string, connections: number) {
    this.pool = new Pool(base, {
      connections, pipelining: 1,
      keepAliveTimeout: 60_000, keepAliveMaxTimeout: 600_000,
      headersTimeout: requestTimeoutMs, bodyTimeout: requestTimeoutMs, connectTimeout: requestTimeoutMs,
    });
  }
  async put(path: string, body?: string): Promise<Answer> {
    const res = await this.pool.request({ method: 'PUT', path, ...(body !== undefined ? { body, headers: { 'content-type': 'application/json' } } : {}) });
    return { status: res.statusCode, text: await res.body.text() };
  }
  async del(path: string): Promise<Answer> {
    const res = await this.pool.request({ method: 'DELETE', path });
    return { status: res.statusCode, text: await res.body.text() };
  }
  close(): Promise<void> {
    return this.pool.close();
  }
}

/** What an acquire answered: held, refused because someone else holds it, or something unexpected. */
function acquireOutcome(a: Answer): 'held' | 'refused' | 'unexpected' {
  const body = a.text.trim();
  if (a.status === 200 && body === 'true') return 'held';
  if (a.status === 200 && body === 'false') return 'refused'; // consul dialect
  if (a.status === 409) {
    try {
      if ((JSON.parse(body) as { code?: unknown }).code === 1025) return 'refused'; // seed dialect
    } catch { /* not JSON: unexpected */ }
  }
  return 'unexpected';
}

const describe = (what: string, a: Answer) => `${what}: HTTP ${a.status} ${a.text.trim().slice(0, 200)}`;

async function createSession(http: Http, client: number): Promise<string> {
  const a = await http.put('/v1/session/create', JSON.stringify({ LockDelay: '0s', Name: `bench-${client}` }));
  if (a.status !== 200) throw new Error(describe('session create', a));
  const id = (JSON.parse(a.text) as { ID?: unknown }).ID;
  if (typeof id !== 'string' || id === '') throw new Error(describe('session create returned no ID', a));
  return id;
}

async function destroySession(http: Http, id: string): Promise<void> {
  const a = await http.put(`/v1/session/destroy/${encodeURIComponent(id)}`);
  if (a.status !== 200) throw new Error(describe(`session destroy ${id}`, a));
}

// ---------------------------------------------------------------- measuring

interface Window {
  /** Measurement starts here (warm-up before it is excluded). */
  from: number;
  /** No new pair or attempt starts after this. */
  until: number;
}

interface ClientTally {
  /** Latency of each pair that started inside the window (ms). */
  samples: number[];
  /** Pairs whose release completed inside the window. */
  pairsInWindow: number;
  /** Refused acquires that completed inside the window. */
  refusedInWindow: number;
  errors: number;
  firstError: string | undefined;
  capped: boolean;
}

function newTally(): ClientTally {
  return { samples: [], pairsInWindow: 0, refusedInWindow: 0, errors: 0, firstError: undefined, capped: false };
}

function noteError(t: ClientTally, msg: string): void {
  t.errors += 1;
  t.firstError ??= msg;
}

/** Errors in a row after which a client gives up: a broken server should not be hammered for the whole run. */
const errorsInARowMax = 20;

/** Scenario (a): acquire then release the client's own key. */
async function distinctLoop(http: Http, client: number, session: string, w: Window): Promise<ClientTally> {
  const t = newTally();
  const key = `/v1/kv/bench/${client}`;
  let inARow = 0;
  for (let i = 0; ; i++) {
    if (i >= pairsCapPerClient) { t.capped = true; break; }
    const start = performance.now();
    if (start >= w.until || inARow >= errorsInARowMax) break;
    try {
      const acq = await http.put(`${key}?acquire=${session}`, acquireBody);
      if (acquireOutcome(acq) !== 'held') { noteError(t, describe(`acquire ${key}`, acq)); inARow++; continue; }
      const rel = await http.put(`${key}?release=${session}`);
      if (rel.status !== 200 || rel.text.trim() !== 'true') { noteError(t, describe(`release ${key}`, rel)); inARow++; continue; }
    } catch (err) {
      noteError(t, `${key}: ${err instanceof Error ? err.message : String(err)}`); inARow++; continue;
    }
    inARow = 0;
    const end = performance.now();
    if (start >= w.from) t.samples.push(end - start);
    if (end >= w.from && end <= w.until) t.pairsInWindow++;
  }
  return t;
}

/** Scenario (b): everyone acquires bench/shared; the winner releases, the others retry at once. */
async function sharedLoop(http: Http, session: string, w: Window): Promise<ClientTally> {
  const t = newTally();
  const key = '/v1/kv/bench/shared';
  let pairs = 0;
  let inARow = 0;
  for (let attempts = 0; ; attempts++) {
    if (attempts >= attemptsCapPerClient || pairs >= pairsCapPerClient) { t.capped = true; break; }
    const start = performance.now();
    if (start >= w.until || inARow >= errorsInARowMax) break;
    try {
      const acq = await http.put(`${key}?acquire=${session}`, acquireBody);
      const outcome = acquireOutcome(acq);
      if (outcome === 'refused') {
        inARow = 0;
        const end = performance.now();
        if (end >= w.from && end <= w.until) t.refusedInWindow++;
        continue;
      }
      if (outcome === 'unexpected') { noteError(t, describe(`acquire ${key}`, acq)); inARow++; continue; }
      const rel = await http.put(`${key}?release=${session}`);
      if (rel.status !== 200 || rel.text.trim() !== 'true') { noteError(t, describe(`release ${key}`, rel)); inARow++; continue; }
    } catch (err) {
      noteError(t, `${key}: ${err instanceof Error ? err.message : String(err)}`); inARow++; continue;
    }
    inARow = 0;
    pairs++;
    const end = performance.now();
    if (start >= w.from) t.samples.push(end - start);
    if (end >= w.from && end <= w.until) t.pairsInWindow++;
  }
  return t;
}

type Scenario = 'distinct' | 'shared';

interface Row {
  scenario: Scenario;
  clients: number;
  pairsPerS: number;
  p50: number;
  p99: number;
  refusedPerS: number | undefined;
  samples: number;
  errors: number;
  firstError: string | undefined;
  capped: boolean;
}

async function runScenario(http: Http, scenario: Scenario, clients: number, durationS: number): Promise<Row> {
  const sessions: string[] = [];
  const failures: string[] = [];
  try {
    for (let c = 0; c < clients; c++) sessions.push(await createSession(http, c));
    const from = performance.now() + warmupMs;
    const w: Window = { from, until: from + durationS * 1000 };
    const tallies = await Promise.all(sessions.map((s, c) =>
      scenario === 'distinct' ? distinctLoop(http, c, s, w) : sharedLoop(http, s, w)));
    const all = new Float64Array(tallies.reduce((n, t) => n + t.samples.length, 0));
    let at = 0;
    for (const t of tallies) { all.set(t.samples, at); at += t.samples.length; }
    all.sort();
    const seconds = (w.until - w.from) / 1000;
    return {
      scenario, clients,
      pairsPerS: tallies.reduce((n, t) => n + t.pairsInWindow, 0) / seconds,
      p50: percentile(all, 50), p99: percentile(all, 99),
      refusedPerS: scenario === 'shared' ? tallies.reduce((n, t) => n + t.refusedInWindow, 0) / seconds : undefined,
      samples: all.length,
      errors: tallies.reduce((n, t) => n + t.errors, 0),
      firstError: tallies.find((t) => t.firstError !== undefined)?.firstError,
      capped: tallies.some((t) => t.capped),
    };
  } finally {
    // Destroying a session releases what it still holds; the keys themselves are removed at the end.
    for (const id of sessions) {
      try { await destroySession(http, id); } catch (err) { failures.push(err instanceof Error ? err.message : String(err)); }
    }
    if (failures.length > 0) process.stderr.write(`bench: ${failures.length} session destroys failed, first: ${failures[0]}\n`);
  }
}

// ---------------------------------------------------------------- output

const fsTypes: Record<number, string> = {
  0xef53: 'ext4', 0x58465342: 'xfs', 0x9123683e: 'btrfs', 0x01021994: 'tmpfs', 0x794c7630: 'overlayfs',
  0x2fc12fc1: 'zfs', 0x65735546: 'fuse', 0x6969: 'nfs', 0xf15f: 'ecryptfs', 0x858458f6: 'ramfs',
};

function fsTypeOf(dir: string): string {
  try {
    const type = statfsSync(dir).type;
    return fsTypes[type] ?? `0x${type.toString(16)}`;
  } catch {
    return 'unknown';
  }
}

function header(url: string, server: Server | undefined, o: Options): string {
  const cpu = cpus();
  const lines = [
    `roster lock bench  server ${url}  node ${process.version}  cpu ${cpu[0]?.model.trim() ?? 'unknown'} x${cpu.length}`,
    server !== undefined
      ? `log: Roster embedded WAL, one write + one fdatasync per group commit (requests in flight together share a commit); data dir ${server.dataDir} (${fsTypeOf(server.dataDir)})`
      : 'log: external server (--url), its durability is not known to the bench',
    `${o.durationS} s measured per row after ${warmupMs} ms warm-up; sessions LockDelay 0s; latency = acquire + release of one pair (shared: the acquire that won)`,
  ];
  return lines.join('\n');
}

const cols = ['scenario', 'clients', 'pairs/s', 'p50 ms', 'p99 ms', 'contended/s', 'errors'] as const;
const widths = [10, 8, 10, 9, 9, 12, 7];

function rowText(r: Row): string {
  return formatRow([
    r.scenario, String(r.clients), r.pairsPerS.toFixed(0), ms(r.p50), ms(r.p99),
    r.refusedPerS === undefined ? '-' : r.refusedPerS.toFixed(0),
    String(r.errors) + (r.capped ? ' capped' : ''),
  ], widths);
}

// ---------------------------------------------------------------- main

async function main(): Promise<number> {
  let o: Options;
  try {
    o = parseOptions(process.argv.slice(2));
  } catch (err) {
    process.stderr.write(`bench: ${err instanceof Error ? err.message : String(err)}\n${usage}\n`);
    return 2;
  }

  let server: Server | undefined;
  let http: Http | undefined;
  let failed = false;
  const cleanup = async () => {
    if (http !== undefined) await http.close().catch(() => {});
    if (!(await stopAndReport(server))) failed = true;
  };
  const interrupted = exitOnInterrupt(cleanup);

  try {
    if (o.url === undefined) server = await startRoster(o.dialect !== undefined ? ['--dialect', o.dialect] : [], o.dataParent);
    const url = o.url ?? server!.url;
    http = new Http(url, Math.max(...o.clients));
    process.stdout.write(`${header(url, server, o)}\n\n${formatRow(cols, widths)}\n`);
    for (const scenario of ['distinct', 'shared'] as const) {
      for (const clients of o.clients) {
        const row = await runScenario(http, scenario, clients, o.durationS);
        if (interrupted()) return 130;
        const gone = server?.exited();
        if (gone !== undefined) throw new Error(`Roster stopped during the run (${gone}):\n${server!.tail()}`);
        process.stdout.write(`${rowText(row)}\n`);
        if (row.errors > 0) {
          failed = true;
          process.stderr.write(`bench: ${scenario}/${clients}: ${row.errors} failed requests, first: ${row.firstError}\n`);
        }
        if (row.capped) process.stderr.write(`bench: ${scenario}/${clients}: a client hit the iteration cap before the duration ended\n`);
      }
    }
    // Leave nothing behind on a shared server: only the keys this bench wrote.
    const keys = ['shared', ...Array.from({ length: Math.max(...o.clients) }, (_, c) => String(c))];
    for (const k of keys) {
      const a = await http.del(`/v1/kv/bench/${k}`);
      if (a.status !== 200) throw new Error(describe(`delete bench/${k}`, a));
    }
  } catch (err) {
    failed = true;
    process.stderr.write(`bench: ${err instanceof Error ? err.message : String(err)}\n`);
  } finally {
    if (!interrupted()) await cleanup();
  }
  return failed ? 1 : 0;
}

process.exitCode = await main();
