import parse from 'parse-duration';

/**
 * Go's time.ParseDuration grammar, which Consul uses for every duration (wait, TTL, LockDelay, ...):
 * an optional sign, then one or more decimal numbers each with a unit; "0" alone is valid and a bare
 * number is not. parse-duration does the arithmetic; it is more liberal (spaces, bare numbers,
 * exponents), so this pattern admits only what Go admits first.
 */
const goDurationPattern = /^[-+]?(?:0|(?:(?:\d+(?:\.\d*)?|\.\d+)(?:ns|us|µs|μs|ms|s|m|h))+)$/;

/** Parses a Go duration string to integer nanoseconds, or returns undefined when it is not one. */
export function parseGoDurationNs(text: string): number | undefined {
  if (!goDurationPattern.test(text)) return undefined;
  const ns = parse(text.replace('μs', 'us'), 'ns');
  if (ns === null || ns === undefined || !Number.isFinite(ns)) return undefined;
  return Math.round(ns);
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
