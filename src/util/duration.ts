import parse from 'parse-duration';

/**
 * Go's time.ParseDuration grammar, which Consul uses for every duration (wait, TTL, LockDelay, ...):
 * an optional sign, then one or more decimal numbers each with a unit; "0" alone is valid and a bare
 * number is not. parse-duration does the arithmetic; it is more liberal (spaces, bare numbers,
 * exponents), so this pattern admits only what Go admits first.
 */
const goDurationPattern = /^[-+]?(?:0|(?:(?:\d+(?:\.\d*)?|\.\d+)(?:ns|us|µs|μs|ms|s|m|h))+)$/;

/**
 * The longest duration anything accepts, in either sign: Go's, an int64 of nanoseconds (about 292 years).
 * Consul refuses a longer text as an invalid duration, and so does every duration Roster reads (API
 * fields, query parameters, configuration). Timers longer than Node's own limit are re-armed in steps
 * (util/timer.ts), so every accepted duration is waited for in full.
 */
export const goDurationNsMax = 2 ** 63 - 1;
export const goDurationMaxText = '2562047h47m16.854775807s';

/** The rule text for a duration field: what to send and the maximum. */
export const goDurationRule = `must be a duration such as 10s, at most ${goDurationMaxText}`;

/** A parsed duration, or why the text is not one: not Go's grammar, or beyond goDurationNsMax. */
export type GoDuration = { ns: number } | { problem: 'format' | 'range' };

/**
 * The text read last and what it gave. Clients send the same few durations again and again (a blocking
 * query's or a queued acquire's `wait`), and reading one costs a few µs; the answers are frozen, so
 * handing the same one out twice is safe.
 */
let lastText: string | undefined;
let lastRead: GoDuration = Object.freeze({ problem: 'format' as const });

/** Parses a Go duration string to integer nanoseconds, telling a bad text from an overlong one. */
export function readGoDuration(text: string): GoDuration {
  if (text === lastText) return lastRead;
  const read = Object.freeze(readAnew(text));
  lastText = text;
  lastRead = read;
  return read;
}

function readAnew(text: string): GoDuration {
  if (!goDurationPattern.test(text)) return { problem: 'format' };
  const ns = parse(text.replace('μs', 'us'), 'ns');
  if (ns === null || ns === undefined || Number.isNaN(ns)) return { problem: 'format' };
  if (!Number.isFinite(ns) || Math.abs(ns) > goDurationNsMax) return { problem: 'range' };
  return { ns: Math.round(ns) };
}

/** A number of nanoseconds (JSON, as Go's decoder takes it) within goDurationNsMax. */
export function nsInRange(ns: number): boolean {
  return Number.isFinite(ns) && Math.abs(ns) <= goDurationNsMax;
}

/** Parses a Go duration string to integer nanoseconds, or returns undefined when it is not one or is too long. */
export function parseGoDurationNs(text: string): number | undefined {
  const d = readGoDuration(text);
  return 'ns' in d ? d.ns : undefined;
}

export function parseGoDurationMs(text: string): number | undefined {
  const ns = parseGoDurationNs(text);
  return ns === undefined ? undefined : ns / 1e6;
}

/** Go's Duration.String(): "0s", "500ms", "1.5s", "1m30s", "1h0m0s". */
export function formatGoDuration(ns: number): string {
  if (ns === 0) return '0s';
  const sign = ns < 0 ? '-' : '';
  let n = Math.abs(Math.round(ns));
  if (n < 1e3) return `${sign}${n}ns`;
  if (n < 1e6) return `${sign}${trimFraction(n / 1e3)}µs`;
  if (n < 1e9) return `${sign}${trimFraction(n / 1e6)}ms`;
  const hours = Math.floor(n / 3.6e12);
  n -= hours * 3.6e12;
  const minutes = Math.floor(n / 6e10);
  n -= minutes * 6e10;
  const seconds = `${trimFraction(n / 1e9)}s`;
  if (hours > 0) return `${sign}${hours}h${minutes}m${seconds}`;
  if (minutes > 0) return `${sign}${minutes}m${seconds}`;
  return `${sign}${seconds}`;
}

function trimFraction(x: number): string {
  return String(Number(x.toFixed(9)));
}
