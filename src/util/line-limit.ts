/**
 * Bounds how many lines of one kind reach the log where clients decide how often they happen (a request
 * answered with a server error, a connection refused): a token bucket of `burst` lines, refilled at
 * `perSecond`. A line past it is not written but counted, and `reportAfterMs` after the first one left
 * out a single line says how many were (`N similar lines suppressed: "<message>"`), so a flood of requests
 * costs the log a few lines a second and nothing goes unsaid.
 */

/** The longest `reportAfterMs` taken: a count told later than a minute would be told too late to help. */
const reportAfterMsMax = 60_000;

export interface LineLimitOptions {
  /** Lines written back to back before the rate applies. @default 20 */
  burst?: number;
  /** Lines a second written once the burst is spent. @default 1 */
  perSecond?: number;
  /** How long after the first line left out the count of them is told. @default 5000 */
  reportAfterMs?: number;
}

/** What a limited kind of line is written with: its level and message, the fields the count line carries. */
export interface LimitedLogger {
  warn(obj: object, msg: string): void;
  error(obj: object, msg: string): void;
}

export class LineLimit {
  readonly #burst: number;
  readonly #perMs: number;
  readonly #reportAfterMs: number;
  #tokens: number;
  #refilledMs = performance.now();
  #suppressed = 0;
  #timer: ReturnType<typeof setTimeout> | undefined;

  /** `report` is told how many lines were left out, once per `reportAfterMs` while lines are. */
  constructor(private readonly report: (suppressed: number) => void, o: LineLimitOptions = {}) {
    this.#burst = o.burst ?? 20;
    this.#perMs = (o.perSecond ?? 1) / 1000;
    this.#reportAfterMs = o.reportAfterMs ?? 5000;
    this.#tokens = this.#burst;
  }

  /** Whether the next line of this kind may be written now; when not, it is counted. */
  admit(): boolean {
    const now = performance.now();
    this.#tokens = Math.min(this.#burst, this.#tokens + (now - this.#refilledMs) * this.#perMs);
    this.#refilledMs = now;
    if (this.#tokens >= 1) {
      this.#tokens -= 1;
      return true;
    }
    this.#suppressed++;
    if (this.#timer === undefined) {
      this.#timer = setTimeout(() => this.#tell(), Math.min(reportAfterMsMax, this.#reportAfterMs));
      this.#timer.unref();
    }
    return false;
  }

  #tell(): void {
    this.#timer = undefined;
    const suppressed = this.#suppressed;
    this.#suppressed = 0;
    if (suppressed > 0) this.report(suppressed);
  }
}

/** A LineLimit whose count line is logged at `level`: `N similar lines suppressed: "<msg>"`, fields `suppressed` and `of`. */
export function lineLimit(logger: LimitedLogger, level: 'warn' | 'error', msg: string, o?: LineLimitOptions): LineLimit {
  return new LineLimit((suppressed) => logger[level]({ suppressed, of: msg }, `${suppressed} similar lines suppressed: "${msg}"`), o);
}

/**
 * One LineLimit per logger and kind of line, made on first use: for lines written from functions that
 * hold no state of their own but the logger they are handed.
 */
const limits = new WeakMap<object, Map<string, LineLimit>>();

export function lineLimitOf(logger: LimitedLogger, level: 'warn' | 'error', msg: string, o?: LineLimitOptions): LineLimit {
  let kinds = limits.get(logger);
  if (kinds === undefined) limits.set(logger, kinds = new Map());
  let limit = kinds.get(msg);
  if (limit === undefined) kinds.set(msg, limit = lineLimit(logger, level, msg, o));
  return limit;
}
