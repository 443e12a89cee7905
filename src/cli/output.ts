/**
 * Output of the `roster` command: exact JSON (uint64 KV flags survive), aligned tables, colours only
 * when the stream is a terminal and NO_COLOR is unset, and a spinner on stderr for long waits.
 */
import picocolors from 'picocolors';

export type Colors = ReturnType<typeof picocolors.createColors>;

/**
 * The NO_COLOR convention: any non-empty NO_COLOR turns colours off. Each colour escapes the control
 * characters of its text (see shown) and the result is known as painted: table and fields keep its escapes.
 */
export function colorsFor(stream: NodeJS.WriteStream, env: NodeJS.ProcessEnv): Colors {
  const enabled = stream.isTTY === true && (env.NO_COLOR === undefined || env.NO_COLOR === '');
  const base = picocolors.createColors(enabled);
  const colors: Record<string, unknown> = { ...base };
  for (const [name, paint] of Object.entries(base)) {
    if (typeof paint !== 'function') continue;
    colors[name] = (text: unknown) => {
      const result = (paint as (t: string) => string)(shown(String(text)));
      painted.add(result);
      return result;
    };
  }
  return colors as unknown as Colors;
}

/** Strings made by a colour of colorsFor: their only escapes are its own. */
const painted = new Set<string>();

/**
 * Characters that would act on a terminal instead of being shown: C0 controls (newline and tab
 * included), DEL, C1 controls, and the bidirectional marks, embeddings, overrides and isolates that
 * reorder what is displayed.
 */
// eslint-disable-next-line no-control-regex
const controlPattern = /[\u0000-\u001f\u007f-\u009f\u061c\u200e\u200f\u202a-\u202e\u2066-\u2069]/g;
// eslint-disable-next-line no-control-regex
const controlPatternButLines = /[\u0000-\u0008\u000b-\u001f\u007f-\u009f\u061c\u200e\u200f\u202a-\u202e\u2066-\u2069]/g;
const namedEscapes: Record<string, string> = { '\n': '\\n', '\r': '\\r', '\t': '\\t' };

function escapeOne(ch: string): string {
  const code = ch.charCodeAt(0);
  return namedEscapes[ch] ?? (code < 0x100 ? `\\x${code.toString(16).padStart(2, '0')}` : `\\u${code.toString(16).padStart(4, '0')}`);
}

/**
 * Registry text as it is shown to people: each control character (see controlPattern) written as an
 * escape (`\n`, `\x1b`, `\u202e`), so a name cannot add a row, move the cursor or send a terminal
 * command. `keepLines` leaves newlines and tabs as they are (a whole value printed alone). A string a
 * colour made is returned as it is.
 */
export function shown(text: string, keepLines = false): string {
  if (painted.has(text)) return text;
  return text.replace(keepLines ? controlPatternButLines : controlPattern, escapeOne);
}

/** Integers this long may exceed 2^53; they are kept as exact digits. */
const unsafeDigitsMin = 16;
const bigMark = '\u0000big:';

/**
 * JSON.parse that keeps integers beyond 2^53 exact (as BigInt): KV `Flags` are uint64. Numbers are
 * found by a scan that skips string literals, so a key or value that looks like a number is untouched.
 */
export function parseExactJson(text: string): unknown {
  let out = '';
  let i = 0;
  while (i < text.length) {
    const c = text[i]!;
    if (c === '"') {
      let j = i + 1;
      while (j < text.length && text[j] !== '"') j += text[j] === '\\' ? 2 : 1;
      out += text.slice(i, j + 1);
      i = j + 1;
    } else if (c === '-' || (c >= '0' && c <= '9')) {
      const m = /^-?\d+(\.\d+)?([eE][+-]?\d+)?/.exec(text.slice(i, i + 64))!;
      const lit = m[0];
      const digits = lit.replace('-', '').length;
      out += m[1] === undefined && m[2] === undefined && digits >= unsafeDigitsMin ? `"\\u0000big:${lit}"` : lit; // the marker as a JSON escape
      i += lit.length;
    } else {
      out += c;
      i += 1;
    }
  }
  return JSON.parse(out, (_k, v: unknown) => (typeof v === 'string' && v.startsWith(bigMark) ? BigInt(v.slice(bigMark.length)) : v));
}

/** JSON.stringify that writes BigInt values as exact digits. */
export function stringifyExact(value: unknown, indent?: number | string): string {
  let sawBig = false;
  const text = JSON.stringify(value, (_k, v: unknown) => {
    if (typeof v !== 'bigint') return v;
    sawBig = true;
    return `${bigMark}${v.toString()}`;
  }, indent);
  return sawBig ? text.replace(/"\\u0000big:(-?\d+)"/g, '$1') : text;
}

/** The width a cell takes on screen: its text without colour escapes. */
function visibleLength(text: string): number {
  // eslint-disable-next-line no-control-regex
  return text.replace(/\u001b\[[0-9;]*m/g, '').length;
}

/** Columns padded to their widest cell (colours not counted); the last column is not padded. Cells are shown escaped. */
export function table(header: string[], rows: string[][], colors: Colors): string {
  rows = rows.map((r) => r.map((c) => shown(c)));
  const widths = header.map((h, i) => Math.max(h.length, ...rows.map((r) => visibleLength(r[i] ?? ''))));
  const pad = (c: string, i: number) => c + ' '.repeat(Math.max(0, widths[i]! - visibleLength(c)));
  const line = (cells: string[]) => cells.map((c, i) => (i === cells.length - 1 ? c : pad(c, i))).join('  ').trimEnd();
  return [colors.bold(line(header)), ...rows.map(line)].join('\n') + '\n';
}

/** `Key  value` lines with the keys aligned (Consul's -detailed style); both shown escaped. */
export function fields(pairs: [string, string][]): string {
  pairs = pairs.map(([k, v]) => [shown(k), shown(v)]);
  const width = Math.max(...pairs.map(([k]) => k.length));
  return pairs.map(([k, v]) => `${k.padEnd(width)}  ${v}`).join('\n') + '\n';
}

export function statusColor(status: string, colors: Colors): string {
  if (status === 'passing' || status === 'alive') return colors.green(status);
  if (status === 'warning' || status === 'left') return colors.yellow(status);
  if (status === 'critical' || status === 'failed') return colors.red(status);
  return status;
}

const spinnerFrames = ['⠋', '⠙', '⠹', '⠸', '⠼', '⠴', '⠦', '⠧', '⠇', '⠏'];
/** How often the spinner redraws. */
const spinnerIntervalMs = 100;

export interface Spinner {
  stop(): void;
}

/** A one-line spinner with the elapsed time on stderr, only when stderr is a terminal (else silent). */
export function spinner(text: string, stream: NodeJS.WriteStream = process.stderr): Spinner {
  if (stream.isTTY !== true) return { stop: () => {} };
  const started = performance.now();
  let frame = 0;
  const draw = () => {
    const seconds = Math.floor((performance.now() - started) / 1000);
    stream.write(`\r\u001b[2K${spinnerFrames[frame++ % spinnerFrames.length]} ${text} ${seconds}s`);
  };
  draw();
  const timer = setInterval(draw, spinnerIntervalMs);
  timer.unref();
  return {
    stop: () => {
      clearInterval(timer);
      stream.write('\r\u001b[2K');
    },
  };
}
