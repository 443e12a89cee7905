/**
 * Conditional answers (http-conventions.md "Caching"): validators on successful reads — an ETag over the
 * representation and, when the answer's registry index has a known time, Last-Modified — the 412 for a
 * read whose If-Match or If-Unmodified-Since does not hold (seed dialect), and the 304 for one whose
 * If-None-Match or If-Modified-Since still holds, judged in the order of RFC 9110 §13.2.2.
 *
 * An API answer also says `Cache-Control: no-cache`: a cache (a browser, a proxy) may keep it but must ask
 * again before each use, which the validators make cheap. Without it, an answer with Last-Modified and no
 * expiry is fresh by heuristic for a tenth of its age (RFC 9111 §4.2.2; browsers do this): a node list
 * unchanged for an hour would be served from a browser's cache for six minutes, registrations unseen.
 * Answers that set their own (the dashboard's files) keep theirs.
 */
import { hash } from 'node:crypto';
import { RegistryError } from '../domain/errors.ts';
import { tagList } from './preconditions.ts';
import { renderError, type Dialect, type Wire } from './render.ts';
import type { Request } from './request.ts';

/**
 * The answer with its validators. An If-Match naming none of its tags, or (without If-Match) an
 * If-Unmodified-Since before its modification, answers 412 in the seed dialect; the consul dialect ignores
 * both, as Consul does. Then a matching If-None-Match, or (without one) an If-Modified-Since at or after the
 * modification, answers 304 without a body. Only a 200 is judged: any other answer is the one the request
 * would have had without its preconditions (RFC 9110 §13.2.1).
 */
export function conditional(req: Request, w: Wire, dialect: Dialect, timeOfIndex?: (index: number) => number | undefined): Wire {
  if ((req.method !== 'GET' && req.method !== 'HEAD') || w.status !== 200) return w;
  // A feed (a streamed log) has no representation a tag or a date could name.
  const tag = w.feed !== undefined ? undefined : w.tag ?? entityTag(w.body);
  const modifiedMs = timeOfIndex === undefined || w.feed !== undefined ? undefined : modifiedAt(w.headers, timeOfIndex);
  const refused = dialect === 'consul' ? undefined : readPreconditionFailure(req, tag, modifiedMs);
  if (refused !== undefined) return renderError(refused, dialect);
  if (tag === undefined) return w;
  const headers: [string, string][] = w.headers.slice();
  if (!headers.some(([k]) => k === 'Cache-Control')) headers.push(['Cache-Control', 'no-cache']);
  headers.push(['ETag', tag]);
  if (modifiedMs !== undefined) headers.push(['Last-Modified', httpDate(Math.min(modifiedMs, dateFloorMs(Date.now())))]);
  const wanted = req.headers.get('if-none-match');
  if (wanted !== undefined) {
    const match = wanted.trim() === '*' || wanted.split(',').some((t) => t.trim().replace(/^W\//, '') === tag);
    return match ? notModified(headers) : { status: w.status, headers, body: w.body };
  }
  const since = parseHttpDate(req.headers.get('if-modified-since'));
  // The modification's own time (ms), not Last-Modified's whole second: a key written at 12:00:00.200 and
  // again at .700 shows 12:00:00 both times, and a client holding the first is not told the second is it.
  if (since !== undefined && modifiedMs !== undefined && modifiedMs <= since) return notModified(headers);
  return { status: w.status, headers, body: w.body };
}

/**
 * The 412 of a read (RFC 9110 §13.2.2 steps 1 and 2): If-Match holds when it is `*` or names the answer's
 * tag, compared strongly (a `W/` tag never matches); without If-Match, If-Unmodified-Since holds when the
 * modification's second, the one Last-Modified names, is at or before its date: a client sending back the
 * Last-Modified it was given is answered. HTTP dates cannot tell two writes within one second apart; the
 * ETag with If-Match is the exact validator. A date that does not parse, or an answer without a known
 * modification time, leaves If-Unmodified-Since unjudged (§13.1.4).
 */
function readPreconditionFailure(req: Request, tag: string | undefined, modifiedMs: number | undefined): RegistryError | undefined {
  const ifMatch = req.headers.get('if-match');
  if (ifMatch !== undefined) {
    const tags = tagList(ifMatch);
    if (tags === '*' || (tag !== undefined && tags.includes(tag))) return undefined;
    return new RegistryError('readPreconditionFailed', { header: 'If-Match', reason: 'not-matched', why: 'names none of the current representations' });
  }
  const since = parseHttpDate(req.headers.get('if-unmodified-since'));
  if (since === undefined || modifiedMs === undefined || Math.floor(modifiedMs / 1000) * 1000 <= since) return undefined;
  return new RegistryError('readPreconditionFailed', { header: 'If-Unmodified-Since', reason: 'modified', why: 'names a time before the last change' });
}

/**
 * The ETag of a representation: the first 128 bits of its SHA-256, base64url. Whoever may write a value
 * chooses a representation's bytes, so the tag must resist chosen collisions: with a checksum (a crc32) a
 * writer could store a different value of the same tag and a revalidating reader would keep the old one.
 * The one-shot `crypto.hash` costs about what the crc32 did on a small answer (no hash object per read)
 * and SHA-256 runs on the CPU's SHA instructions; a route that keeps rendered bodies keeps their tags with
 * them (Wire.tag), so a KV key read again is not hashed again.
 */
export function entityTag(body: string | Buffer): string {
  return `"${hash('sha256', body, 'base64url').slice(0, 22)}"`;
}

/**
 * How far uWS's Date header may lag the clock: uWS writes it on every answer (a second Date cannot replace
 * it) from a text it refreshes on a one-second timer of its loop, so it shows a second that began up to a
 * second before its last refresh; half a second more covers a refresh delayed by a busy loop.
 */
const dateLagMsMax = 1500;

/**
 * The latest whole second the answer's Date can show, which Last-Modified must not be after (RFC 9110
 * §8.8.2.1): a value written in the last second or two shows a slightly earlier Last-Modified, never a
 * later one than the Date beside it. If-Modified-Since still compares with the modification's own time.
 */
function dateFloorMs(nowMs: number): number {
  return Math.floor((nowMs - dateLagMsMax) / 1000) * 1000;
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
