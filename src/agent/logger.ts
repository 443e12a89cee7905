/**
 * The agent's logger. `json` writes pino's lines as they are, one JSON object a line, for log
 * collectors. `pretty` renders them for a person at a terminal: local time, level name, message, and
 * the other fields on the same line. pino-pretty runs as a stream in this process (not a worker
 * transport) and writes synchronously, so every line is out before the process exits. Either output sits
 * behind the log tap (log-tap.ts), which also hands lines to `/v1/agent/monitor`.
 */
import { pino, type Logger } from 'pino';
import pretty from 'pino-pretty';
import type { Config } from '../config.ts';
import { LogTap, type LogSink } from './log-tap.ts';

export function createLogger(config: Pick<Config, 'logLevel' | 'logFormat' | 'nodeName'>): { logger: Logger; tap: LogTap } {
  const tap = new LogTap(sinkFor(config.logFormat), config.logLevel);
  const logger = pino({ level: config.logLevel, base: { node: config.nodeName } }, tap);
  tap.attach(logger);
  return { logger, tap };
}

function sinkFor(format: Config['logFormat']): LogSink {
  // What pino writes to by default: standard output through SonicBoom, flushed at exit.
  if (format === 'json') return pino.destination({ dest: 1 });
  return pretty({
    destination: 1,
    sync: true,
    // Local time to the millisecond: the clock a person at the terminal reads.
    translateTime: 'SYS:yyyy-mm-dd HH:MM:ss.l',
    singleLine: true,
    // Colours only on a terminal that takes them (pino-pretty's check honours NO_COLOR and FORCE_COLOR).
    colorize: Boolean(process.stdout.isTTY) && pretty.isColorSupported,
  });
}
