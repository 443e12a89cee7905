/**
 * The value `roster kv put` stores: the argument, `-` for stdin, `@path` for a file; `--base64` decodes it
 * first. Stdin is never read whole before anything is sent: it is read up to the agent's default limit on a
 * value (`bufferedValueBytesMax`), and a value that ends by then is sent whole with its length, as any
 * other; a longer one is sent as it is read, chunked (StreamedBody), so the agent refuses it as soon as it
 * passes the agent's own limit (413 naming it) and stdin is read no further: `yes | roster kv put k -` ends at
 * once with that refusal, and an agent configured for larger values still takes one from stdin.
 */
import { readFileSync } from 'node:fs';
import { StringDecoder } from 'node:string_decoder';
import { requestBodyBytesMax } from '../domain/limits.ts';
import { StreamedBody } from './client.ts';
import { usageError } from './errors.ts';

/** Stdin is held in memory up to this many bytes of value (an agent's default limit), then streamed. */
export const bufferedValueBytesMax = requestBodyBytesMax;

const notBase64 = () => usageError('--base64: the value is not valid base64');
/** What --base64 text may hold anywhere, skipped: the line ends of wrapped text. */
const lineEnds = /[\r\n]+/gu;

/** The value to send: the argument, `-` for stdin, `@path` for a file's bytes; `--base64` decodes it. */
export async function putValue(stdin: AsyncIterable<unknown>, data: string | undefined, base64: boolean): Promise<Buffer | StreamedBody> {
  if (data === '-') return stdinValue(stdin, base64);
  let bytes: Buffer;
  if (data === undefined) bytes = Buffer.alloc(0);
  else if (data.startsWith('@')) {
    try {
      bytes = readFileSync(data.slice(1));
    } catch (err) {
      throw usageError(`cannot read ${data.slice(1)}: ${(err as NodeJS.ErrnoException).code ?? String(err)}`);
    }
  } else bytes = Buffer.from(data, 'utf8');
  if (!base64) return bytes;
  const parts: Buffer[] = [];
  for await (const part of base64Decoded(oneChunk(bytes))) parts.push(part);
  return Buffer.concat(parts);
}

/** Stdin's value: whole when it ends within bufferedValueBytesMax, else its first bytes and the rest to stream. */
async function stdinValue(stdin: AsyncIterable<unknown>, base64: boolean): Promise<Buffer | StreamedBody> {
  const raw = asBuffers(stdin);
  const value = base64 ? base64Decoded(raw) : raw;
  const head: Buffer[] = [];
  let size = 0;
  for (;;) {
    const next = await value.next();
    if (next.done === true) return Buffer.concat(head);
    head.push(next.value);
    size += next.value.length;
    if (size > bufferedValueBytesMax) return new StreamedBody(Buffer.concat(head), value);
  }
}

async function* oneChunk(bytes: Buffer): AsyncGenerator<Buffer> {
  yield bytes;
}

async function* asBuffers(stream: AsyncIterable<unknown>): AsyncGenerator<Buffer> {
  for await (const chunk of stream) yield Buffer.isBuffer(chunk) ? chunk : Buffer.from(String(chunk));
}

/**
 * Base64 text decoded as it comes. The text (UTF-8) may have white space before and after; inside, line
 * ends (`\n`, `\r`) anywhere, as `base64 -w76` wraps it and Go's StdEncoding (what `consul kv put -base64`
 * decodes with) skips them, and no other blank; then letters of the standard alphabet, at most two `=` at
 * the end, and a length (line ends not counted) that is a multiple of 4. Anything else is a usage error,
 * found where it is (a value streamed so far is never finished).
 */
async function* base64Decoded(chunks: AsyncIterable<Buffer>): AsyncGenerator<Buffer> {
  const decoder = new StringDecoder('utf8');
  /** Where in the text we are: before it, in its letters, in its padding, or in the space after it. */
  let at: 'before' | 'letters' | 'padding' | 'after' = 'before';
  let pending = '';
  let padding = 0;
  const take = (given: string): Buffer | undefined => {
    // Line ends are skipped wherever they are: what is left is read as if they had never been there.
    let text = given.replace(lineEnds, '');
    let group = '';
    // The common case, letters only: no need to look at each one.
    if ((at === 'before' || at === 'letters') && /^[A-Za-z0-9+/]+$/.test(text)) {
      at = 'letters';
      group = text;
      text = '';
    }
    for (const ch of text) {
      if (/\s/u.test(ch)) {
        if (at !== 'before') at = 'after';
      } else if (/[A-Za-z0-9+/]/.test(ch)) {
        if (at === 'padding' || at === 'after') throw notBase64();
        at = 'letters';
        group += ch;
      } else if (ch === '=') {
        if (at === 'after' || ++padding > 2) throw notBase64();
        at = 'padding';
        group += ch;
      } else {
        throw notBase64();
      }
    }
    pending += group;
    const whole = pending.length - (pending.length % 4);
    if (whole === 0) return undefined;
    const out = Buffer.from(pending.slice(0, whole), 'base64');
    pending = pending.slice(whole);
    return out;
  };
  for await (const chunk of chunks) {
    const out = take(decoder.write(chunk));
    if (out !== undefined) yield out;
  }
  const out = take(decoder.end());
  if (pending !== '') throw notBase64();
  if (out !== undefined) yield out;
}
