/**
 * `roster monitor [--log-level <level>] [--log-json]`: prints the agent's log as it is written
 * (`GET /v1/agent/monitor`), like `consul monitor`, whatever level the agent itself logs at. It runs until
 * interrupted (exit 0), or until the agent ends the answer (exit 1: the agent stopped, or the token
 * expired).
 */
import { monitorLevels } from '../http/api.ts';
import { failureOf, readAnswer } from './client.ts';
import type { CliContext } from './context.ts';
import { CliError, usageError } from './errors.ts';
import { onOutputFailure } from './stdout.ts';

/** The levels `/v1/agent/monitor` takes (a list of constants: loading it loads nothing of the agent). */
const levels: readonly string[] = monitorLevels;

/** `--log-level`'s value, lower-cased; a usage error when the agent would refuse it. */
export function logLevelOption(given: string | undefined, fallback: string): string {
  const level = (given ?? fallback).toLowerCase();
  if (!levels.includes(level)) throw usageError(`--log-level: "${given}" is not one of ${levels.join(', ')}`);
  return level;
}

export interface MonitorOptions {
  logLevel?: string;
  logJson?: boolean;
}

export async function monitorCommand(ctx: CliContext, o: MonitorOptions): Promise<number> {
  const level = logLevelOption(o.logLevel, 'info');
  const interrupted = new AbortController();
  const stop = () => interrupted.abort();
  process.once('SIGINT', stop);
  process.once('SIGTERM', stop);
  // stdout that cannot take more ends the monitor; roster.ts then names the failure (stdout.ts).
  const unlisten = onOutputFailure(stop);
  try {
    const res = await ctx.client.openAnswer('/v1/agent/monitor', { query: { loglevel: level, logjson: o.logJson === true }, signal: interrupted.signal });
    if (res.statusCode !== 200) throw failureOf(await readAnswer(res));
    for await (const chunk of res) ctx.out(chunk as Buffer);
    throw new CliError('the agent ended the monitor: it stopped, or the token expired');
  } catch (err) {
    if (interrupted.signal.aborted) return 0;
    if (err instanceof CliError) throw err;
    // The connection broke while lines were coming (the agent was killed).
    throw new CliError(`the agent ended the monitor: ${err instanceof Error ? err.message : String(err)}`);
  } finally {
    unlisten();
    process.off('SIGINT', stop);
    process.off('SIGTERM', stop);
  }
}
