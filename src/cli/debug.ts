/**
 * `roster debug [--duration 30s] [--interval 10s] [--log-level debug] [--output path] [--no-archive]`: what
 * an operator attaches to a report, as `consul debug` gathers it. Over `--duration` it captures from one
 * agent: who it is, its members, its log's state and its host (`/v1/agent/self`, `/v1/agent/members`,
 * `/v1/operator/log`, `/v1/agent/host`, at the start), its metrics every `--interval` (Prometheus text), its log at
 * `--log-level` (`/v1/agent/monitor`), and a CPU profile and a sampling heap profile over the whole duration
 * (`/v1/agent/debug/*`: operator read, or `enable_debug` without authentication). Everything goes into a
 * directory, then into `<dir>.tar.gz` unless `--no-archive`. A capture the agent refuses is named in
 * `index.json` and on stderr, and the rest goes on; Ctrl-C ends the capture early and keeps what was
 * captured (the profiles, which end with their requests, are then missing).
 */
import { mkdir, rm, writeFile } from 'node:fs/promises';
import { basename, dirname, join, resolve } from 'node:path';
import { failureOf, readAnswer } from './client.ts';
import type { CliContext } from './context.ts';
import { CliError, usageError } from './errors.ts';
import { logLevelOption } from './monitor.ts';
import { parseGoDurationMs } from '../util/duration.ts';
import { setLongTimeout } from '../util/timer.ts';

export interface DebugOptions {
  duration?: string;
  interval?: string;
  logLevel?: string;
  output?: string;
  archive?: boolean;
}

/** The agent's longest profile (src/http/routes/debug.ts profileSecondsMax). */
const durationMsMax = 300_000;
const intervalMsMin = 1_000;

interface Plan { durationMs: number; intervalMs: number; level: string; dir: string; archive: boolean }

function planOf(o: DebugOptions, now: Date): Plan {
  const durationMs = parseGoDurationMs(o.duration ?? '30s');
  if (durationMs === undefined || durationMs < intervalMsMin || durationMs > durationMsMax) throw usageError(`--duration: "${o.duration}" is not a duration from 1s to 5m`);
  const intervalMs = parseGoDurationMs(o.interval ?? '10s');
  if (intervalMs === undefined || intervalMs < intervalMsMin) throw usageError(`--interval: "${o.interval}" is not a duration of 1s or more`);
  const level = logLevelOption(o.logLevel, 'debug');
  const stamp = now.toISOString().replace(/[-:]/g, '').replace(/\.\d+Z$/, 'Z');
  const dir = resolve(o.output ?? `roster-debug-${stamp}`);
  return { durationMs, intervalMs, level, dir, archive: o.archive !== false };
}

/** What index.json says of one capture: its file, or why it is missing. */
type Outcome = { file: string } | { file: string; error: string };

export async function debugCommand(ctx: CliContext, o: DebugOptions): Promise<number> {
  const plan = planOf(o, new Date());
  const self = await ctx.client.get('/v1/agent/self');
  if (self.status !== 200) throw failureOf(self);
  await mkdir(plan.dir, { recursive: false }).catch((err: NodeJS.ErrnoException) => {
    throw new CliError(err.code === 'EEXIST' ? `--output ${plan.dir} exists already` : `cannot make ${plan.dir}: ${err.message}`);
  });
  const startedAt = new Date();
  const stop = new AbortController();
  const interrupt = () => stop.abort();
  process.once('SIGINT', interrupt);
  process.once('SIGTERM', interrupt);
  const outcomes: Record<string, Outcome> = {};
  try {
    await writeFile(join(plan.dir, 'agent.json'), self.text);
    outcomes.agent = { file: 'agent.json' };
    outcomes.members = await saveGet(ctx, plan, '/v1/agent/members', 'members.json');
    outcomes.operatorLog = await saveGet(ctx, plan, '/v1/operator/log', 'operator-log.json');
    outcomes.host = await saveGet(ctx, plan, '/v1/agent/host', 'host.json');
    const seconds = Math.max(1, Math.round(plan.durationMs / 1000));
    const log = captureLog(ctx, plan, stop.signal);
    // Said once the log is followed, so that what happens from here on is in it.
    await log.following;
    ctx.out(`Capturing from ${ctx.client.baseUrl} for ${plan.durationMs / 1000}s into ${plan.dir}\n`);
    const [logged, cpu, heap, metrics] = await Promise.all([
      log.done,
      saveGet(ctx, plan, `/v1/agent/debug/cpu-profile?seconds=${seconds}`, 'cpu.cpuprofile', stop.signal),
      saveGet(ctx, plan, `/v1/agent/debug/heap-profile?seconds=${seconds}`, 'heap.heapprofile', stop.signal),
      captureMetrics(ctx, plan, stop.signal),
    ]);
    Object.assign(outcomes, { log: logged, cpuProfile: cpu, heapProfile: heap, metrics });
  } finally {
    process.off('SIGINT', interrupt);
    process.off('SIGTERM', interrupt);
  }
  const index = { agent: ctx.client.baseUrl, startedAt: startedAt.toISOString(), endedAt: new Date().toISOString(), interrupted: stop.signal.aborted, ...plan, captures: outcomes };
  await writeFile(join(plan.dir, 'index.json'), `${JSON.stringify(index, null, 2)}\n`);
  for (const [name, outcome] of Object.entries(outcomes)) if ('error' in outcome) ctx.stderr.write(`roster: ${name} not captured: ${outcome.error}\n`);
  ctx.out(`Saved ${plan.archive ? await archive(plan.dir) : plan.dir}\n`);
  return 0;
}

/** One GET saved as it was answered; a refusal is an outcome, not a failure of the whole capture. */
async function saveGet(ctx: CliContext, plan: Plan, path: string, file: string, signal?: AbortSignal): Promise<Outcome> {
  try {
    const a = await ctx.client.get(path, { timeoutMs: plan.durationMs + 30_000, ...(signal ? { signal } : {}) });
    if (a.status !== 200) return { file, error: failureOf(a).message };
    await writeFile(join(plan.dir, file), a.body);
    return { file };
  } catch (err) {
    return { file, error: signal?.aborted ? 'interrupted' : (err as Error).message };
  }
}

/**
 * The agent's log at the plan's level for the whole duration, as text: `following` settles once the agent
 * follows it (or refused to), `done` when the capture is saved.
 */
function captureLog(ctx: CliContext, plan: Plan, interrupted: AbortSignal): { following: Promise<unknown>; done: Promise<Outcome> } {
  const file = 'agent.log';
  const ends = AbortSignal.any([interrupted, AbortSignal.timeout(plan.durationMs)]);
  const opened = ctx.client.openAnswer('/v1/agent/monitor', { query: { loglevel: plan.level }, signal: ends });
  const done = (async (): Promise<Outcome> => {
    const chunks: Buffer[] = [];
    try {
      const res = await opened;
      if (res.statusCode !== 200) return { file, error: failureOf(await readAnswer(res)).message };
      for await (const chunk of res) chunks.push(chunk as Buffer);
    } catch (err) {
      if (!ends.aborted) return { file, error: (err as Error).message };
    }
    await writeFile(join(plan.dir, file), Buffer.concat(chunks));
    return { file };
  })();
  return { following: opened.catch(() => undefined), done };
}

/** `/v1/agent/metrics?format=prometheus` at the start and every interval, as metrics/<n>.prom. */
async function captureMetrics(ctx: CliContext, plan: Plan, interrupted: AbortSignal): Promise<Outcome> {
  const file = 'metrics';
  await mkdir(join(plan.dir, file));
  const started = performance.now();
  const errors: string[] = [];
  for (let n = 0; ; n++) {
    const saved = await saveGet(ctx, plan, '/v1/agent/metrics?format=prometheus', join(file, `${n}.prom`));
    if ('error' in saved) errors.push(saved.error);
    const nextAt = started + (n + 1) * plan.intervalMs;
    if (interrupted.aborted || nextAt > started + plan.durationMs) break;
    await pause(nextAt - performance.now(), interrupted);
    if (interrupted.aborted) break;
  }
  return errors.length === 0 ? { file } : { file, error: errors[0]! };
}

function pause(ms: number, signal: AbortSignal): Promise<void> {
  return new Promise((resolve) => {
    const timer = setLongTimeout(resolve, ms, false);
    signal.addEventListener('abort', () => { timer.clear(); resolve(); }, { once: true });
  });
}

/** The directory as `<dir>.tar.gz` beside it (its entries under the directory's name); the directory is removed. */
async function archive(dir: string): Promise<string> {
  const { create } = await import('tar');
  const file = `${dir}.tar.gz`;
  await create({ gzip: true, file, cwd: dirname(dir), portable: true }, [basename(dir)]);
  await rm(dir, { recursive: true, force: true });
  return file;
}
