/**
 * Go's time.ParseDuration, which Consul uses for every duration (wait, TTL, LockDelay, ...): an optional
 * sign, then one or more decimal numbers (a whole part, a fraction, or both) each with a unit of ns, us,
 * µs, μs, ms, s, m or h; "0" alone is valid and a bare number is not. Read here by the same steps and with
 * the same integer arithmetic, so a text is taken or refused exactly as Go takes or refuses it, and a
 * refusal carries Go's own error text, which the consul dialect answers with.
 */

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

/**
 * A parsed duration, or why the text is not one: not Go's grammar, or beyond goDurationNsMax; `goError`
 * is what Go's ParseDuration says of it (`time: missing unit in duration "20"`).
 */
export type GoDuration = { ns: number } | { problem: 'format' | 'range'; goError: string };

/**
 * The text read last and what it gave. Clients send the same few durations again and again (a blocking
 * query's or a queued acquire's `wait`), and reading one costs a few µs; the answers are frozen, so
 * handing the same one out twice is safe.
 */
let lastText: string | undefined;
let lastRead: GoDuration = Object.freeze({ problem: 'format' as const, goError: 'time: invalid duration ""' });

/** Parses a Go duration string to integer nanoseconds, telling a bad text from an overlong one. */
export function readGoDuration(text: string): GoDuration {
  if (text === lastText) return lastRead;
  const read = Object.freeze(readAnew(text));
  lastText = text;
  lastRead = read;
  return read;
}

/** Nanoseconds per unit. */
const units = new Map<string, bigint>([
  ['ns', 1n], ['us', 1_000n], ['\u00b5s', 1_000n], ['\u03bcs', 1_000n], ['ms', 1_000_000n],
  ['s', 1_000_000_000n], ['m', 60_000_000_000n], ['h', 3_600_000_000_000n],
]);
/** 2^63: a sum past it overflows Go's arithmetic (its magnitude may reach it only when negative). */
const twoTo63 = 1n << 63n;
/** A fraction stops taking digits past this, keeping the precision it has. */
const fractionDigitsMax = (twoTo63 - 1n) / 10n;

const isDigit = (c: string | undefined) => c !== undefined && c >= '0' && c <= '9';

/** "time: invalid duration <text>": Go's answer to everything but a missing or unknown unit. */
export function goInvalidDuration(text: string): string {
  return `time: invalid duration ${goQuote(text)}`;
}

function readAnew(text: string): GoDuration {
  const invalid = (problem: 'format' | 'range'): GoDuration => ({ problem, goError: goInvalidDuration(text) });
  let s = text;
  let negative = false;
  if (s[0] === '-' || s[0] === '+') {
    negative = s[0] === '-';
    s = s.slice(1);
  }
  if (s === '0') return { ns: 0 };
  if (s === '') return invalid('format');
  let total = 0n;
  let i = 0;
  while (i < s.length) {
    if (s[i] !== '.' && !isDigit(s[i])) return invalid('format');
    const wholeAt = i;
    let whole = 0n;
    for (; isDigit(s[i]); i++) {
      whole = whole * 10n + BigInt(s.charCodeAt(i) - 48);
      if (whole > twoTo63) return invalid('range');
    }
    const hasWhole = i > wholeAt;
    let fraction = 0n;
    let scale = 1;
    let hasFraction = false;
    if (s[i] === '.') {
      const fractionAt = ++i;
      let full = false;
      for (; isDigit(s[i]); i++) {
        if (full || fraction > fractionDigitsMax) { full = true; continue; }
        const next = fraction * 10n + BigInt(s.charCodeAt(i) - 48);
        if (next > twoTo63) { full = true; continue; }
        fraction = next;
        scale *= 10;
      }
      hasFraction = i > fractionAt;
    }
    if (!hasWhole && !hasFraction) return invalid('format');
    const unitAt = i;
    while (i < s.length && s[i] !== '.' && !isDigit(s[i])) i++;
    if (i === unitAt) return { problem: 'format', goError: `time: missing unit in duration ${goQuote(text)}` };
    const unitText = s.slice(unitAt, i);
    const unit = units.get(unitText);
    if (unit === undefined) return { problem: 'format', goError: `time: unknown unit ${goQuote(unitText)} in duration ${goQuote(text)}` };
    if (whole > twoTo63 / unit) return invalid('range');
    let part = whole * unit;
    // The fraction's share is taken in floating point and truncated, as Go does (exact to the nanosecond up to hours).
    if (fraction > 0n) {
      part += BigInt(Math.trunc(Number(fraction) * (Number(unit) / scale)));
      if (part > twoTo63) return invalid('range');
    }
    total += part;
    if (total > twoTo63) return invalid('range');
  }
  if (negative) return { ns: total === 0n ? 0 : -Number(total) };
  if (total > twoTo63 - 1n) return invalid('range');
  return { ns: Number(total) };
}

/**
 * A text quoted as Go's time package quotes it in its errors: in double quotes, `"` and `\` escaped, and
 * every character outside printable ASCII written as the \xhh escapes of its UTF-8 bytes.
 */
export function goQuote(text: string): string {
  let out = '"';
  for (const c of text) {
    const code = c.codePointAt(0)!;
    if (code >= 0x80 || code < 0x20) {
      for (const byte of Buffer.from(c, 'utf8')) out += `\\x${byte.toString(16).padStart(2, '0')}`;
    } else {
      out += c === '"' || c === '\\' ? `\\${c}` : c;
    }
  }
  return `${out}"`;
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
