/**
 * The agent's log lines as they are written, for `/v1/agent/monitor` (Consul's `consul monitor`). The tap
 * is pino's destination: it passes each line at or above the configured level (`log_level`) on to the
 * real output (stdout, or pino-pretty), and hands lines to each follower at or above the level that
 * follower asked for. While followers want more detail than the configured level, the logger runs at the
 * lowest level any of them asked for; the output still gets only what the configured level lets through.
 *
 * pino tells a destination marked with `Symbol.for('pino.metadata')` the level of the line it is about
 * to write (`lastLevel`), so no line is parsed to route it; a text follower's rendering parses it once.
 */
import type { Logger } from 'pino';
import { monitorLevels, type LogRedaction, type MonitorLevel } from '../http/index.ts';

/** pino's level numbers; `silent` lets nothing through. */
const levelValues: Record<string, number> = { trace: 10, debug: 20, info: 30, warn: 40, error: 50, fatal: 60, silent: Infinity };
const levelNames: Record<number, string> = { 10: 'TRACE', 20: 'DEBUG', 30: 'INFO', 40: 'WARN', 50: 'ERROR', 60: 'FATAL' };

/** Where the lines the configured level lets through go (a SonicBoom on stdout, or pino-pretty). */
export interface LogSink {
  write(line: string): unknown;
  flush?(cb?: (err?: Error | null) => void): void;
  flushSync?(): void;
}

interface Follower {
  level: number;
  json: boolean;
  deliver(line: string): void;
  /** What of each line it may not see (the monitor's ACL view); absent: it sees every line as it is. */
  redact: LogRedaction | undefined;
  /** It has been handed a line: one that has not by the end of `follow` is handed its announcement directly. */
  handed: boolean;
}

const pinoMetadata = Symbol.for('pino.metadata');

export class LogTap {
  /** pino sets `lastLevel` (and the line's object, message and time) before each write. */
  readonly [pinoMetadata] = true;
  lastLevel = 0;
  private configured: string;
  private readonly followers = new Set<Follower>();
  private logger: Logger | undefined;
  /** Lines logged while a follower is being handed one (by the socket code under it) reach the sink only. */
  private delivering = false;
  /** Inside `always`: every line reaches the sink. */
  private unfiltered = false;

  constructor(private readonly sink: LogSink, level: string) {
    this.configured = level;
  }

  /** The logger writing here: its level follows the configured one and the followers'. */
  attach(logger: Logger): void {
    this.logger = logger;
    this.applyLevel();
  }

  /** The configured level (at start and on reload). */
  setLevel(level: string): void {
    this.configured = level;
    this.applyLevel();
  }

  get followed(): number {
    return this.followers.size;
  }

  /**
   * Hands every later line at `level` or above to `deliver`, as pino's JSON line or as text (both end
   * with a newline). The follower's first line is its announcement, logged at info: a follower whose
   * level leaves info out is handed it all the same, so every follower's answer starts at once.
   * With `redact`, each line is put through it first. Returns the function that stops following.
   */
  follow(level: MonitorLevel, json: boolean, deliver: (line: string) => void, announce: { msg: string; fields: Record<string, unknown> },
    redact?: LogRedaction): () => void {
    const f: Follower = { level: levelValues[level]!, json, deliver, redact, handed: false };
    this.followers.add(f);
    this.applyLevel();
    this.logger?.info(announce.fields, announce.msg);
    if (!f.handed) {
      const line = `${JSON.stringify({ level: levelValues.info, time: Date.now(), ...this.logger?.bindings(), ...announce.fields, msg: announce.msg })}\n`;
      this.hand(f, line, { text: undefined });
    }
    return () => {
      if (!this.followers.delete(f)) return;
      this.applyLevel();
    };
  }

  /**
   * Runs `log` with info lines reaching the output whatever the configured level (but `silent`): for the
   * line that says the agent is ready, which operators and supervisors wait for.
   */
  always(log: (logger: Logger) => void): void {
    const logger = this.logger;
    if (logger === undefined || this.configured === 'silent') return;
    const level = logger.level;
    if (levelValues[level]! > levelValues.info!) logger.level = 'info';
    this.unfiltered = true;
    try {
      log(logger);
    } finally {
      this.unfiltered = false;
      logger.level = level;
    }
  }

  /** pino's write: the sink gets what the configured level lets through, each follower what it asked for. */
  write(line: string): void {
    const level = this.lastLevel;
    if (level >= levelValues[this.configured]! || this.unfiltered) this.sink.write(line);
    if (this.followers.size === 0 || this.delivering) return;
    const rendered = { text: undefined as string | undefined };
    for (const f of this.followers) if (level >= f.level) this.hand(f, line, rendered);
  }

  flush(cb?: (err?: Error | null) => void): void {
    if (this.sink.flush !== undefined) this.sink.flush(cb);
    else cb?.();
  }

  flushSync(): void {
    this.sink.flushSync?.();
  }

  /** `rendered` keeps the text form of `line` once made, for the other text followers of the same line. */
  private hand(f: Follower, line: string, rendered: { text: string | undefined }): void {
    f.handed = true;
    this.delivering = true;
    try {
      const own = f.redact === undefined ? line : redacted(line, f.redact);
      if (own === undefined) return;
      if (own !== line) f.deliver(f.json ? own : logLineText(own));
      else f.deliver(f.json ? line : (rendered.text ??= logLineText(line)));
    } finally {
      this.delivering = false;
    }
  }

  private applyLevel(): void {
    if (this.logger === undefined) return;
    let lowest = this.configured;
    for (const f of this.followers) if (f.level < levelValues[lowest]!) lowest = monitorLevels.find((l) => levelValues[l] === f.level)!;
    if (this.logger.level !== lowest) this.logger.level = lowest;
  }
}

/**
 * A JSON line as `redact` leaves it: the same string when it changed nothing, the changed object's line when
 * it did, undefined when the line may not be shown (or is not a JSON object, so nothing in it can be judged).
 */
function redacted(line: string, redact: LogRedaction): string | undefined {
  let entry: unknown;
  try {
    entry = JSON.parse(line);
  } catch {
    return undefined;
  }
  if (typeof entry !== 'object' || entry === null || Array.isArray(entry)) return undefined;
  const changed = redact(entry as Record<string, unknown>);
  if (changed === undefined) return undefined;
  return changed ? `${JSON.stringify(entry)}\n` : line;
}

/** Fields every line has, left out of the text form (the time and level lead it, the node is the agent's). */
const leadFields = new Set(['level', 'time', 'msg', 'node', 'pid', 'hostname']);

/**
 * One JSON log line as a line of text in the shape `consul monitor` prints:
 * `2026-11-28T09:24:22.441Z [INFO]  message: key=value key="two words"`. An error shows its message.
 */
export function logLineText(line: string): string {
  let o: Record<string, unknown>;
  try {
    o = JSON.parse(line) as Record<string, unknown>;
  } catch {
    return line.endsWith('\n') ? line : `${line}\n`;
  }
  const time = typeof o.time === 'number' ? new Date(o.time).toISOString() : String(o.time ?? '');
  const level = `[${levelNames[o.level as number] ?? String(o.level)}]`.padEnd(8);
  let text = `${time} ${level}${typeof o.msg === 'string' ? o.msg : ''}`;
  const pairs: string[] = [];
  for (const [k, v] of Object.entries(o)) {
    if (leadFields.has(k)) continue;
    pairs.push(`${k}=${fieldText(k, v)}`);
  }
  if (pairs.length > 0) text += `: ${pairs.join(' ')}`;
  return `${text}\n`;
}

function fieldText(key: string, v: unknown): string {
  if (key === 'err' && typeof v === 'object' && v !== null && typeof (v as { message?: unknown }).message === 'string') {
    return JSON.stringify((v as { message: string }).message);
  }
  if (typeof v === 'string') return /^[^\s"=]+$/.test(v) ? v : JSON.stringify(v);
  return JSON.stringify(v) ?? String(v);
}
