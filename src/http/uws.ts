/**
 * The adapter to uWebSockets.js — the only module of the HTTP server that touches its objects: loading
 * the native binding, copying a request's head synchronously, reading its body, writing an answer
 * inside `cork`, and listening on an exclusive port.
 */
import { createRequire } from 'node:module';
import type * as Uws from 'uWebSockets.js';
import { listenErrorFor } from '../util/listen-error.ts';
import { setLongTimeout, type LongTimer } from '../util/timer.ts';
import { BindingUnavailable, bindingErrorMessage, hostPlatform } from './binding-error.ts';
import type { AnswerBudget } from './large-answers.ts';
import type { HttpServer } from './options.ts';
import { statusLine, type Wire } from './render.ts';
import type { Feed, FeedOut } from './reply.ts';
import { serverTime } from './request-log.ts';

export type UwsModule = typeof Uws;

/** The largest request head (request line and headers) every build of the binding accepts. */
export const requestHeadBytesMax = 128 * 1024;

/**
 * Loads the native binding; a load failure becomes `BindingUnavailable` with one message naming the
 * Node.js and C library pair and what to do. ROSTER_UWS_MODULE names another module or path to load
 * instead (for example a build of uWebSockets.js for a platform the bundled package does not cover).
 */
export function loadUws(): UwsModule {
  const require = createRequire(import.meta.url);
  // The request head's size limit, read by the binding once as it loads. The build for Node.js 20 (its older
  // uWS core) takes heads up to 128 KiB; the builds for Node.js 22 and later read it from this variable and
  // default to 4 KiB, which would refuse long keys and query strings with 431. Every build gets the same
  // 128 KiB unless the operator set the variable.
  process.env.UWS_HTTP_MAX_HEADERS_SIZE ??= String(requestHeadBytesMax);
  const override = process.env.ROSTER_UWS_MODULE || undefined;
  try {
    return require(override ?? 'uWebSockets.js') as UwsModule;
  } catch (err) {
    throw new BindingUnavailable(bindingErrorMessage(hostPlatform(), err instanceof Error ? err.message : String(err), override));
  }
}

/** What a request's head holds, copied out of uWS before the handler returns (uWS reuses the request). */
export interface Head {
  /** The method as sent. */
  sentMethod: string;
  path: string;
  rawQuery: string;
  headers: Map<string, string>;
  /** Two Content-Length headers with different values (the last one is in `headers`). */
  lengthsDiffer: boolean;
  /** The first header that carries credentials and came more than once (`credentialHeaders`), if any. */
  credentialRepeated: string | undefined;
}

/**
 * Headers that carry credentials, each a singleton (RFC 9110 §5.3): given twice, which one decides is
 * ambiguous (a gateway in front may have vetted the other), so such a request is refused (admission.ts).
 */
export const credentialHeaders: ReadonlySet<string> = new Set(['authorization', 'x-consul-token']);

/** The head being copied: `forEach` calls back synchronously, so one module-level callback serves every request. */
let copying: Head | undefined;

function copyHeader(k: string, v: string): void {
  const head = copying!;
  if (head.headers.has(k)) {
    if (k === 'content-length' && head.headers.get(k) !== v) head.lengthsDiffer = true;
    if (credentialHeaders.has(k)) head.credentialRepeated ??= k;
  }
  head.headers.set(k, v);
}

export function copyHead(uwsReq: Uws.HttpRequest): Head {
  const head: Head = {
    sentMethod: uwsReq.getCaseSensitiveMethod(), path: uwsReq.getUrl(), rawQuery: uwsReq.getQuery() ?? '', headers: new Map(),
    lengthsDiffer: false, credentialRepeated: undefined,
  };
  copying = head;
  uwsReq.forEach(copyHeader);
  copying = undefined;
  return head;
}

/** Reads the whole body, or stops at `max` bytes and tells the size seen. */
export function readBody(res: Uws.HttpResponse, max: number, onBody: (b: Buffer) => void, onTooLarge: (size: number) => void): void {
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

/** What an answer the client does not read at once may hold, and for how long. */
export interface Holding {
  /** The budget of answer bytes the agent holds for clients (large-answers.ts). */
  answers: AnswerBudget;
  /** A connection whose client has read nothing of its answer for this long is closed. */
  writeIdleMs: number;
}

/** What `writeAnswer` tells the corked write (cork calls back synchronously: one callback for every answer). */
interface Answer {
  res: Uws.HttpResponse;
  head: string;
  body: string | Buffer;
  bodyless: boolean;
  resume: boolean;
  close: boolean;
  /** The write offset before the body, and whether the body went out whole (set by the corked write). */
  base: number;
  done: boolean;
}

let answering: Answer | undefined;

function writeCorked(): void {
  const a = answering!;
  if (a.resume) a.res.resume();
  if (a.bodyless) return endBodyless(a);
  a.res.writeStatus(a.head);
  if (a.close) {
    a.res.end(a.body, true);
    a.done = true;
    return;
  }
  a.base = a.res.getWriteOffset();
  // What the socket does not take now stays with the agent, not in a copy of uWS's (see `holdRest`).
  // A total size of 0 is the body's own length in bytes, which uWS has at hand once it has the bytes.
  a.done = a.res.tryEnd(a.body, 0)[1];
}

/**
 * HEAD: the GET's headers and length, no body. uWS's `endWithoutBody(length)` writes the length but leaves
 * the response pending until that many body bytes are written (never), and then closes the connection at
 * the next request on it; so the length goes in the head block and uWS ends the response at once. An answer
 * that closes its connection keeps uWS's form: its pending response makes uWS close at the next request.
 */
function endBodyless(a: Answer): void {
  const length = Buffer.byteLength(a.body);
  a.done = true;
  if (a.close) {
    a.res.writeStatus(a.head);
    a.res.endWithoutBody(length, true);
    return;
  }
  a.res.writeStatus(`${a.head}\r\nContent-Length: ${length}`);
  a.res.endWithoutBody();
}

/**
 * The status line's text and every header after it as one block, written by a single `writeStatus`: uWS
 * writes the text as given followed by CRLF, and each call into the binding costs more than the bytes.
 * Header values never hold CR or LF (they are the agent's own, or checked tokens and numbers).
 */
export function headBlock(w: Wire, requestId: string, ms: number): string {
  let head = `${statusLine(w.status)}\r\nx-request-id: ${requestId}\r\nx-response-time: ${ms.toFixed(3)}\r\nx-server-time: ${serverTime()}`;
  for (const [k, v] of w.headers) head += `\r\n${k}: ${v}`;
  return head;
}

/**
 * Writes an answer with the convention headers, inside one cork; a paused connection is resumed first. uWS
 * writes `Connection: close` itself when told to close. The body goes out as far as the socket takes it
 * at once; the rest is held by the agent and written as the client reads (`holdRest`). `counted`: bytes of
 * the budget the exchange took for the answer (a large one), given back once it is written or abandoned.
 */
export function writeAnswer(res: Uws.HttpResponse, w: Wire, a: { requestId: string; ms: number; head: boolean; resume: boolean; close: boolean; counted: number }, holding: Holding): void {
  // A large body is made bytes once, here: uWS would copy a string into bytes of its own for each attempt.
  const body = a.counted > 0 && typeof w.body === 'string' ? Buffer.from(w.body) : w.body;
  const answer: Answer = { res, head: headBlock(w, a.requestId, a.ms), body, bodyless: a.head, resume: a.resume, close: a.close, base: 0, done: false };
  answering = answer;
  try {
    res.cork(writeCorked);
  } finally {
    answering = undefined;
  }
  if (answer.done) holding.answers.release(a.counted);
  else holdRest(res, answer.body, answer.base, a.counted, holding);
}

/**
 * The part of an answer the socket did not take, written from `onWritable` at the offset uWS reports. uWS
 * keeps no copy of it and its response stays pending, so the connection gets no further answer until this
 * one is complete: a request pipelined behind it makes uWS close the connection, as behind any answer not
 * yet written. Handed whole to uWS instead, every answer a client pipelined and never read was kept in
 * uWS's buffer of the connection, without bound. The body is counted against the budget while held (a
 * large one was counted before it was written), and the connection is closed when the client has read
 * nothing of it for `writeIdleMs`.
 */
function holdRest(res: Uws.HttpResponse, written: string | Buffer, base: number, counted: number, holding: Holding): void {
  const body = typeof written === 'string' ? Buffer.from(written) : written;
  if (counted === 0) holding.answers.hold(body.length);
  let open = true;
  let timer: LongTimer | undefined;
  const settle = () => {
    if (!open) return;
    open = false;
    timer?.clear();
    if (counted > 0) holding.answers.release(counted);
    else holding.answers.releaseHeld(body.length);
  };
  const idle = () => {
    timer?.clear();
    // limits.http_write_idle_timeout may pass Node's 32-bit timer limit: setLongTimeout waits it out in full.
    timer = setLongTimeout(() => { if (open) { settle(); res.close(); } }, holding.writeIdleMs);
  };
  // The handler registered last is the one uWS calls: the exchange has answered, so this one is all that remains.
  res.onAborted(settle);
  idle();
  res.onWritable((offset) => {
    const [ok, done] = res.tryEnd(body.subarray(offset - base), body.length);
    if (done) settle();
    else idle();
    return ok;
  });
}

/** The feeds a server is writing, ended when it closes so that their clients read the end of the answer. */
export class OpenFeeds {
  private readonly ends = new Set<() => void>();

  add(end: () => void): void {
    this.ends.add(end);
  }

  delete(end: () => void): void {
    this.ends.delete(end);
  }

  endAll(): void {
    for (const end of [...this.ends]) end();
  }
}

/**
 * Writes a feed: the status and headers, then each chunk as the feed writes it (uWS sends them in chunked
 * encoding). A chunk written while the client is still behind on an earlier one is refused, not queued, so
 * a client that does not read holds at most one chunk here; the feed says what it dropped. The answer stays
 * open until the feed ends it, the client goes away or the server closes.
 */
export function openFeed(res: Uws.HttpResponse, w: Wire, feed: Feed, a: { requestId: string; ms: number; resume: boolean }, feeds: OpenFeeds): void {
  let open = true;
  let behind = false;
  let stop: (() => void) | undefined;
  const settle = () => {
    if (!open) return;
    open = false;
    feeds.delete(end);
    stop?.();
  };
  const end = () => {
    if (!open) return;
    settle();
    res.cork(() => res.end());
  };
  const out: FeedOut = {
    write: (chunk) => {
      if (!open || behind) return false;
      res.cork(() => { behind = !res.write(chunk); });
      return true;
    },
    end,
  };
  // The handler registered last is the one uWS calls: the exchange has answered, so this one is all that remains.
  res.onAborted(settle);
  res.onWritable(() => {
    behind = false;
    return true;
  });
  feeds.add(end);
  res.cork(() => {
    if (a.resume) res.resume();
    res.writeStatus(headBlock(w, a.requestId, a.ms));
    const stopFeed = feed.start(out);
    // A feed that ended while it started has nothing to stop later.
    if (open) stop = stopFeed;
    else stopFeed();
  });
}

/** uWS's LIBUS_LISTEN_EXCLUSIVE_PORT flag (exported as a value by the binding, declared only as an enum member). */
function exclusivePort(uws: UwsModule): number {
  return (uws as unknown as { LIBUS_LISTEN_EXCLUSIVE_PORT?: number }).LIBUS_LISTEN_EXCLUSIVE_PORT ?? 1;
}

/** HTTPS certificate and key files, as uWS reads them. */
export interface TlsPaths { certFile: string; keyFile: string }

type ListenFn = (host: string, port: number, options: number, cb: (socket: Uws.us_listen_socket | false) => void) => void;

/**
 * Listens on host:port, exclusively: without that uWS sets SO_REUSEPORT, and a second agent on the same
 * port would silently share it, the kernel splitting connections between the two. uWS calls back at once,
 * so this answers at once: the listen socket, or undefined when the port cannot be had.
 */
function listenNow(uws: UwsModule, app: Uws.TemplatedApp, host: string, port: number): Uws.us_listen_socket | undefined {
  let socket: Uws.us_listen_socket | false = false;
  (app.listen as unknown as ListenFn).call(app, host, port, exclusivePort(uws), (s) => { socket = s; });
  return socket === false ? undefined : socket;
}

/**
 * Listens on host:port with the app `makeApp` builds. `close` stops listening, lets `beforeClose` say
 * goodbye to sockets, and closes every app. `useCertificate` serves new connections with another
 * certificate: uWS cannot change an app's certificate, so a new app takes over the port (the old listen
 * socket closed and the new one opened in the same turn of the event loop) and the old app keeps the
 * connections it has until they end or the server closes.
 */
export function listen(uws: UwsModule, makeApp: (tls?: TlsPaths) => Uws.TemplatedApp, o: { host: string; port: number; tls?: TlsPaths; beforeClose: () => void }): Promise<HttpServer> {
  let app = makeApp(o.tls);
  let socket = listenNow(uws, app, o.host, o.port);
  // uWS sets SO_REUSEADDR only on a socket given its port, and without it the port cannot be listened on
  // again while a connection it accepted is open (useCertificate): port 0 is taken as a port picked, then
  // listened on by number at once, before any connection.
  for (let tries = 0; socket !== undefined && o.port === 0 && tries < 3; tries++) {
    const picked = uws.us_socket_local_port(socket as unknown as Uws.us_socket);
    uws.us_listen_socket_close(socket);
    socket = listenNow(uws, app, o.host, picked) ?? listenNow(uws, app, o.host, 0);
    if (socket !== undefined && uws.us_socket_local_port(socket as unknown as Uws.us_socket) === picked) break;
  }
  if (socket === undefined) {
    app.close();
    return listenErrorFor(o.host, o.port).then((err) => { throw err; });
  }
  const port = uws.us_socket_local_port(socket as unknown as Uws.us_socket);
  const retired: Uws.TemplatedApp[] = [];
  return Promise.resolve({
    url: `${o.tls ? 'https' : 'http'}://${o.host.includes(':') ? `[${o.host}]` : o.host}:${port}`,
    port,
    useCertificate: (tls: TlsPaths) => {
      if (o.tls === undefined) throw new Error('the HTTP server serves plain HTTP');
      const next = makeApp(tls);
      uws.us_listen_socket_close(socket!);
      const taken = listenNow(uws, next, o.host, port);
      if (taken === undefined) {
        // Another process took the port in that instant: the old app listens again, or nothing does.
        next.close();
        socket = listenNow(uws, app, o.host, port);
        if (socket === undefined) throw new Error(`port ${port} was taken while the certificate changed: the agent no longer listens for HTTP`);
        throw new Error(`port ${port} was taken while the certificate changed; the old certificate stays`);
      }
      retired.push(app);
      app = next;
      socket = taken;
    },
    close: () => {
      if (socket !== undefined) uws.us_listen_socket_close(socket);
      socket = undefined;
      o.beforeClose();
      for (const old of retired) old.close();
      app.close();
    },
  });
}
