/**
 * The request an HTTP check sends, judged when the check is registered: its `Method` and the names and
 * values of its `Header` must make a request Go's client would send (Consul's probe), or the check could
 * never run and would stay critical with Go's refusal as its output. So they are refused up front, the
 * consul dialect in Go's own words after Consul's `Invalid check: `.
 *
 * A value holding a character outside ASCII is refused too, though Go sends one (as its UTF-8 bytes): Node
 * writes header values byte for byte as Latin-1, so it would put other bytes on the wire than Consul's
 * probe (and cannot write a character past U+00FF at all).
 */
import type { FieldErrors } from './body.ts';

/** RFC 9110 §5.6.2 token: what an HTTP method and a header name are made of. */
const token = /^[!#$%&'*+\-.^_`|~0-9A-Za-z]+$/;
/** What Go's client refuses in a header value: a control character other than tab (CR and LF among them). */
// eslint-disable-next-line no-control-regex
const controlCharacter = /[\u0000-\u0008\u000a-\u001f\u007f]/;
const outsideAscii = /[\u0080-\uffff]/;

/** Checks an HTTP check's Method (empty: GET) and Header, adding what is wrong to `errors`. */
export function checkHttpRequest(method: string, header: Record<string, string[]> | undefined, errors: FieldErrors): void {
  if (method !== '' && !token.test(method)) errors.broke('Method', 'checkMethodInvalid', { method: JSON.stringify(method), goMethod: strconvQuote(method) });
  for (const [name, values] of Object.entries(header ?? {})) {
    const quoted = { name: JSON.stringify(name), goName: strconvQuote(name) };
    if (!token.test(name)) errors.broke('Header', 'checkHeaderNameInvalid', quoted);
    // The value is not named: it may be a credential.
    else if (values.some((v) => controlCharacter.test(v))) errors.broke('Header', 'checkHeaderValueInvalid', quoted);
    else if (values.some((v) => outsideAscii.test(v))) errors.broke('Header', 'checkHeaderValueNotAscii', quoted);
  }
}

const goEscapes: Record<string, string> = { '\u0007': '\\a', '\b': '\\b', '\f': '\\f', '\n': '\\n', '\r': '\\r', '\t': '\\t', '\v': '\\v', '"': '\\"', '\\': '\\\\' };
/** Go's IsPrint: letters, marks, numbers, punctuation, symbols and the ASCII space. */
const printable = /^[\p{L}\p{M}\p{N}\p{P}\p{S} ]$/u;

/** A text as Go's `%q` writes it (strconv.Quote), as its errors name a method or a header. */
export function strconvQuote(text: string): string {
  let out = '"';
  for (const c of text) {
    const code = c.codePointAt(0)!;
    if (goEscapes[c] !== undefined) out += goEscapes[c];
    else if (printable.test(c)) out += c;
    else if (code < 0x80) out += `\\x${code.toString(16).padStart(2, '0')}`;
    else if (code < 0x10000) out += `\\u${code.toString(16).padStart(4, '0')}`;
    else out += `\\U${code.toString(16).padStart(8, '0')}`;
  }
  return `${out}"`;
}
