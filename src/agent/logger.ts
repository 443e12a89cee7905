/**
 * The agent's logger. `json` writes pino's lines as they are, one JSON object a line, for log
 * collectors. `pretty` renders them for a person at a terminal: local time, level name, message, and
 * the other fields on the same line. Either way the lines reach standard output through a bounded queue
 * (log-output.ts: a slow reader loses lines, not the agent's memory, and never holds the process at
 * exit), behind the log tap (log-tap.ts), which also hands lines to `/v1/agent/monitor`.
 */
import { pino, type Logger } from 'pino';
import pretty from 'pino-pretty';
import type { Config } from '../config.ts';
import { LogOutput } from './log-output.ts';
import { LogTap } from './log-tap.ts';

export function createLogger(config: Pick<Config, 'logLevel' | 'logFormat' | 'nodeName'>): { logger: Logger; tap: LogTap; output: LogOutput } {
  let logger: Logger | undefined;
  const output = new LogOutput({
    out: process.stdout, err: process.stderr, ...formatOf(config.logFormat),
    dropped: (lines) => logger?.warn({ dropped: lines }, `${lines} log lines dropped: the log reader is too slow`),
  });
  const tap = new LogTap(output, config.logLevel);
  logger = pino({ level: config.logLevel, base: { node: config.nodeName } }, tap);
  tap.attach(logger);
  return { logger, tap, output };
}

function formatOf(format: Config['logFormat']): { format?: (line: string) => string } {
  if (format === 'json') return {};
  return {
    format: pretty.prettyFactory({
      // Local time to the millisecond: the clock a person at the terminal reads.
      translateTime: 'SYS:yyyy-mm-dd HH:MM:ss.l',
      singleLine: true,
      // Colours only on a terminal that takes them (pino-pretty's check honours NO_COLOR and FORCE_COLOR).
      colorize: Boolean(process.stdout.isTTY) && pretty.isColorSupported,
    }),
  };
}
