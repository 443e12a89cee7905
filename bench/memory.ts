/**
 * Memory and start-up bench: `npm run bench:memory [-- options]`.
 *
 * Starts a real Roster process (the compiled agent, bench/support/built-agent.ts, its own temporary data dir, free ports) and
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
 * It prints a table with Roster's memory and restart targets (≤ 1 GB RSS, ≤ 15 s from spawn to serving) marked met or
 * missed and writes every figure as JSON. See bench/README.md for what each figure means.
 */
import { mkdirSync, mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { cpus } from 'node:os';
import { dirname, join } from 'node:path';
import { fsTypeOf } from './peers/tools.ts';
import { loadKeys, loadSessions, verificationOk } from './memory/data.ts';
import { retriedSoFar } from './memory/http.ts';
import { parseOptions, usage, valueBytes, type Options } from './memory/options.ts';
import { diskUse, memoryReadings } from './memory/readings.ts';
import { rssTargetBytes, restartTargetMs, revision, table, verdict, type Results } from './memory/report.ts';
import { connect, launch, recoveryTimeoutMs, restart, type Live, type Recovery } from './memory/restart.ts';
import { benchOptions } from './support/options.ts';
import { exitOnInterrupt } from './support/run.ts';

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
  const keys = await loadKeys(http, 'mem', o.keys, o, () => live.stopped, 'keys');
  process.stdout.write(`loaded ${o.keys} keys in ${keys.seconds.toFixed(1)} s (${keys.perS.toFixed(0)}/s)\n`);
  live.phase = 'creating sessions';
  const sessionIds: string[] = [];
  const sessions = await loadSessions(http, o, () => live.stopped, sessionIds);
  process.stdout.write(`created ${o.sessions} sessions in ${sessions.seconds.toFixed(1)} s (${sessions.perS.toFixed(0)}/s)\n`);

  live.phase = 'reading memory after the load';
  const afterLoad = await memoryReadings(http, server.pid, o.idleS);
  const diskAfterLoad = diskUse(dataDir);

  const recoveries: Recovery[] = [];
  recoveries.push(await restart('SIGTERM', live, parent, dataDir, o, sessionIds, failures));
  server = live.server!;
  http = live.http!;

  live.phase = 'writing the WAL-only tail';
  const tail = o.tail > 0 ? await loadKeys(http, 'memtail', o.tail, o, () => live.stopped, 'tail') : undefined;
  recoveries.push(await restart('SIGKILL', live, parent, dataDir, o, sessionIds, failures));

  // The target is what holding the data costs: the idle readings. The ones right after the work are printed too.
  const rssMet = [afterLoad.idle, ...recoveries.map((r) => r.memory.idle)].every((m) => m.vmRssBytes <= rssTargetBytes);
  const restartMet = recoveries.every((r) => r.readyMs <= restartTargetMs && r.firstGetMs <= restartTargetMs);
  return {
    options: o, machine, freshStartMs,
    load: { keys, sessions, tail, retried: retriedSoFar() },
    afterLoad, diskAfterLoad, recoveries,
    targets: { rssBytesMax: rssTargetBytes, restartMsMax: restartTargetMs, rssMet, restartMet },
    verified: recoveries.every((r) => verificationOk(r.verification, o, r.how === 'SIGKILL')),
  };
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
