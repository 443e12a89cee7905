/**
 * The few pieces of Go's strconv that bexpr's behaviour (and so its error texts) rests on: %q quoting,
 * Unquote of filter string literals, and the ParseInt/ParseUint/ParseFloat/ParseBool coercions.
 * Each parser returns the value or the exact Go error text, so callers can quote it to the user.
 */

export type Parsed<T> = { ok: true; value: T } | { ok: false; error: string };

const printable = /^[\p{L}\p{M}\p{N}\p{P}\p{S} ]$/u;
const shortEscapes: Record<string, string> = {
  '"': '\\"',
  '\\': '\\\\',
  '\x07': '\\a',
  '\b': '\\b',
  '\f': '\\f',
  '\n': '\\n',
  '\r': '\\r',
  '\t': '\\t',
  '\v': '\\v',
};

/** Go's strconv.Quote (fmt's %q): printable runes stay, the rest become \x, \u or \U escapes. */
export function goQuote(text: string): string {
  let out = '"';
  for (const ch of text) out += shortEscapes[ch] ?? (printable.test(ch) ? ch : hexEscape(ch.codePointAt(0) ?? 0));
  return `${out}"`;
}

/** %q of a []string, as bexpr prints selectors: ["Service" "Meta" "env"]. */
export function goQuoteList(items: readonly string[]): string {
  return `[${items.map(goQuote).join(' ')}]`;
}

function hexEscape(cp: number): string {
  if (cp < 0x20 || cp === 0x7f) return `\\x${cp.toString(16).padStart(2, '0')}`;
  if (cp >= 0xd800 && cp <= 0xdfff) return '\\ufffd'; // Go substitutes invalid runes before quoting
  if (cp < 0x10000) return `\\u${cp.toString(16).padStart(4, '0')}`;
  return `\\U${cp.toString(16).padStart(8, '0')}`;
}

/**
 * strconv.Unquote of a `raw` or "interpreted" literal including its quotes; undefined where Go says
 * "invalid syntax". \x and octal escapes are bytes, so the result is assembled as UTF-8 and decoded.
 */
export function goUnquote(literal: string): string | undefined {
  const body = literal.slice(1, -1);
  if (literal.startsWith('`')) return body.replaceAll('\r', ''); // Go drops CR from raw strings
  if (body.includes('\n')) return undefined;
  // Without escapes every character stands for itself (a lone surrogate becomes U+FFFD, as below).
  if (!body.includes('\\')) return Buffer.from(body, 'utf8').toString('utf8');
  const bytes: number[] = [];
  for (let i = 0; i < body.length; ) {
    const step = unquoteChar(body, i, bytes);
    if (step === undefined) return undefined;
    i = step;
  }
  return Buffer.from(bytes).toString('utf8');
}

const simpleEscapes: Record<string, number> = { a: 7, b: 8, f: 12, n: 10, r: 13, t: 9, v: 11, '\\': 92, '"': 34 };

/** One source character or escape at i: appends its bytes, returns the next index (undefined = bad). */
function unquoteChar(body: string, i: number, bytes: number[]): number | undefined {
  const ch = body[i] as string;
  if (ch !== '\\') {
    const cp = body.codePointAt(i) ?? 0;
    const text = String.fromCodePoint(cp);
    bytes.push(...Buffer.from(text, 'utf8'));
    return i + text.length;
  }
  const kind = body[i + 1];
  if (kind === undefined) return undefined;
  const simple = simpleEscapes[kind];
  if (simple !== undefined) return bytes.push(simple), i + 2;
  if (kind >= '0' && kind <= '7') return octalEscape(body, i, bytes);
  const width = kind === 'x' ? 2 : kind === 'u' ? 4 : kind === 'U' ? 8 : 0;
  if (width === 0) return undefined;
  const digits = body.slice(i + 2, i + 2 + width);
  if (!/^[0-9a-fA-F]+$/.test(digits) || digits.length !== width) return undefined;
  const value = parseInt(digits, 16);
  if (kind === 'x') return bytes.push(value), i + 2 + width; // a single byte, maybe not UTF-8
  if (value > 0x10ffff || (value >= 0xd800 && value <= 0xdfff)) return undefined;
  bytes.push(...Buffer.from(String.fromCodePoint(value), 'utf8'));
  return i + 2 + width;
}

function octalEscape(body: string, i: number, bytes: number[]): number | undefined {
  const digits = body.slice(i + 1, i + 4);
  if (!/^[0-7]{3}$/.test(digits)) return undefined;
  const value = parseInt(digits, 8);
  if (value > 255) return undefined;
  bytes.push(value);
  return i + 4;
}

const uint64Max = (1n << 64n) - 1n;
const int64Max = (1n << 63n) - 1n;

/** strconv.ParseInt(s, 0, 64): sign, 0x/0o/0b/0 prefixes and Go-style underscores. */
export function parseGoInt(text: string): Parsed<bigint> {
  const negative = text.startsWith('-');
  const unsigned = text.startsWith('-') || text.startsWith('+') ? text.slice(1) : text;
  const parsed = parseUnsigned(unsigned);
  if (parsed === 'syntax') return numError('ParseInt', text, 'invalid syntax');
  const limit = negative ? int64Max + 1n : int64Max;
  if (parsed === 'range' || parsed > limit) return numError('ParseInt', text, 'value out of range');
  return { ok: true, value: negative ? -parsed : parsed };
}

/** strconv.ParseUint(s, 0, 64): like ParseInt without a sign. */
export function parseGoUint(text: string): Parsed<bigint> {
  const parsed = parseUnsigned(text);
  if (parsed === 'syntax') return numError('ParseUint', text, 'invalid syntax');
  if (parsed === 'range') return numError('ParseUint', text, 'value out of range');
  return { ok: true, value: parsed };
}

/** ParseUint's digit loop with base 0; a range error wins over a later bad digit, as in Go. */
function parseUnsigned(text: string): bigint | 'syntax' | 'range' {
  if (text === '') return 'syntax';
  const { base, digits } = splitBasePrefix(text);
  let value = 0n;
  for (const ch of digits) {
    if (ch === '_') continue;
    const digit = parseInt(ch, 36);
    if (Number.isNaN(digit) || digit >= base) return 'syntax';
    value = value * BigInt(base) + BigInt(digit);
    if (value > uint64Max) return 'range';
  }
  if (text.includes('_') && !underscoreOk(text)) return 'syntax';
  return value;
}

function splitBasePrefix(text: string): { base: number; digits: string } {
  if (text[0] !== '0') return { base: 10, digits: text };
  const prefix = text.length >= 3 ? text[1]?.toLowerCase() : undefined;
  if (prefix === 'x') return { base: 16, digits: text.slice(2) };
  if (prefix === 'o') return { base: 8, digits: text.slice(2) };
  if (prefix === 'b') return { base: 2, digits: text.slice(2) };
  return { base: 8, digits: text.slice(1) }; // a leading 0 means octal; "0" alone is zero
}

/** Go's underscoreOK: "_" only between digits (a base prefix counts as a digit). */
function underscoreOk(text: string): boolean {
  let s = /^[+-]/.test(text) ? text.slice(1) : text;
  let saw = '^';
  let hex = false;
  if (/^0[bBoOxX]/.test(s)) {
    saw = '0';
    hex = s[1]?.toLowerCase() === 'x';
    s = s.slice(2);
  }
  for (const ch of s) {
    if (/[0-9]/.test(ch) || (hex && /[a-fA-F]/.test(ch))) saw = '0';
    else if (ch === '_') {
      if (saw !== '0') return false;
      saw = '_';
    } else {
      if (saw === '_') return false;
      saw = '!';
    }
  }
  return saw !== '_';
}

const decimalFloat = /^(?=\.?[0-9])[0-9_]*(?:\.[0-9_]*)?(?:[eE][+-]?[0-9_]+)?$/;
const hexFloat = /^0[xX](?=\.?[0-9a-fA-F])([0-9a-fA-F_]*)(?:\.([0-9a-fA-F_]*))?[pP]([+-]?[0-9_]+)$/;

/** strconv.ParseFloat(s, 64): decimal and hex forms, inf/infinity/nan, Go-style underscores. */
export function parseGoFloat(text: string): Parsed<number> {
  const sign = text.startsWith('-') ? -1 : 1;
  const body = /^[+-]/.test(text) ? text.slice(1) : text;
  if (/^(inf|infinity)$/i.test(body)) return { ok: true, value: sign * Infinity };
  if (/^nan$/i.test(body)) return { ok: true, value: NaN };
  const magnitude = floatMagnitude(body);
  if (magnitude === undefined || (body.includes('_') && !underscoreOk(body))) {
    return numError('ParseFloat', text, 'invalid syntax');
  }
  if (!Number.isFinite(magnitude)) return numError('ParseFloat', text, 'value out of range');
  return { ok: true, value: sign * magnitude };
}

function floatMagnitude(body: string): number | undefined {
  if (decimalFloat.test(body)) return Number(body.replaceAll('_', ''));
  const hex = hexFloat.exec(body.replaceAll('_', ''));
  if (!hex) return undefined;
  const fraction = hex[2] ?? '';
  const mantissa = Number(BigInt(`0x${hex[1] ?? ''}${fraction}`)); // the lookahead promises a digit
  return mantissa * 2 ** (Number(hex[3]) - 4 * fraction.length);
}

const goBools: Record<string, boolean> = {
  '1': true, t: true, T: true, TRUE: true, true: true, True: true,
  '0': false, f: false, F: false, FALSE: false, false: false, False: false,
};

/** strconv.ParseBool: exactly 1 t T TRUE true True and 0 f F FALSE false False. */
export function parseGoBool(text: string): Parsed<boolean> {
  const value = Object.hasOwn(goBools, text) ? goBools[text] : undefined;
  return value === undefined ? numError('ParseBool', text, 'invalid syntax') : { ok: true, value };
}

/** *strconv.NumError's text. */
function numError(fn: string, text: string, why: string): { ok: false; error: string } {
  return { ok: false, error: `strconv.${fn}: parsing ${goQuote(text)}: ${why}` };
}
