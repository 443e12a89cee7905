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
