/**
 * bench:memory's restarts: stop the agent (SIGTERM, with its shutdown snapshot, or SIGKILL), start it again
 * on the same data dir, time spawn → first right read, check what came back and read the memory again.
 */
import { performance } from 'node:perf_hooks';
import { setTimeout as sleep } from 'node:timers/promises';
import { startRoster, type Server } from '../server.ts';
import { valueOf, verificationOk, verify, type Verification } from './data.ts';
import { Http } from './http.ts';
import type { Options } from './options.ts';
import { memoryReadings, newestSnapshotIndex, recoveredLine, type Readings, type Recovered } from './readings.ts';

/** Seconds with two decimals. */
export const secs = (msVal: number) => `${(msVal / 1000).toFixed(2)} s`;

/** A restart gets this long to print its ready line and to answer the first read: 8× the target, so a miss is still measured. */
export const recoveryTimeoutMs = 120_000;
/**
 * SIGTERM → exit may take this long before SIGKILL: the shutdown snapshot of a 1M-key state took about 10 s
 * (server.ts's default), and a kill there would turn the clean restart into a crash restart.
 */
const stopTimeoutMs = 120_000;
/** Between polls of the first read after a restart. */
const firstGetPollMs = 10;

export interface Recovery {
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

/** What a timeout or an interrupt has to clean up: the process running now (or starting) and the pool. */
export interface Live {
  server: Server | undefined;
  starting: Promise<Server> | undefined;
  http: Http | undefined;
  stopped: boolean;
  phase: string;
}

export async function launch(live: Live, parent: string, dataDir: string, readyTimeoutMs: number): Promise<Server> {
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

export async function connect(live: Live, server: Server, o: Options): Promise<Http> {
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

export async function restart(how: 'SIGTERM' | 'SIGKILL', live: Live, parent: string, dataDir: string, o: Options, sessionIds: string[], failures: string[]): Promise<Recovery> {
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
