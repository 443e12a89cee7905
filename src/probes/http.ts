/**
 * HTTP check (consul-compat.md §4 HTTP): one request, redirects followed like Go's http.Client, the
 * last outputBytesMax bytes of the final body in the output. node:http rather than undici: it sends a
 * Host header we set, closes the connection after one request (agent: false, as Consul's keep-alives
 * off) and reports connect failures with address and errno, which the Go-like error text needs; the
 * redirect loop is ours so each hop's method, body, Host and URL follow Go's rules.
 */
import http from 'node:http';
import https from 'node:https';
import type { Duplex, Readable } from 'node:stream';
import { checkOutputFramingBytesMax } from '../domain/limits.ts';
import type { CheckDefinition } from '../domain/types.ts';
import { startDeadline, type Deadline, type StopReason } from './deadline.ts';
import { dialErrorText, isDialError, systemError, tlsErrorText, urlErrorOp, urlWithoutPassword } from './go-text.ts';
import { httpRedirectsMax, httpTimeoutMsDefault, outputBytesMaxDefault } from './limits.ts';
import type { OwnRequests } from './own-requests.ts';
import { TailBuffer } from './tail-buffer.ts';
import { serverNameOptions } from './tls-name.ts';
import { critical, type CheckStatus, type Probe, type ProbeResult } from './types.ts';

/**
 * The request fields are the check definition's own: `method` (default GET, sent as given, as Go sends it), `header`
 * (each name with its values; a Host entry sets the Host header, its first value), `body` (default none),
 * `tlsSkipVerify` (accept any server certificate; default false), `tlsServerName` (checked against the
 * certificate and sent as SNI, unless an IP address; default the URL's host name) and `disableRedirects` (report a
 * 3xx answer as it is; default false: follow, at most httpRedirectsMax).
 */
export interface HttpProbeOptions
  extends Pick<CheckDefinition, 'method' | 'header' | 'body' | 'tlsSkipVerify' | 'tlsServerName' | 'disableRedirects'> {
  /** An http or https URL (validateHttpUrl). */
  url: string;
  /** For the whole exchange: redirects and body included, like Go's Client.Timeout. @default httpTimeoutMsDefault (10 s) */
  timeoutMs?: number;
  /** The output keeps the last this many bytes of the body. @default outputBytesMaxDefault (4096) */
  outputBytesMax?: number;
  /** Told of each connection the probe makes (the agent's own port's are counted apart). @default none */
  ownRequests?: Pick<OwnRequests, 'track'>;
}

const userAgent = 'Consul Health Check';
const acceptDefault = 'text/plain, text/*, */*';
const redirectStatuses = new Set([301, 302, 303, 307, 308]);

/** Error text when url is not an absolute http or https URL; the texts are Go's http.Client ones, without the URL's password. */
export function validateHttpUrl(url: string): string | undefined {
  let parsed: URL;
  try {
    parsed = new URL(url);
  } catch {
    // Go parses a scheme-less string as a relative URL and then refuses its empty scheme.
    return /^[a-z][a-z0-9+.-]*:/i.test(url) ? `parse "${urlWithoutPassword(url)}": invalid URL` : 'unsupported protocol scheme ""';
  }
  return schemeError(parsed);
}

function schemeError(url: URL): string | undefined {
  if (url.protocol !== 'http:' && url.protocol !== 'https:') return `unsupported protocol scheme "${url.protocol.slice(0, -1)}"`;
  if (url.hostname === '') return 'http: no Host in request URL';
  return undefined;
}

export function httpProbe(o: HttpProbeOptions): Probe {
  const method = o.method || 'GET';
  const timeoutMs = o.timeoutMs ?? httpTimeoutMsDefault;
  return async (signal) => {
    const invalid = validateHttpUrl(o.url);
    if (invalid !== undefined) return critical(invalid.startsWith('parse ') ? invalid : `${urlErrorOp(method)} "${urlWithoutPassword(o.url)}": ${invalid}`);
    const deadline = startDeadline(timeoutMs, signal);
    try {
      return await exchange(o, method, deadline);
    } finally {
      deadline.dispose();
    }
  };
}

/** One request of the exchange; the first uses the URL as written, since Go's error text quotes it so. */
interface Hop {
  url: URL;
  urlText: string;
  method: string;
  body: string | undefined;
  /** Host header override; kept across a redirect only to a relative Location, as Go does. */
  host: string | undefined;
  /** Whether the check's credential headers (credentialHeaders) go with this request (see redirectHop). */
  credentials: boolean;
  /** The Referer Go's client adds on a redirect (refererFor); none on the first request. */
  referer: string | undefined;
}

/** The methods whose bodiless request Go still sends with `Content-Length: 0`; the names match exactly, as in Go. */
const emptyBodyLengthMethods = new Set(['POST', 'PUT', 'PATCH']);

/** The headers Go's http.Client sends on a redirect only to the first request's host or a subdomain of it. */
const credentialHeaders = new Set(['authorization', 'www-authenticate', 'cookie', 'cookie2']);

async function exchange(o: HttpProbeOptions, method: string, deadline: Deadline): Promise<ProbeResult> {
  const op = urlErrorOp(method);
  const first = new URL(o.url);
  let hop: Hop = { url: first, urlText: o.url, method, body: o.body || undefined, host: hostHeader(o.header), credentials: true, referer: undefined };
  for (let redirects = 0; ; ) {
    let answer: Answer;
    try {
      answer = await send(hop, o, deadline.signal);
    } catch (err) {
      const why = deadline.reason !== undefined ? stoppedText(deadline.reason) : transportErrorText(err, hop.url);
      return critical(`${op} "${urlWithoutPassword(hop.urlText)}": ${why}`);
    }
    const { res } = answer;
    const location = res.headers.location;
    if (o.disableRedirects || !redirectStatuses.has(res.statusCode ?? 0) || !location) {
      const head = `HTTP ${method} ${urlWithoutPassword(o.url)}: ${statusLine(res)} Output: `;
      const body = await readTail(answer, bodyBytesMax(o.outputBytesMax ?? outputBytesMaxDefault, Buffer.byteLength(head)), deadline.signal);
      return { status: statusForHttp(res.statusCode ?? 0), output: `${head}${body.text()}` };
    }
    answer.body.destroy();
    redirects += 1;
    if (redirects >= httpRedirectsMax) return critical(`${op} "${urlWithoutPassword(location)}": stopped after ${httpRedirectsMax} redirects`);
    const next = redirectHop(hop, res.statusCode ?? 0, location, first);
    if (typeof next === 'string') return critical(`${op} "${urlWithoutPassword(location)}": ${next}`);
    hop = next;
  }
}

/**
 * How much of the body's end the output keeps: the output size, as Consul, while the words before it fit in
 * the room a recorded output has beside it (checkOutputFramingBytesMax); less after a longer URL or status
 * line, so that the output is recorded whole. Words longer than that room alone are cut when recorded
 * (the output keeps its last bytes), so the body then keeps the whole size.
 */
function bodyBytesMax(size: number, headBytes: number): number {
  const room = size + checkOutputFramingBytesMax - headBytes;
  return room > 0 ? Math.min(size, room) : size;
}

/** 2xx passing, 429 warning, anything else critical (consul-compat.md §4 HTTP). */
function statusForHttp(code: number): CheckStatus {
  if (code >= 200 && code <= 299) return 'passing';
  if (code === 429) return 'warning';
  return 'critical';
}

/** Go's resp.Status: the code and the reason phrase the server sent. */
function statusLine(res: http.IncomingMessage): string {
  return res.statusMessage ? `${res.statusCode} ${res.statusMessage}` : String(res.statusCode);
}

function hostHeader(header: Record<string, string[]> | undefined): string | undefined {
  const entry = Object.entries(header ?? {}).find(([name]) => name.toLowerCase() === 'host');
  return entry?.[1][0] || undefined;
}

/**
 * Go's redirectBehavior: 301/302/303 turn into a bodiless GET (HEAD stays HEAD), 307/308 repeat method and
 * body, and the next hop carries a Referer (refererFor). Every header of the check goes to it too, except the
 * credential headers: as in Go's http.Client, they stop at the first hop whose host is neither the first
 * request's host nor a subdomain of it (ports aside), and are not sent again on that exchange even if a
 * later hop comes back.
 */
function redirectHop(hop: Hop, status: number, location: string, first: URL): Hop | string {
  let url: URL;
  try {
    url = new URL(location, hop.url);
  } catch {
    return `failed to parse Location header "${urlWithoutPassword(location)}"`;
  }
  const invalid = schemeError(url);
  if (invalid !== undefined) return invalid;
  const keepsMethod = status === 307 || status === 308;
  const method = keepsMethod || hop.method === 'HEAD' ? hop.method : 'GET';
  const relative = !/^[a-z][a-z0-9+.-]*:/i.test(location) && !location.startsWith('//');
  const credentials = hop.credentials && isDomainOrSubdomain(bareHost(url), bareHost(first));
  return {
    url, urlText: url.href, method, body: keepsMethod ? hop.body : undefined, host: relative ? hop.host : undefined, credentials,
    referer: refererFor(hop, url),
  };
}

/**
 * Go's Referer on a redirect: the URL of the request redirected, without its user and password, none from
 * https to http. Go writes that URL with URL.String, which gives the check's URL as it was written and a
 * resolved Location in its resolved form; a text holding anything but visible ASCII is written resolved,
 * which percent-encodes it as Go does. A Referer among the check's own headers is sent instead, on every
 * request, as Go keeps a Referer set by its caller.
 */
function refererFor(from: Hop, to: URL): string | undefined {
  if (from.url.protocol === 'https:' && to.protocol === 'http:') return undefined;
  const text = /^[\x21-\x7e]+$/.test(from.urlText) ? from.urlText : from.url.href;
  return text.replace(/^([a-z][a-z0-9+.-]*:\/\/)(?:[^/?#]*@)?/i, (_all, scheme: string) => scheme.toLowerCase());
}

/** The URL's host name without the brackets of an IPv6 address (Go's URL.Hostname). */
function bareHost(url: URL): string {
  return url.hostname.replace(/^\[(.*)\]$/, '$1');
}

/** `sub` is `parent` or ends in `.parent`; never for an IP address with a colon or a zone. */
function isDomainOrSubdomain(sub: string, parent: string): boolean {
  if (sub === parent) return true;
  if (sub.includes(':') || sub.includes('%')) return false;
  return sub.endsWith(`.${parent}`);
}

function requestHeaders(o: HttpProbeOptions, hop: Hop): http.OutgoingHttpHeaders {
  // Without a prototype, a header the check names __proto__ is an entry like any other.
  const headers: http.OutgoingHttpHeaders = Object.create(null) as http.OutgoingHttpHeaders;
  const names = new Set<string>();
  for (const [name, values] of Object.entries(o.header ?? {})) {
    if (name.toLowerCase() === 'host' || values.length === 0) continue;
    if (!hop.credentials && credentialHeaders.has(name.toLowerCase())) continue;
    headers[name] = values.length === 1 ? values[0] : [...values];
    names.add(name.toLowerCase());
  }
  if (!names.has('user-agent')) headers['User-Agent'] = userAgent;
  if (!names.has('accept')) headers['Accept'] = acceptDefault;
  if (hop.referer !== undefined && !names.has('referer')) headers['Referer'] = hop.referer;
  if (hop.host !== undefined) headers['Host'] = hop.host;
  if (hop.body !== undefined) headers['Content-Length'] = Buffer.byteLength(hop.body);
  else if (emptyBodyLengthMethods.has(hop.method)) headers['Content-Length'] = 0;
  return headers;
}

/**
 * The final answer to one request and where its body is read from: the response itself, or, for a 101
 * Switching Protocols (and any answer to CONNECT), the connection it hands over, as Go's transport gives it
 * as the body. `head` is what arrived after the answer's headers on that connection.
 */
interface Answer {
  res: http.IncomingMessage;
  body: Readable;
  head?: Buffer;
}

/**
 * Sends one request; settles on every way it can end. Node ends a request in one of 'response', 'upgrade'
 * (a 101), 'connect' (CONNECT) or 'error', and, when it closes the connection of a 101 or a CONNECT
 * nothing listens for, in 'close' alone: that one rejects here as a connection closed before an answer.
 */
function send(hop: Hop, o: HttpProbeOptions, signal: AbortSignal): Promise<Answer> {
  const hostname = bareHost(hop.url);
  const options: https.RequestOptions = {
    agent: false,
    signal,
    rejectUnauthorized: !o.tlsSkipVerify,
    // Like Go: the server's name is the configured one or the URL's host name, never the Host header.
    ...serverNameOptions(o.tlsServerName || hostname),
  };
  return new Promise((resolve, reject) => {
    const request = hop.url.protocol === 'https:' ? https.request(hop.url, options) : http.request(hop.url, options);
    if (o.ownRequests !== undefined) request.once('socket', (socket) => o.ownRequests!.track(socket));
    const switched = (res: http.IncomingMessage, socket: Duplex, head: Buffer) => resolve({ res, body: socket, head });
    request.once('response', (res: http.IncomingMessage) => resolve({ res, body: res }));
    request.once('upgrade', switched);
    request.once('connect', switched);
    request.once('error', reject);
    request.once('close', () => reject(Object.assign(new Error('socket hang up'), { code: 'ECONNRESET' })));
    // Node upper-cases the method it is given; Go sends it as it is, and so does this probe. The answer is
    // read by the method as sent too: the answer to a `head` has a body, as in Go. Node would frame a
    // bodiless request by the upper-cased name; requestHeaders gives its length as Go does instead.
    request.method = hop.method;
    request.useChunkedEncodingByDefault = false;
    try {
      for (const [name, value] of Object.entries(requestHeaders(o, hop))) request.setHeader(name, value!);
    } catch (err) {
      request.destroy(err as Error);
      return;
    }
    request.end(hop.body);
  });
}

/**
 * Reads the body into a TailBuffer, and closes its connection once read. A body cut short (timeout, reset)
 * still gives what arrived: Go's check logs the read error and reports the status with the partial body.
 */
function readTail(answer: Answer, bytesMax: number, signal: AbortSignal): Promise<TailBuffer> {
  const { body, head } = answer;
  const tail = new TailBuffer(bytesMax);
  if (head !== undefined && head.length > 0) tail.push(head);
  return new Promise((resolve) => {
    const stop = () => body.destroy();
    const finish = () => {
      signal.removeEventListener('abort', stop);
      body.destroy();
      resolve(tail);
    };
    body.on('data', (chunk: Buffer) => tail.push(chunk));
    body.once('end', finish);
    body.once('close', finish);
    body.on('error', () => {});
    if (body.destroyed) finish();
    else if (signal.aborted) stop();
    else signal.addEventListener('abort', stop, { once: true });
  });
}

function stoppedText(reason: StopReason): string {
  return reason === 'timeout' ? 'context deadline exceeded (Client.Timeout exceeded while awaiting headers)' : 'context canceled';
}

/** Go's transport error text for a Node request error. */
function transportErrorText(error: unknown, url: URL): string {
  const e = systemError(error);
  if (isDialError(e)) return dialErrorText('tcp', url.host, e);
  const tlsText = tlsErrorText(e);
  if (tlsText !== undefined) return tlsText;
  if (e.code === 'ECONNRESET' && e.message === 'socket hang up') return 'EOF';
  if (e.code === 'ECONNRESET') return 'read: connection reset by peer';
  if (e.code?.startsWith('HPE_')) return 'net/http: HTTP/1.x transport connection broken: malformed HTTP response';
  return e.message;
}
