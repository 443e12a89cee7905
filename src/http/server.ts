/**
 * The HTTP front end on uWebSockets.js — the only module that imports it. It copies what it needs
 * from the uWS request synchronously, registers onAborted before any await, enforces the body limit,
 * routes, and writes the rendered reply inside `cork` with the convention headers of every response.
 */
import { randomUUID } from 'node:crypto';
import { crc32 } from 'node:zlib';
import { createRequire } from 'node:module';
import type * as Uws from 'uWebSockets.js';
import { RegistryError } from '../domain/errors.ts';
import { applyListQuery, ListQueryError, parseListQuery } from './lists.ts';
import { addressCaller, addressKey, Admission, type RateLimiter } from './rate-limit.ts';
import type { Reply } from './reply.ts';
import { isLogFailed, isLogOverloaded, isLogUnavailable } from '../wal/index.ts';
import { listenErrorFor } from '../util/listen-error.ts';
import { requestBodyBytesMax } from '../domain/limits.ts';
import type { Logger } from '../runtime/index.ts';
import type { HttpObserver } from '../ports/observer.ts';
import { renderError, renderReply, statusLine, type Dialect, type LeaderView, type Wire } from './render.ts';
import { decodeOnce, type Request } from './request.ts';
import { unmatchedPattern, type Router } from './router.ts';
import { setLongTimeout } from '../util/timer.ts';

type UwsModule = typeof Uws;

/**
 * Loads the native binding, turning a load failure into one clear message. ROSTER_UWS_MODULE names
 * another module or path to load instead (for example a checkout of the upstream release tag).
 */
export function loadUws(): UwsModule {
  const require = createRequire(import.meta.url);
  try {
    return require(process.env.ROSTER_UWS_MODULE || 'uWebSockets.js') as UwsModule;
  } catch (err) {
    const why = err instanceof Error ? err.message.split('\n').pop() : String(err);
    throw new Error(
      `roster: the uWebSockets.js native binding did not load on node ${process.version} ` +
      `(${process.platform}-${process.arch}, modules ${process.versions.modules}): ${why}. ` +
      'Roster needs a build of uWebSockets.js for this Node.js version and glibc; see README "Platform".',
    );
  }
}

/** A WebSocket endpoint on the same app (the stream). */
export interface WebSocketRoute {
  path: string;
  behavior: Uws.WebSocketBehavior<any>;
  /** Called before the app closes its sockets, so peers get a proper close frame. */
  closeAll(): void;
}


export interface HttpServerOptions<Ctx> {
  host: string;
  port: number;
  router: Router<Ctx>;
  ctx: Ctx;
  dialect: Dialect;
  logger: Logger;
  /** Told of every answered request (metrics). @default none */
  observer?: HttpObserver;
  /** @default requestBodyBytesMax (512 KiB) */
  bodyBytesMax?: number;
  websockets?: WebSocketRoute[];
  /** The leader as this node sees it, for the index headers. @default this node leads */
  leader?: () => LeaderView;
  /**
   * Requests per period per caller: the verified identity (token subject, app key) of a request that
   * passed authentication, else its client address. Absent: no rate limit (and no rate-limit headers).
   * The composition root shares it with the stream's upgrades.
   */
  rateLimit?: RateLimiter;
  /** True when too many writes are in flight: writes are then answered 503 with Retry-After. */
  overloaded?: () => boolean;
  /** Authentication and authorization of every routed request (absent: open, as without ACLs). */
  authorize?: (req: Request) => Promise<void>;
  /** HTTPS: PEM certificate and key files (both, or neither for plain HTTP). */
  tls?: { certFile: string; keyFile: string };
  /** Entry time of a registry index, for Last-Modified (undefined when no longer known). */
  timeOfIndex?: (index: number) => number | undefined;
  /**
   * Requests one client address may have in flight (blocking queries included); more are answered 429.
   * uWS gives no hook on connections, and an HTTP/1.1 client holds a connection per request in flight,
   * so this is the connection cap (Consul's http_max_conns_per_client). @default 200
   */
  requestsInFlightPerClientMax?: number;
  /** A request body must arrive within this long of its head, else 400 code 1015 and the connection closes. @default 8 s */
  bodyTimeoutMs?: number;
}

export interface HttpServer {
  url: string;
  port: number;
  close(): void;
}

const bodylessMethods = new Set(['GET', 'HEAD', 'OPTIONS']);

export function startHttpServer<Ctx>(o: HttpServerOptions<Ctx>): Promise<HttpServer> {
  const uws = loadUws();
  const app = o.tls ? uws.SSLApp({ cert_file_name: o.tls.certFile, key_file_name: o.tls.keyFile }) : uws.App();
  const bodyBytesMax = o.bodyBytesMax ?? requestBodyBytesMax;
  const limiter = o.rateLimit;
  const inFlightMax = o.requestsInFlightPerClientMax ?? 200;
  const bodyTimeoutMs = o.bodyTimeoutMs ?? 8_000;
  const inFlight = new Map<string, number>();
  const release = (client: string) => {
    const left = (inFlight.get(client) ?? 1) - 1;
    if (left <= 0) inFlight.delete(client);
    else inFlight.set(client, left);
  };

  for (const route of o.websockets ?? []) app.ws(route.path, route.behavior);

  app.any('/*', (res, uwsReq) => {
    const startedMs = performance.now();
    const sentMethod = uwsReq.getCaseSensitiveMethod();
    const path = uwsReq.getUrl();
    const rawQuery = uwsReq.getQuery() ?? '';
    const query = new URLSearchParams(rawQuery);
    const headers = new Map<string, string>();
    let lengthsDiffer = false;
    uwsReq.forEach((k, v) => {
      if (k === 'content-length' && headers.has(k) && headers.get(k) !== v) lengthsDiffer = true;
      headers.set(k, v);
    });
    const method = effectiveMethod(sentMethod, headers);
    const requestId = requestIdOf(headers.get('x-request-id'));
    let req: Request | undefined;
    // The binary address as the in-flight key: uWS's text form cost a fifth of a simple GET (profiled),
    // so the text is made only where a message or the rate limiter shows it.
    const remote = addressKey(res.getRemoteAddress());
    // Only blocking queries look at the signal: make the controller when one does (most requests never).
    let abort: AbortController | undefined;
    let aborted = false;
    let done = false;
    /** Reading from the connection is paused while a write commits (see `start`). */
    let paused = false;
    const held = (inFlight.get(remote) ?? 0) + 1;
    inFlight.set(remote, held);
    res.onAborted(() => {
      if (!done) release(remote);
      done = true;
      aborted = true;
      abort?.abort();
    });

    // Counted once per request: against the verified identity once authentication has passed, the client
    // address for everything else (no auth, public routes, failed auth, refusals).
    const admission = new Admission(limiter, o.dialect);
    const admit = (caller: string | undefined): Wire | undefined => admission.admit(caller ?? addressCaller(remote));
    const send = (w: Wire, closeConnection = false) => {
      if (done) return;
      done = true;
      release(remote);
      admit(undefined);
      if (limiter !== undefined) w = { ...w, headers: [...w.headers, ...admission.headers] };
      const ms = performance.now() - startedMs;
      res.cork(() => {
        if (paused) res.resume();
        res.writeStatus(statusLine(w.status));
        res.writeHeader('x-request-id', requestId);
        res.writeHeader('x-response-time', ms.toFixed(3));
        res.writeHeader('x-server-time', serverTime());
        for (const [k, v] of w.headers) res.writeHeader(k, v);
        // HEAD: the GET's headers, its length, no body.
        if (method === 'HEAD') res.endWithoutBody(Buffer.byteLength(w.body), closeConnection);
        else res.end(w.body, closeConnection);
      });
      // Answers refused before routing (429, 413, 503...) still count against the route they asked for.
      const route = req?.route ?? o.router.pattern(path);
      o.observer?.request(method, route, w.status, ms / 1000);
      logRequest(o.logger, requestId, method, route, path, w.status, ms);
    };

    const dispatch = (body: Buffer) => {
      req = {
        method, path, rest: '', query, headers, body, jsonTypeRequired: o.dialect === 'seed', id: requestId,
        get signal() {
          if (abort === undefined) {
            abort = new AbortController();
            if (aborted) abort.abort();
          }
          return abort.signal;
        },
      };
      const routed = req;
      // A request that failed (authentication above all) counts against its address: past the address's
      // limit it is answered 429 rather than with its error.
      handle(o, routed, admit).then((w) => send(conditional(routed, w, o.timeOfIndex)), (err: unknown) => send(admit(undefined) ?? errorWire(o, err, requestId)));
    };

    // A head whose framing or encoding is unusable is refused before anything else looks at it.
    const unusable = unusableHead(path, rawQuery, headers, lengthsDiffer);
    if (unusable !== undefined) {
      // uWS writes `Connection: close` itself when it is told to close.
      send(renderError(unusable.error, o.dialect), unusable.close);
      return;
    }
    // uWS serves pipelined requests only while each is answered before the next is parsed: a request
    // arriving behind one still in flight makes it close the connection, and the one in flight can no
    // longer be answered. A write therefore starts one turn of the event loop later, after uWS has
    // parsed what came with it, and only while its connection is open: a write that cannot be answered
    // is not applied. While it commits, the connection is paused, so a request sent behind it stays in
    // the kernel's buffer until the write is answered, and is then read and answered in order. Reads
    // change nothing and start at once. A request that waits for a change (`?wait=`: a blocking query,
    // a queued acquire) is never paused: a paused connection does not see its client go away.
    const start = (body: Buffer) => {
      if (bodylessMethods.has(method)) dispatch(body);
      else {
        setImmediate(() => {
          if (done) return;
          if (!query.has('wait')) {
            res.pause();
            paused = true;
          }
          dispatch(body);
        });
      }
    };

    // Without authentication there is no identity to wait for: the address is counted before the body is read.
    const early = o.authorize === undefined ? admit(undefined) : undefined;
    if (early !== undefined) {
      send(early);
      return;
    }
    if (held > inFlightMax) {
      const address = Buffer.from(res.getRemoteAddressAsText()).toString();
      send(renderError(new RegistryError('tooManyInFlight', { address, max: inFlightMax }), o.dialect), true);
      return;
    }
    if (method !== 'GET' && method !== 'HEAD' && method !== 'OPTIONS' && o.overloaded?.()) {
      send(renderError(new RegistryError('writesOverloaded'), o.dialect));
      return;
    }
    const declared = Number(headers.get('content-length') ?? '0');
    if (declared > bodyBytesMax) {
      send(renderError(tooLarge(declared, bodyBytesMax), o.dialect, [['Connection', 'close']]));
      return;
    }
    if (bodylessMethods.has(method) || (declared === 0 && !headers.has('transfer-encoding'))) {
      start(Buffer.alloc(0));
      return;
    }
    // A body trickled in slower than the deadline is cut off with an answer (uWS itself would drop
    // the connection silently about 10 s after the head).
    const deadline = setLongTimeout(() => {
      send(renderError(new RegistryError('bodyTimeout', { bodyTimeoutMs }), o.dialect), true);
    }, bodyTimeoutMs, false);
    readBody(res, bodyBytesMax, (body) => {
      deadline.clear();
      start(body);
    }, (size) => {
      deadline.clear();
      send(renderError(tooLarge(size, bodyBytesMax), o.dialect, [['Connection', 'close']]));
    });
  });

  return new Promise((resolve, reject) => {
    // Exclusive: without it uWS sets SO_REUSEPORT, and a second agent on the same port would silently
    // share it, the kernel splitting connections between the two.
    const listen = app.listen as unknown as (host: string, port: number, options: number, cb: (socket: Uws.us_listen_socket | false) => void) => void;
    listen.call(app, o.host, o.port, exclusivePort(uws), (socket) => {
      if (socket === false) {
        app.close();
        listenErrorFor(o.host, o.port).then(reject, reject);
        return;
      }
      const port = uws.us_socket_local_port(socket as unknown as Uws.us_socket);
      resolve({
        url: `${o.tls ? 'https' : 'http'}://${o.host.includes(':') ? `[${o.host}]` : o.host}:${port}`,
        port,
        close: () => {
          uws.us_listen_socket_close(socket);
          for (const route of o.websockets ?? []) route.closeAll();
          app.close();
        },
      });
    });
  });
}

/** uWS's LIBUS_LISTEN_EXCLUSIVE_PORT flag (exported as a value by the binding, declared only as an enum member). */
function exclusivePort(uws: UwsModule): number {
  return (uws as unknown as { LIBUS_LISTEN_EXCLUSIVE_PORT?: number }).LIBUS_LISTEN_EXCLUSIVE_PORT ?? 1;
}

/**
 * Why a request head cannot be served, answered at once in the dialect's format:
 * * two Content-Length headers that differ (the body's end is ambiguous: 400, connection closed);
 * * a Transfer-Encoding other than `chunked` (uWS reads no body for it, so the request would wait for a
 *   body that never comes: 400, connection closed; a 4xx like every refusal of a malformed request);
 * * a path or query that is not UTF-8, raw or percent-encoded (uWS hands raw bytes on as U+FFFD, so two
 *   different keys would become one: 400).
 */
function unusableHead(path: string, rawQuery: string, headers: Map<string, string>, lengthsDiffer: boolean):
  { error: RegistryError; close: boolean } | undefined {
  if (lengthsDiffer) return { close: true, error: new RegistryError('contentLengthsDiffer') };
  const coding = headers.get('transfer-encoding');
  if (coding !== undefined && coding.trim().toLowerCase() !== 'chunked') {
    return { close: true, error: new RegistryError('transferEncodingUnsupported', { coding }) };
  }
  const where = !isUtf8Text(path) ? 'path' : !isUtf8Text(rawQuery) ? 'query' : undefined;
  if (where !== undefined) return { close: false, error: new RegistryError('requestNotUtf8', { where }) };
  return undefined;
}

/**
 * Whether a raw path or query is UTF-8 once percent-decoded. uWS turns raw bytes that are not UTF-8
 * into U+FFFD (so a raw U+FFFD is refused too: percent-encode it); a malformed `%` escape is left to
 * the decoding that follows (URLSearchParams keeps it as text, the path decoder refuses it).
 */
function isUtf8Text(raw: string): boolean {
  if (raw.includes('\uFFFD')) return false;
  if (!raw.includes('%')) return true;
  try {
    decodeURIComponent(raw.replace(/%(?![0-9A-Fa-f]{2})/g, '%25'));
    return true;
  } catch {
    return false;
  }
}

function readBody(res: Uws.HttpResponse, max: number, onBody: (b: Buffer) => void, onTooLarge: (size: number) => void): void {
  const chunks: Buffer[] = [];
  let size = 0;
  let over = false;
  res.onData((chunk, isLast) => {
    if (over) return;
    size += chunk.byteLength;
    if (size > max) {
      over = true;
      onTooLarge(size);
      return;
    }
    // uWS neuters the ArrayBuffer when the callback returns: copy it.
    chunks.push(Buffer.from(Buffer.from(chunk)));
    if (isLast) onBody(chunks.length === 1 ? chunks[0]! : Buffer.concat(chunks));
  });
}

/**
 * The method a request stands for: POST with `X-HTTP-Method-Override` stands for the named verb
 * (http-conventions.md "Verb override"); HEAD is answered as GET without the body.
 */
function effectiveMethod(sent: string, headers: Map<string, string>): string {
  const override = headers.get('x-http-method-override')?.trim().toUpperCase();
  if (sent === 'POST' && override !== undefined && ['PUT', 'PATCH', 'DELETE'].includes(override)) return override;
  return sent;
}

/**
 * Validators on successful reads (http-conventions.md "Caching"): an ETag over the representation and,
 * when the answer's registry index has a known time, Last-Modified. A matching If-None-Match, or
 * (without one) an If-Modified-Since not older than Last-Modified, answers 304 without a body.
 */
function conditional(req: Request, w: Wire, timeOfIndex?: (index: number) => number | undefined): Wire {
  if ((req.method !== 'GET' && req.method !== 'HEAD') || w.status !== 200) return w;
  // crc32 and length of the representation: computed natively in well under a microsecond for small
  // bodies (a sha256 object per read cost a sixth of a GET), and a change slipping past both is rare
  // enough for a cache validator; the registry index headers remain the exact change signal.
  const tag = `"${Buffer.byteLength(w.body).toString(36)}-${crc32(w.body).toString(36)}"`;
  const index = Number(w.headers.find(([k]) => k === 'X-Consul-Index')?.[1] ?? NaN);
  const modifiedMs = Number.isFinite(index) ? timeOfIndex?.(index) : undefined;
  const headers: [string, string][] = [...w.headers, ['ETag', tag]];
  if (modifiedMs !== undefined) headers.push(['Last-Modified', httpDate(modifiedMs)]);
  const wanted = req.headers.get('if-none-match');
  if (wanted !== undefined) {
    const match = wanted.trim() === '*' || wanted.split(',').some((t) => t.trim().replace(/^W\//, '') === tag);
    return match ? notModified(headers) : { ...w, headers };
  }
  const since = parseHttpDate(req.headers.get('if-modified-since'));
  // Last-Modified has whole seconds: compare at that precision.
  if (since !== undefined && modifiedMs !== undefined && Math.floor(modifiedMs / 1000) * 1000 <= since) return notModified(headers);
  return { ...w, headers };
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

/** Counts a request against a caller (undefined: its address); the 429 answer when that caller is past its limit. */
type Admit = (caller: string | undefined) => Wire | undefined;

async function handle<Ctx>(o: HttpServerOptions<Ctx>, req: Request, admit: Admit): Promise<Wire> {
  const versionHeaders = apiVersion(req, o.dialect);
  const w = await route(o, req, admit);
  return versionHeaders.length === 0 ? w : { ...w, headers: [...w.headers, ...versionHeaders] };
}

/** `x-api-version` (a minor version, yyyyMMdd) is accepted and echoed; a malformed one is refused (seed). */
function apiVersion(req: Request, dialect: Dialect): [string, string][] {
  const version = req.headers.get('x-api-version');
  if (version === undefined) return [];
  if (!/^\d{8}$/.test(version.trim())) {
    if (dialect === 'consul') return [];
    throw new RegistryError('apiVersionInvalid');
  }
  return [['x-api-version', version.trim()]];
}

async function route<Ctx>(o: HttpServerOptions<Ctx>, req: Request, admit: Admit): Promise<Wire> {
  const match = o.router.match(req.method === 'HEAD' ? 'GET' : req.method, req.path);
  req.route = match.kind === 'none' ? unmatchedPattern : match.pattern;
  if (match.kind === 'none') {
    if (req.method === 'OPTIONS') return renderReply({ t: 'options', allow: [] }, o.dialect);
    throw new RegistryError('noEndpoint', { method: req.method, path: req.path });
  }
  if (match.kind === 'method') {
    if (req.method === 'OPTIONS') return renderReply({ t: 'options', allow: match.allow }, o.dialect);
    return renderError(new RegistryError('methodNotAllowed', { method: req.method, allowed: match.allow }), o.dialect);
  }
  req.rest = decodeOnce(match.rest);
  if (!match.public) await o.authorize?.(req);
  const limited = admit(req.caller);
  if (limited !== undefined) return limited;
  const listed = withListRules(req, await match.handler(req, o.ctx));
  const w = renderReply(listed.reply, o.dialect, o.leader?.());
  return listed.headers.length === 0 ? w : { ...w, headers: [...w.headers, ...listed.headers] };
}

/** Query parameters the list rules leave alone: Consul's own, and the signature's. */
const reservedParameters = [
  'index', 'wait', 'filter', 'dc', 'token', 'stale', 'consistent', 'leader', 'max_stale', 'recurse', 'keys', 'raw',
  'separator', 'seperator', 'passing', 'tag', 'near', 'node-meta', 'cas', 'flags', 'acquire', 'release', 'note',
  'replace-existing-checks', 'wan', 'segment', 'appKey', 'nonce', 'timestamp', 'signMethod', 'sign',
];

/** An empty list has no fields to check names against: every name the request mentions is taken as known. */
function namesMentioned(query: URLSearchParams): string[] {
  const names = new Set<string>();
  for (const [k, v] of query) {
    if (k === 'sort' || k === 'fields') for (const f of v.split(',')) names.add(f.trim().replace(/^-/, ''));
    else if (k === 'q') for (const term of v.split(' ')) names.add(term.replace(/^-/, '').split(':')[0] ?? '');
    else names.add(k);
  }
  return [...names].filter((n) => n !== '');
}

/**
 * The conventions' list parameters (page/perPage, start/limit, sort, fields, field equality, q, count,
 * pretty) on any list answer. Without them a list stays a plain array, as Consul clients expect.
 */
function withListRules(req: Request, reply: Reply): { reply: Reply; headers: [string, string][] } {
  if (reply.t !== 'json' || reply.value === undefined) return { reply, headers: [] };
  const pretty = req.query.has('pretty') && !['false', '0'].includes(req.query.get('pretty') ?? '');
  if (!Array.isArray(reply.value)) return { reply: pretty ? { ...reply, pretty } : reply, headers: [] };
  // Most lists come without list parameters: do not look at their records at all then.
  if ([...req.query.keys()].every((k) => reservedParameters.includes(k))) return { reply, headers: [] };
  const records = reply.value as Record<string, unknown>[];
  const known = records.length > 0
    ? [...new Set(records.flatMap((r) => (r !== null && typeof r === 'object' ? Object.keys(r) : [])))]
    : namesMentioned(req.query);
  let query;
  try {
    query = parseListQuery(req.query, known, reservedParameters);
  } catch (err) {
    if (err instanceof ListQueryError) throw new RegistryError('listParameterInvalid', { field: err.field, rule: err.rule, why: err.message });
    throw err;
  }
  if (query === undefined) return { reply, headers: [] };
  const applied = applyListQuery(records, query);
  return { reply: { ...reply, value: applied.body, pretty: query.pretty }, headers: applied.headers };
}

function errorWire<Ctx>(o: HttpServerOptions<Ctx>, err: unknown, reqId: string): Wire {
  if (err instanceof RegistryError) return renderError(err, o.dialect);
  if (isLogOverloaded(err)) {
    return renderError(new RegistryError('logOverloaded'), o.dialect);
  }
  // The write was not applied; the log stores writes again by itself once the disk has room.
  if (isLogUnavailable(err)) return renderError(new RegistryError('diskFull'), o.dialect);
  if (isLogFailed(err)) {
    // The cause (with paths) is in the agent's log, not in the answer.
    o.logger.error({ err, reqId }, 'request failed: the log has failed');
    return renderError(new RegistryError('logFailed'), o.dialect);
  }
  o.logger.error({ err, reqId }, 'request failed');
  const message = err instanceof Error ? err.message : String(err);
  return renderError(new RegistryError('internal', { why: message }), o.dialect);
}

/** Characters and length of an x-request-id a client may choose; anything else is replaced. */
const requestIdPattern = /^[A-Za-z0-9._:-]{1,128}$/;

/** The client's x-request-id when it is a sane token (so it can be traced end to end), else a fresh UUID. */
export function requestIdOf(sent: string | undefined): string {
  return sent !== undefined && requestIdPattern.test(sent) ? sent : randomUUID();
}

/**
 * One line per answered request: debug below 500, warn for 5xx. Nothing is built unless the level is on
 * (the lock path is benchmarked with logging at info).
 */
function logRequest(logger: Logger, reqId: string, method: string, route: string, path: string, status: number, ms: number): void {
  const level = status >= 500 ? 'warn' : 'debug';
  if (!logger.isLevelEnabled(level)) return;
  logger[level]({ reqId, method, route, path, status, ms: Math.round(ms * 1000) / 1000 }, 'request');
}

function tooLarge(size: number, max: number): RegistryError {
  return new RegistryError('bodyTooLarge', { size, max });
}

let serverTimeMs = -1;
let serverTimeText = '';

/** x-server-time: the ISO 8601 text of now, made once per millisecond however many answers share it. */
function serverTime(): string {
  const now = Date.now();
  if (now !== serverTimeMs) {
    serverTimeMs = now;
    serverTimeText = isoWithOffset(new Date(now));
  }
  return serverTimeText;
}

/** ISO 8601 with the zone written as an offset, e.g. 2026-11-22T21:14:06.123+00:00. */
export function isoWithOffset(d: Date): string {
  const offsetMin = -d.getTimezoneOffset();
  const local = new Date(d.getTime() + offsetMin * 60_000).toISOString().slice(0, -1);
  const sign = offsetMin >= 0 ? '+' : '-';
  const abs = Math.abs(offsetMin);
  return `${local}${sign}${String(Math.floor(abs / 60)).padStart(2, '0')}:${String(abs % 60).padStart(2, '0')}`;
}
