/**
 * Conditional answers (http-conventions.md "Caching"): validators on successful reads — an ETag over the
 * representation and, when the answer's registry index has a known time, Last-Modified — and the 304
 * for a request whose If-None-Match or If-Modified-Since still holds.
 *
 * An API answer also says `Cache-Control: no-cache`: a cache (a browser, a proxy) may keep it but must ask
 * again before each use, which the validators make cheap. Without it, an answer with Last-Modified and no
 * expiry is fresh by heuristic for a tenth of its age (RFC 9111 §4.2.2; browsers do this): a node list
 * unchanged for an hour would be served from a browser's cache for six minutes, registrations unseen.
 * Answers that set their own (the dashboard's files) keep theirs.
 */
import { crc32 } from 'node:zlib';
import type { Wire } from './render.ts';
import type { Request } from './request.ts';

/**
 * The answer with its validators. A matching If-None-Match, or (without one) an If-Modified-Since not
 * older than Last-Modified, answers 304 without a body.
 */
export function conditional(req: Request, w: Wire, timeOfIndex?: (index: number) => number | undefined): Wire {
  if ((req.method !== 'GET' && req.method !== 'HEAD') || w.status !== 200 || w.feed !== undefined) return w;
  const tag = w.tag ?? entityTag(w.body);
  const modifiedMs = timeOfIndex === undefined ? undefined : modifiedAt(w.headers, timeOfIndex);
  const headers: [string, string][] = w.headers.slice();
  if (!headers.some(([k]) => k === 'Cache-Control')) headers.push(['Cache-Control', 'no-cache']);
  headers.push(['ETag', tag]);
  if (modifiedMs !== undefined) headers.push(['Last-Modified', httpDate(modifiedMs)]);
  const wanted = req.headers.get('if-none-match');
  if (wanted !== undefined) {
    const match = wanted.trim() === '*' || wanted.split(',').some((t) => t.trim().replace(/^W\//, '') === tag);
    return match ? notModified(headers) : { status: w.status, headers, body: w.body };
  }
  const since = parseHttpDate(req.headers.get('if-modified-since'));
  // Last-Modified has whole seconds: compare at that precision.
  if (since !== undefined && modifiedMs !== undefined && Math.floor(modifiedMs / 1000) * 1000 <= since) return notModified(headers);
  return { status: w.status, headers, body: w.body };
}

/**
 * The ETag of a representation: its length and crc32, computed natively in well under a microsecond for
 * small bodies (a sha256 object per read cost a sixth of a GET), and a change slipping past both is rare
 * enough for a cache validator; the registry index headers remain the exact change signal. A route that
 * keeps rendered bodies keeps their tags with them (Wire.tag).
 */
export function entityTag(body: string | Buffer): string {
  return `"${Buffer.byteLength(body).toString(36)}-${crc32(body).toString(36)}"`;
}

/** The time of the answer's registry index (X-Consul-Index), when it has one with a known time. */
function modifiedAt(headers: readonly [string, string][], timeOfIndex: (index: number) => number | undefined): number | undefined {
  for (const [k, v] of headers) {
    if (k !== 'X-Consul-Index') continue;
    const index = Number(v);
    return Number.isFinite(index) ? timeOfIndex(index) : undefined;
  }
  return undefined;
}

/** The 304 answer: the 200's headers but its content type, no body (made only when it is the answer). */
function notModified(headers: [string, string][]): Wire {
  return { status: 304, headers: headers.filter(([k]) => k.toLowerCase() !== 'content-type'), body: '' };
}

let httpDateSecond = NaN;
let httpDateText = '';
/** An HTTP date (RFC 1123), remembered for the last second asked: most reads ask for the same few. */
function httpDate(ms: number): string {
  const second = Math.floor(ms / 1000);
  if (second !== httpDateSecond) {
    httpDateSecond = second;
    httpDateText = new Date(ms).toUTCString();
  }
  return httpDateText;
}

/** The three date formats of HTTP (RFC 1123, RFC 850, asctime — the last has no zone and means GMT). */
export function parseHttpDate(text: string | undefined): number | undefined {
  if (text === undefined) return undefined;
  const t = text.trim();
  const asctime = /^[A-Za-z]{3} [A-Za-z]{3} +\d{1,2} \d{2}:\d{2}:\d{2} \d{4}$/.test(t);
  const rfc = /^[A-Za-z]{3,9}, \d{2}[ -][A-Za-z]{3}[ -]\d{2,4} \d{2}:\d{2}:\d{2} GMT$/.test(t);
  if (!asctime && !rfc) return undefined;
  const ms = Date.parse(asctime ? `${t} GMT` : t);
  return Number.isNaN(ms) ? undefined : ms;
}
