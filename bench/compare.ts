/**
 * `npm run bench:compare [-- options]`: Roster next to its peers, all started here and driven in one run.
 *
 * Systems, one at a time (the machine is small; two systems at once would measure each other):
 *   roster          one Roster node, embedded WAL (fdatasync per group commit)
 *   etcd            Debian's etcd, one member              (peer of roster)
 *   nats-kv         NATS KV on one nats-server, R1 bucket   (peer of roster)
 *   floor           the least a durable lock server does here (bench/floor-server.ts), Roster's floor
 *   roster-cluster  three Roster nodes over three nats-servers (JetStream log R3)
 *   floor-cluster   three floor nodes over three nats-servers (bench/floor-server.ts --nats), the cluster's floor
 *   etcd-cluster    etcd, three members                     (peer of roster-cluster)
 *   nats-kv-r3      NATS KV on three nats-servers, R3 bucket (peer of roster-cluster)
 *   reads           wrk against a uWebSockets.js hello-world and against Roster's GET /v1/kv/<key>
 * Every lock system runs the same rows through the same loop (bench/measure.ts) behind one driver interface
 * (bench/peers/driver.ts): distinct keys and one shared key, at each client count, one request per lock step;
 * then, where the system has a transaction for it, `txn` rows taking locks `--batch` keys per request
 * (bench/compare/batch-row.ts). Each row also reports the server processes' CPU over its window (from /proc,
 * the bench itself excluded): server CPU per pair and pairs per server core-second. Then the ratios
 * Roster/peer from this run, and Roster's performance targets, each met or missed. bench/README.md has the details.
 */
import { mkdirSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { dirname, resolve } from 'node:path';
import { runRow, type RowResult } from './measure.ts';
import { runBatchRow, type BatchRowResult } from './compare/batch-row.ts';
import { WindowMeter } from './peers/proc-cpu.ts';
import { runWrk, startHelloUws, wrkConnections, wrkThreads } from './peers/reads.ts';
import { RosterHttp, describeAnswer } from './peers/roster.ts';
import { describeMachine } from './peers/tools.ts';
import { formatRow, startRoster } from './server.ts';
import { planOf, stopRoster, type Started } from './compare/systems.ts';
import { benchOptions, count, countList, namesOf, parseBenchArgs, resultsPath, seconds } from './support/options.ts';
import {
  allSystems, batchDefault, efficiencyOf, keyPrefix, medianRun, repeatMax, rowScenarios, systemWarmupSDefault, warmupMs,
  type CompareRow, type LockSystem, type Options, type ReadsRun, type RowScenario, type SystemRun,
} from './compare/model.ts';
import { header, overFloorOf, printSummary, ratiosOf, rowCols, rowText, rowWidths, targetsOf } from './compare/report.ts';

/** Time allowed per system for starting and stopping, on top of its rows, before the whole run gives up. */
const startStopBudgetMs = 120_000;
/** Time allowed per row on top of its warm-up and window: session setup, teardown, a slow last request. */
const rowSlackMs = 30_000;

// ---------------------------------------------------------------- options

const usage = `usage: npm run bench:compare -- [options]
  --duration <seconds>   measured time per row (and per wrk run), after ${warmupMs} ms warm-up   [default 5]
  --warmup <seconds>     unmeasured load on each system once started, before its rows: every scenario at
                         the largest client count for this long (reads: a wrk run as long); 0 for none
                                                                                                [default ${systemWarmupSDefault}]
  --clients <list>       comma-separated concurrent client counts                              [default 1,16,64]
  --systems <list>       comma-separated subset of ${allSystems.join(',')}
                                                                                                [default all]
  --scenarios <list>     comma-separated subset of ${rowScenarios.join(',')}                       [default all]
  --batch <n>            keys per request in the txn rows, 1 to ${batchDefault}                             [default ${batchDefault}]
  --repeat <n>           runs of each row, back to back, 1 to ${repeatMax}; the median by server CPU per pair is shown [default 1]
  --json <path>          where the results go as JSON       [default bench/results/compare-<ISO time>.json]
  --data-parent <dir>    where Roster's and etcd's temporary data dirs are made                 [default: os.tmpdir()]`;

function parseOptions(argv: string[]): Options {
  const values = parseBenchArgs(argv, {
    duration: { type: 'string' }, clients: { type: 'string' }, systems: { type: 'string' }, json: { type: 'string' },
    'data-parent': { type: 'string' }, scenarios: { type: 'string' }, batch: { type: 'string' }, warmup: { type: 'string' },
    repeat: { type: 'string' },
  });
  return {
    durationS: seconds('duration', values.duration, 5, { max: 3600 }),
    clients: countList('clients', values.clients, '1,16,64', 1024),
    // Always in the documented order, whatever order they were named in.
    systems: namesOf('systems', values.systems, allSystems),
    scenarios: namesOf('scenarios', values.scenarios, rowScenarios),
    batch: count('batch', values.batch, batchDefault, 1, batchDefault),
    repeat: count('repeat', values.repeat, 1, 1, repeatMax),
    systemWarmupS: seconds('warmup', values.warmup, systemWarmupSDefault, { min: 0, minIncluded: true, max: 600 }),
    jsonPath: resultsPath(values.json, 'compare'),
    dataParent: resolve(values['data-parent'] ?? tmpdir()),
  };
}

// ---------------------------------------------------------------- processes

/** Everything started and not yet stopped, stopped by its own handle on the way out, whatever the way. */
const running = new Set<{ what: string; stop: () => Promise<void> }>();

/** Every stop begun so far: the last stopAll() waits for them all, including ones an interrupt began. */
let stopping: Promise<unknown> = Promise.resolve();

function stopAll(): Promise<unknown> {
  const all = [...running].reverse();
  running.clear();
  const now = (async () => {
    for (const r of all) {
      try {
        await r.stop();
      } catch (err) {
        process.stderr.write(`bench: stopping ${r.what} failed: ${err instanceof Error ? err.message : String(err)}\n`);
      }
    }
  })();
  stopping = Promise.all([stopping, now]);
  return stopping;
}

/** Set by Ctrl-C or SIGTERM: no new system or row starts, and what runs is stopped. */
let interrupted = false;

class Interrupted extends Error {
  constructor() { super('interrupted'); }
}

/**
 * Registers `stop` for the emergency exits, runs `body`, then stops (and unregisters) in any case. A start
 * still under way when the run is interrupted is stopped as soon as it has finished starting.
 */
async function withStarted<T, R>(what: string, start: () => Promise<T>, stop: (t: T) => Promise<void>, body: (t: T) => Promise<R>): Promise<R> {
  if (interrupted) throw new Interrupted();
  const started = await start();
  const entry = { what, stop: () => stop(started) };
  running.add(entry);
  try {
    if (interrupted) throw new Interrupted();
    return await body(started);
  } finally {
    if (running.delete(entry)) await stop(started);
  }
}

/**
 * First Ctrl-C (or SIGTERM): stop what is running now; the run then unwinds by itself, stopping anything
 * still starting once it is up, and exits with `code`. A second one, or a hang, stops and exits at once.
 */
function interrupt(code: number, why: string): void {
  if (interrupted) {
    hardExit(code, `${why} again`);
    return;
  }
  interrupted = true;
  process.exitCode = code;
  process.stderr.write(`bench: ${why}, stopping what it started\n`);
  void stopAll();
}

function hardExit(code: number, why: string): void {
  process.stderr.write(`bench: ${why}, stopping what it started\n`);
  void stopAll().finally(() => process.exit(code));
}

// ---------------------------------------------------------------- lock systems

/** Starts `system`, hands its driver to `body`, closes the driver and stops every process it started. */
async function withSystem<R>(system: LockSystem, o: Options, body: (s: Started) => Promise<R>): Promise<R> {
  const p = planOf(system, o);
  return withStarted(p.what, () => p.start(), (t) => p.stop(t), async (t) => {
    const s = await p.driven(t);
    try {
      return await body(s);
    } finally {
      // Interrupted: the servers are being stopped, so closing would only wait out timeouts against them.
      if (!interrupted) await s.driver.close();
    }
  });
}

/** One row of `scenario` at `clients`, with the server processes' CPU over its window. */
async function measureRow(system: LockSystem, s: Started, scenario: RowScenario, clients: number, o: Options): Promise<CompareRow> {
  const meter = new WindowMeter(s.serverPids, s.roles);
  const common = { durationS: o.durationS, warmupMs, keyPrefix, stopped: () => interrupted, onWindow: meter.onWindow };
  const row: RowResult | BatchRowResult = scenario === 'txn'
    ? await runBatchRow(s.driver, clients, o.batch, common)
    : await runRow(s.driver, scenario, clients, { ...common, sharedLatencyFrom: 'lock' });
  return { system, ...row, batch: scenario === 'txn' ? o.batch : 1, ...efficiencyOf(row.pairsPerS, meter.finish()) };
}

/**
 * The system's warm-up: each scenario it can run, at the largest client count, for `--warmup` seconds,
 * measured by nobody. A failure here is the system's failure, as in a row. Returns what each scenario
 * did, for the line that says the warm-up ran.
 */
async function warmUp(system: LockSystem, s: Started, o: Options): Promise<string[]> {
  if (o.systemWarmupS <= 0) return [];
  const clients = Math.max(...o.clients);
  const common = { durationS: o.systemWarmupS, warmupMs: 0, keyPrefix, stopped: () => interrupted };
  const done: string[] = [];
  for (const scenario of o.scenarios) {
    if (interrupted) throw new Interrupted();
    if (scenario === 'txn' && s.driver.batch === undefined) continue;
    const row = scenario === 'txn'
      ? await runBatchRow(s.driver, clients, o.batch, common)
      : await runRow(s.driver, scenario, clients, { ...common, sharedLatencyFrom: 'lock' });
    const failed = s.failure();
    if (failed !== undefined) throw new Error(failed);
    if (row.errors > 0) process.stderr.write(`bench: ${system} warm-up ${scenario}/${clients}: ${row.errors} errors, first: ${row.firstError}\n`);
    done.push(`${scenario} ${Math.round(row.pairsPerS * o.systemWarmupS)} pairs`);
  }
  return done;
}

async function runSystem(system: LockSystem, o: Options, onRow: (r: CompareRow) => void): Promise<SystemRun> {
  const run: SystemRun = { system, description: '', rows: [] };
  try {
    await withSystem(system, o, async (s) => {
      run.description = s.description;
      process.stdout.write(`${system}: ${s.description}\n`);
      const warm = await warmUp(system, s, o);
      if (warm.length > 0) process.stdout.write(`${system}: warmed up, ${o.systemWarmupS} s each at ${Math.max(...o.clients)} clients: ${warm.join(', ')}\n`);
      for (const scenario of o.scenarios) {
        if (scenario === 'txn' && s.driver.batch === undefined) {
          const why = 'no multi-key transaction to take locks in batches';
          (run.skipped ??= []).push({ scenario, why });
          process.stdout.write(`${system}: no txn rows (${why})\n`);
          continue;
        }
        for (const clients of o.clients) {
          if (interrupted) throw new Interrupted();
          const runs: CompareRow[] = [];
          for (let k = 0; k < o.repeat; k++) {
            runs.push(await measureRow(system, s, scenario, clients, o));
            if (interrupted) throw new Interrupted();
            const failed = s.failure();
            if (failed !== undefined) throw new Error(failed);
          }
          const row = medianRun(runs);
          run.rows.push(row);
          onRow(row);
          if (row.errors > 0) process.stderr.write(`bench: ${system} ${scenario}/${clients}: ${row.errors} errors, first: ${row.firstError}\n`);
          if (row.capped) process.stderr.write(`bench: ${system} ${scenario}/${clients}: a client hit the iteration cap before the window ended\n`);
        }
      }
    });
  } catch (err) {
    if (interrupted) return run;
    run.error = err instanceof Error ? err.message : String(err);
    process.stderr.write(`bench: ${system}: ${run.error}\n`);
  }
  return run;
}

// ---------------------------------------------------------------- reads


const readKey = `${keyPrefix}/read`;

async function runReads(o: Options): Promise<ReadsRun> {
  const out: ReadsRun = {};
  try {
    // Each server gets a wrk run of --warmup seconds first, unmeasured, as the lock systems get their warm-up.
    const warm = async (url: string) => { if (o.systemWarmupS > 0) await runWrk(url, o.systemWarmupS); };
    out.hello = await withStarted('hello-uws', startHelloUws, (h) => h.child.stop(), async (h) => {
      await warm(h.url);
      return runWrk(h.url, o.durationS);
    });
    out.roster = await withStarted('Roster (reads)', () => startRoster([], o.dataParent), stopRoster, async (srv) => {
      const http = new RosterHttp(srv.url, 1);
      try {
        const put = await http.request('PUT', `/v1/kv/${readKey}`, 'a small value for the read bench');
        if (put.status !== 200 || put.text.trim() !== 'true') throw new Error(describeAnswer(`write ${readKey}`, put));
        await warm(`${srv.url}/v1/kv/${readKey}`);
        const result = await runWrk(`${srv.url}/v1/kv/${readKey}`, o.durationS);
        if (srv.exited() !== undefined) throw new Error(`Roster stopped during the reads (${srv.exited()}):\n${srv.tail().slice(-3000)}`);
        return result;
      } finally {
        await http.close();
      }
    });
    out.ratio = out.roster.requestsPerS / out.hello.requestsPerS;
  } catch (err) {
    if (interrupted) return out;
    out.error = err instanceof Error ? err.message : String(err);
    process.stderr.write(`bench: reads: ${out.error}\n`);
  }
  return out;
}

// ---------------------------------------------------------------- main

async function main(): Promise<number> {
  const o = benchOptions(usage, parseOptions);
  process.on('SIGINT', () => interrupt(130, 'interrupted'));
  process.on('SIGTERM', () => interrupt(143, 'terminated'));
  process.on('uncaughtException', (err) => hardExit(1, `uncaught ${err.stack ?? err.message}`));
  process.on('unhandledRejection', (err) => hardExit(1, `unhandled rejection ${err instanceof Error ? err.stack : String(err)}`));

  const lockRuns = o.systems.filter((s): s is LockSystem => s !== 'reads');
  const rowsPerSystem = o.scenarios.length * o.clients.length * o.repeat;
  const warmupsPerSystem = o.systemWarmupS > 0 ? o.scenarios.length : 0;
  const budgetMs = o.systems.length * startStopBudgetMs + lockRuns.length * rowsPerSystem * (warmupMs + o.durationS * 1000 + rowSlackMs)
    + lockRuns.length * warmupsPerSystem * (o.systemWarmupS * 1000 + rowSlackMs)
    // Reads: one wrk run per server (hello-world and Roster), each after its own warm-up run.
    + (o.systems.includes('reads') ? 2 * (o.durationS * 1000 + rowSlackMs) + (o.systemWarmupS > 0 ? 2 * (o.systemWarmupS * 1000 + rowSlackMs) : 0) : 0);
  const watchdog = setTimeout(() => hardExit(1, `the run took longer than its budget of ${Math.round(budgetMs / 1000)} s`), budgetMs);
  watchdog.unref();

  const machine = describeMachine(o.dataParent);
  const startedAt = new Date().toISOString();
  process.stdout.write(`${header(machine, o)}\n`);
  if (lockRuns.length > 0) process.stdout.write(`\n${formatRow(rowCols, rowWidths)}\n`);
  const runs: SystemRun[] = [];
  for (const system of lockRuns) runs.push(await runSystem(system, o, (r) => process.stdout.write(`${rowText(r)}\n`)));
  const reads = o.systems.includes('reads') ? await runReads(o) : undefined;
  if (interrupted) {
    clearTimeout(watchdog);
    return Number(process.exitCode ?? 130);
  }
  const ratios = ratiosOf(runs);
  const targets = targetsOf(runs, reads);
  printSummary(runs, reads, ratios, targets);

  mkdirSync(dirname(o.jsonPath), { recursive: true });
  writeFileSync(o.jsonPath, `${JSON.stringify({
    version: 1, startedAt, finishedAt: new Date().toISOString(), machine,
    options: {
      durationS: o.durationS, warmupMs, systemWarmupS: o.systemWarmupS, repeat: o.repeat, clients: o.clients, systems: o.systems, scenarios: o.scenarios, batch: o.batch,
      keys: { distinct: `${keyPrefix}/<client>`, shared: `${keyPrefix}/shared`, txn: `${keyPrefix}/txn/<client>/<0..batch-1>` },
    },
    systems: runs.map((r) => ({
      system: r.system, description: r.description,
      ...(r.skipped !== undefined ? { skipped: r.skipped } : {}), ...(r.error !== undefined ? { error: r.error } : {}),
    })),
    rows: runs.flatMap((r) => r.rows),
    reads: reads === undefined ? undefined : { connections: wrkConnections, threads: wrkThreads, durationS: Math.max(1, Math.round(o.durationS)), ...reads },
    ratios, overFloor: overFloorOf(runs), targets,
  }, (_, v: unknown) => (typeof v === 'number' && !Number.isFinite(v) ? null : v), 2)}\n`);
  process.stdout.write(`\nresults: ${o.jsonPath}\n`);
  clearTimeout(watchdog);

  // A peer's own errors are its result (NATS KV R3 hands out locks twice on 2.9.10); Roster's are a failure.
  const rosterErrors = runs.filter((r) => r.system.startsWith('roster')).reduce((n, r) => n + r.rows.reduce((m, x) => m + x.errors, 0), 0)
    + (reads?.roster?.errors ?? 0);
  return runs.some((r) => r.error !== undefined) || reads?.error !== undefined || rosterErrors > 0 ? 1 : 0;
}

process.exitCode = await main().finally(stopAll);
// Everything started has been stopped; a client library's lingering handle must not keep the bench alive.
setTimeout(() => process.exit(), 5_000).unref();
