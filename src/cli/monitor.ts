/**
 * `roster monitor [--log-level <level>] [--log-json]`: prints the agent's log as it is written
 * (`GET /v1/agent/monitor`), like `consul monitor`, whatever level the agent itself logs at. It runs until
 * interrupted (exit 0), or until the agent ends the answer (exit 1: the agent stopped, or the token
 * expired). Text lines are shown as other commands show registry text to people, each control character
 * escaped (a key name in a request line cannot send the terminal a command); `--log-json` lines are exact.
 */
import { StringDecoder } from 'node:string_decoder';
import { monitorLevels } from '../http/api.ts';
import { failureOf, readAnswer } from './client.ts';
import type { CliContext } from './context.ts';
import { CliError, usageError } from './errors.ts';
import { shown } from './output.ts';
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
    const lines = o.logJson === true ? undefined : new TextLines((line) => ctx.out(`${shown(line)}\n`));
    try {
      for await (const chunk of res) {
        if (lines === undefined) ctx.out(chunk as Buffer);
        else lines.write(chunk as Buffer);
      }
    } finally {
      lines?.end();
    }
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

/** A line longer than this (an agent's are far shorter) is handed on in pieces of this length, so none grows without bound. */
const lineCharsMax = 1024 * 1024;

/** Cuts UTF-8 text arriving in chunks into lines (without their newline); `end` hands on a last unfinished one. */
class TextLines {
  private readonly decoder = new StringDecoder('utf8');
  private partial = '';

  constructor(private readonly line: (text: string) => void) {}

  write(chunk: Buffer): void {
    const parts = (this.partial + this.decoder.write(chunk)).split('\n');
    this.partial = parts.pop()!;
    for (const part of parts) this.line(part);
    while (this.partial.length > lineCharsMax) {
      this.line(this.partial.slice(0, lineCharsMax));
      this.partial = this.partial.slice(lineCharsMax);
    }
  }

  end(): void {
    const rest = this.partial + this.decoder.end();
    this.partial = '';
    if (rest !== '') this.line(rest);
  }
}
