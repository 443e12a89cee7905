/**
 * Lock throughput and latency bench: `npm run bench:locks [-- options]`.
 *
 * Starts a real Roster process (the compiled agent, bench/support/built-agent.ts, fresh data dir, free port) or talks to
 * an already running server (--url), then runs two scenarios for each client count:
 *   distinct  every client holds its own LockDelay-0s session and loops acquire/release on bench/<client>
 *   shared    every client loops acquire on bench/shared; on success it releases, on a refusal
 *             (seed: 409 code 1025, consul: 200 `false`) it counts a contended attempt and retries at once
 * and prints pairs/s, p50/p99 pair latency and, for the shared key, refused acquires per second.
 * The loop is bench/measure.ts and the HTTP client bench/peers/roster.ts, the same ones bench:compare runs.
 * See bench/README.md for how each number is measured.
 */
import { cpus, tmpdir } from 'node:os';
import { runRow, type RowResult, type Scenario } from './measure.ts';
import { RosterDriver } from './peers/roster.ts';
import { fsTypeOf } from './peers/tools.ts';
import { formatRow, ms, startRoster, stopAndReport, type Server } from './server.ts';
import { benchOptions, countList, namesOf, parseBenchArgs, seconds } from './support/options.ts';
import { runBench } from './support/run.ts';

const warmupMs = 500;

// ---------------------------------------------------------------- options

interface Options {
  url: string | undefined;
  durationS: number;
  clients: number[];
  dialect: string | undefined;
  dataParent: string;
  scenarios: Scenario[];
}

const usage = `usage: npm run bench:locks -- [options]
  --url <base>           bench a running server (e.g. http://127.0.0.1:8500) instead of starting Roster
  --duration <seconds>   measured time per scenario and client count, after ${warmupMs} ms warm-up [default 5]
  --clients <list>       comma-separated concurrent client counts                 [default 1,16,64]
  --dialect seed|consul  wire dialect of the Roster started by the bench          [default: Roster's own]
  --data-parent <dir>    where the started Roster's temporary data dir is made    [default: os.tmpdir()]
  --scenarios <list>     distinct, shared or both, in that order                 [default distinct,shared]`;

function parseOptions(argv: string[]): Options {
  const values = parseBenchArgs(argv, {
    url: { type: 'string' }, duration: { type: 'string' }, clients: { type: 'string' }, dialect: { type: 'string' },
    'data-parent': { type: 'string' }, scenarios: { type: 'string' },
  });
  if (values.url !== undefined && values.dialect !== undefined) throw new Error('--dialect applies only to the Roster the bench starts, not to --url');
  return {
    url: values.url?.replace(/\/+$/, ''),
    durationS: seconds('duration', values.duration, 5),
    clients: countList('clients', values.clients, '1,16,64', 4096),
    dialect: values.dialect,
    dataParent: values['data-parent'] ?? tmpdir(),
    scenarios: namesOf('scenarios', values.scenarios, ['distinct', 'shared']),
  };
}

// ---------------------------------------------------------------- output

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

function rowText(r: RowResult): string {
  return formatRow([
    r.scenario, String(r.clients), r.pairsPerS.toFixed(0), ms(r.p50Ms), ms(r.p99Ms),
    r.scenario === 'distinct' ? '-' : r.contendedPerS.toFixed(0),
    String(r.errors) + (r.capped ? ' capped' : ''),
  ], widths);
}

// ---------------------------------------------------------------- main

async function main(): Promise<number> {
  const o = benchOptions(usage, parseOptions);
  let server: Server | undefined;
  let driver: RosterDriver | undefined;
  return runBench(async (run) => {
    if (o.url === undefined) server = await startRoster(o.dialect !== undefined ? ['--dialect', o.dialect] : [], o.dataParent);
    const url = o.url ?? server!.url;
    // Refused acquires retry at once: this bench measures the server's refusal path, not a client recipe.
    driver = new RosterDriver({ urls: [url], connectionsPerNode: Math.max(...o.clients), contention: 'retry' });
    process.stdout.write(`${header(url, server, o)}\n\n${formatRow(cols, widths)}\n`);
    for (const scenario of o.scenarios) {
      for (const clients of o.clients) {
        const row = await runRow(driver, scenario, clients, { durationS: o.durationS, warmupMs, sharedLatencyFrom: 'winning-try', keyPrefix: 'bench' });
        if (run.interrupted()) return 130;
        const gone = server?.exited();
        if (gone !== undefined) throw new Error(`Roster stopped during the run (${gone}):\n${server!.tail()}`);
        process.stdout.write(`${rowText(row)}\n`);
        if (row.errors > 0) run.fail(`${scenario}/${clients}: ${row.errors} failed requests, first: ${row.firstError}`);
        if (row.capped) process.stderr.write(`bench: ${scenario}/${clients}: a client hit the iteration cap before the duration ended\n`);
      }
    }
    // Leave nothing behind on a shared server: close() deletes only the keys this bench wrote.
    const closing = driver;
    driver = undefined;
    await closing.close();
  }, async (run) => {
    if (driver !== undefined) await driver.disconnect();
    if (!(await stopAndReport(server))) run.fail();
  });
}

process.exitCode = await main();
