/**
 * One request and its answer on a uWS connection: admitted, its body read, dispatched, answered once.
 * It copies what it needs from the uWS request synchronously, registers onAborted before uWS's handler returns,
 * counts the client's requests in flight, and writes the answer with the convention and rate headers.
 */
import type * as Uws from 'uWebSockets.js';
import { RegistryError } from '../domain/errors.ts';
import { setLongTimeout } from '../util/timer.ts';
import { bodylessMethods, effectiveMethod, refusalBeforeBody, tooLarge, unusableHead, type InFlight, type InFlightRequest, type Limits } from './admission.ts';
import { conditional } from './conditional.ts';
import { streamedBytesMin, type AnswerBudget } from './large-answers.ts';
import { errorWire, handle, headIdentity, isPromise, type Admitter, type Dispatcher } from './dispatch.ts';
import type { HttpObserver } from '../ports/observer.ts';
import { addressCaller, addressKey, Admission, type RateLimiter } from './rate-limit.ts';
import { renderError, withHeaders, type Wire } from './render.ts';
import { logRequest, requestIdOf } from './request-log.ts';
import type { Request } from './request.ts';
import { unmatchedPattern, type Found } from './router.ts';
import { copyHead, openFeed, readBody, writeAnswer, type Head, type OpenFeeds } from './uws.ts';
import { Stop, type StopSignal } from '../util/stop.ts';

/** What every exchange of one server shares. */
export interface Server<Ctx> extends Dispatcher<Ctx>, Limits {
  inFlight: InFlight;
  /** Bytes of large answers in flight (large-answers.ts). */
  answers: AnswerBudget;
  /** A large answer's connection is closed when its client has read nothing for this long. */
  writeIdleMs: number;
  rateLimit?: RateLimiter;
  observer?: HttpObserver;
  bodyTimeoutMs: number;
  timeOfIndex?: (index: number) => number | undefined;
  /** Answers written as they come (monitors), ended when the server closes. */
  feeds: OpenFeeds;
}

/**
 * The request as handlers see it: a class, so its signal getter lives on the prototype and a request
 * allocates no closure of its own.
 */
class ExchangeRequest implements Request {
  rest = '';
  identity?: Request['identity'];
  caller?: string;
  route?: string;
  queuedSeconds?: number;
  sentMethod?: string;

  constructor(
    private readonly exchange: { signal(): StopSignal },
    readonly method: string, readonly path: string, readonly query: URLSearchParams, readonly headers: Map<string, string>,
    readonly body: Buffer, readonly jsonTypeRequired: boolean, readonly id: string,
    /** The server's budget of answer bytes, which a route may reserve from (large-answers.ts answerBudgetOf). */
    readonly answers: AnswerBudget,
  ) {}

  /** Only blocking queries look at the signal: its Stop is made when one does (most requests never). */
  get signal(): StopSignal {
    return this.exchange.signal();
  }
}

/** A request with no query shares one empty parameter list (nothing writes to a request's query). */
const noQuery = new URLSearchParams();

export class Exchange<Ctx> implements Admitter, InFlightRequest {
  private readonly startedMs = performance.now();
  private readonly head: Head;
  private readonly method: string;
  private readonly query: URLSearchParams;
  private readonly requestId: string;
  /**
   * The binary address as the in-flight and rate-limit key, read from uWS when first needed (see
   * InFlight): its text form cost a fifth of a simple GET (profiled), so the text is made only where a
   * message or the rate limiter shows it.
   */
  private remote: string | undefined;
  /** The client has more requests in flight than its cap, this one included. */
  private readonly overCap: boolean;
  /** Counted once per request: against the verified identity once authentication has passed, else the address. */
  private readonly admission: Admission | undefined;
  /** The route serving the path, looked up once for the body limit, dispatching and the metrics label. */
  private readonly found: Found<Ctx> | undefined;
  private req: Request | undefined;
  /** The identity the head proved before the body was read (dispatch.ts headIdentity), left on the request. */
  private identity: Request['identity'];
  private abort: Stop | undefined;
  private aborted = false;
  private done = false;
  /** Reading from the connection is paused while a write commits (see `start`). */
  private paused = false;
  /** Its place among the requests InFlight counts in total only. */
  slot = -1;

  constructor(private readonly s: Server<Ctx>, private readonly res: Uws.HttpResponse, uwsReq: Uws.HttpRequest) {
    this.head = copyHead(uwsReq);
    this.query = this.head.rawQuery === '' ? noQuery : new URLSearchParams(this.head.rawQuery);
    this.method = effectiveMethod(this.head.sentMethod, this.head.headers);
    this.requestId = requestIdOf(this.head.headers.get('x-request-id'));
    this.admission = s.rateLimit === undefined ? undefined : new Admission(s.rateLimit, s.dialect);
    // The rate limiter counts unauthenticated requests by address, possibly after the client went away.
    if (this.admission !== undefined) this.clientKey();
    this.overCap = s.inFlight.enter(this, s.inFlightMax);
    this.found = s.router.find(this.head.path);
  }

  private onAborted(): void {
    if (!this.done) this.s.inFlight.leave(this);
    this.done = true;
    this.aborted = true;
    this.abort?.abort();
  }

  /** Stopped when the client goes away; made on first use. */
  signal(): StopSignal {
    if (this.abort === undefined) {
      this.abort = new Stop();
      if (this.aborted) this.abort.abort();
    }
    return this.abort;
  }

  /** Counts the request against `caller` (undefined: its address) unless it was counted; the 429 past the limit. */
  admit(caller: string | undefined): Wire | undefined {
    return this.admission?.admit(caller ?? addressCaller(this.clientKey()));
  }

  /** The client's binary address as a key; read while the response is open, then kept. */
  clientKey(): string {
    return (this.remote ??= addressKey(this.res.getRemoteAddress()));
  }

  /** The client's address as text, for the messages that show it. */
  addressText(): string {
    return Buffer.from(this.res.getRemoteAddressAsText()).toString();
  }

  /**
   * Serves the request. uWS needs an abort handler before its request handler returns unless the response
   * has ended: one is registered only then (a read that waited for nothing is answered by now).
   */
  run(): void {
    // A HEAD answer that closes its connection stays pending in uWS (uws.ts endBodyless): its abort handler comes first.
    const early = this.method === 'HEAD';
    if (early) this.res.onAborted(() => this.onAborted());
    this.admitAndStart();
    if (!early && !this.done) this.res.onAborted(() => this.onAborted());
  }

  /** Refuses what cannot be admitted, else reads the body (within its deadline) and starts the request. */
  private admitAndStart(): void {
    const { headers } = this.head;
    // A head whose framing or encoding is unusable is refused before anything else looks at it.
    const unusable = unusableHead(this.head);
    if (unusable !== undefined) return this.refuse(renderError(unusable.error, this.s.dialect), unusable.close);
    // Without authentication there is no identity to wait for: the address is counted before the body is read.
    const early = this.s.authorize === undefined ? this.admit(undefined) : undefined;
    if (early !== undefined) return this.send(early);
    const contentLength = headers.get('content-length');
    const declared = contentLength === undefined ? 0 : Number(contentLength);
    // A route may take larger bodies than the server's limit (a snapshot to restore).
    const bodyBytesMax = this.found?.entry.route.bodyBytesMax ?? this.s.bodyBytesMax;
    const refusal = refusalBeforeBody(this.method, this.overCap, declared, this.s, bodyBytesMax, this);
    if (refusal !== undefined) return this.refuse(renderError(refusal.error, this.s.dialect, refusal.more), refusal.close);
    if (bodylessMethods.has(this.method) || (declared === 0 && !headers.has('transfer-encoding'))) return this.start(emptyBody);
    // A body trickled in slower than the deadline is cut off with an answer (uWS itself would drop
    // the connection silently about 10 s after the head).
    const deadline = setLongTimeout(() => {
      this.send(renderError(new RegistryError('bodyTimeout', { bodyTimeoutMs: this.s.bodyTimeoutMs }), this.s.dialect), true);
    }, this.s.bodyTimeoutMs, false);
    // Credentials are judged on the head while the body comes: a request that fails them is refused at once,
    // its connection closed, without waiting for a body it may never send.
    const proven = headIdentity(this.s, { method: this.method, path: this.head.path, headers, query: this.query }, this.found)?.then((identity) => {
      this.identity = identity;
      return true;
    }, (err: unknown) => {
      deadline.clear();
      this.send(this.admit(undefined) ?? errorWire(this.s, err, this.requestId), true);
      return false;
    });
    readBody(this.res, bodyBytesMax, (body) => {
      deadline.clear();
      if (proven === undefined) this.start(body);
      else void proven.then((ok) => { if (ok) this.start(body); });
    }, (size) => {
      deadline.clear();
      this.send(renderError(tooLarge(size, bodyBytesMax), this.s.dialect, [['Connection', 'close']]));
    });
  }

  /**
   * A refusal before the body. One that closes the connection is sent a turn later: uWS parses on through
   * the bytes it read with the request, and a close asked for inside its handler waits for the handler to
   * return, so a request behind one whose framing is refused (two Content-Lengths: the client and uWS may
   * not agree where its body ends) would be served. Until the refusal is sent this request is in flight,
   * and uWS closes the connection at a request parsed behind it, unanswered (see `start`).
   */
  private refuse(w: Wire, closeConnection: boolean): void {
    if (closeConnection) setImmediate(sendClosing, this, w);
    else this.send(w);
  }

  /** The refusal's turn has come (see `refuse`), unless the client went away or uWS closed the connection. */
  sendClosing(w: Wire): void {
    this.send(w, true);
  }

  /**
   * uWS serves pipelined requests only while each is answered before the next is parsed: a request
   * arriving behind one still in flight makes it close the connection, and the one in flight can no
   * longer be answered. A write therefore starts one turn of the event loop later, after uWS has
   * parsed what came with it, and only while its connection is open: a write that cannot be answered
   * is not applied. While it commits, the connection is paused, so a request sent behind it stays in
   * the kernel's buffer until the write is answered, and is then read and answered in order. Reads
   * change nothing and start at once. A request that waits for a change (`?wait=`: a blocking query,
   * a queued acquire) is never paused: a paused connection does not see its client go away.
   */
  private start(body: Buffer): void {
    if (bodylessMethods.has(this.method)) return this.dispatch(body);
    setImmediate(startWrite, this, body);
  }

  /** The write's turn has come (see `start`). */
  startWrite(body: Buffer): void {
    if (this.done) return;
    if (!this.query.has('wait')) {
      this.res.pause();
      this.paused = true;
    }
    this.dispatch(body);
  }

  private dispatch(body: Buffer): void {
    const req = new ExchangeRequest(
      this, this.method, this.head.path, this.query, this.head.headers, body, this.s.dialect === 'seed', this.requestId, this.s.answers,
    );
    if (this.head.sentMethod !== this.method) req.sentMethod = this.head.sentMethod;
    if (this.identity !== undefined) req.identity = this.identity;
    this.req = req;
    let answer: Wire | Promise<Wire>;
    try {
      answer = handle(this.s, req, this, this.found);
    } catch (err) {
      return this.fail(err);
    }
    if (isPromise(answer)) answer.then((w) => this.answer(req, w), (err: unknown) => this.fail(err));
    else this.answer(req, answer);
  }

  private answer(req: Request, w: Wire): void {
    this.send(conditional(req, w, this.s.dialect, this.s.timeOfIndex), false, w.reservedBytes ?? 0);
  }

  /**
   * A request that failed counts against its caller — the token's subject once the gate has proven it (a
   * refusal of what the token may do), else its address (authentication failed, or is off): past that
   * caller's limit it is answered 429 rather than with its error.
   */
  private fail(err: unknown): void {
    this.send(this.admit(this.req?.caller) ?? errorWire(this.s, err, this.requestId));
  }

  /**
   * Answers once: counts the request if nothing did, adds the rate headers, observes and logs it. The bytes
   * of large answers its rendering reserved are given back first: the body's own size is counted below.
   */
  private send(w: Wire, closeConnection = false, reservedBytes = 0): void {
    if (reservedBytes > 0) this.s.answers.release(reservedBytes);
    if (this.done) return;
    this.done = true;
    this.s.inFlight.leave(this);
    if (this.admission !== undefined) {
      this.admit(undefined);
      w = withHeaders(w, this.admission.headers);
    }
    const ms = performance.now() - this.startedMs;
    const counted = this.method !== 'HEAD' && !closeConnection ? this.countLarge(w, reservedBytes > 0) : 0;
    if (counted === undefined) w = renderError(new RegistryError('answersBusy'), this.s.dialect);
    if (w.feed !== undefined && this.method !== 'HEAD' && !closeConnection) {
      openFeed(this.res, w, w.feed, { requestId: this.requestId, ms, resume: this.paused }, this.s.feeds);
    } else {
      writeAnswer(this.res, w, { requestId: this.requestId, ms, head: this.method === 'HEAD', resume: this.paused, close: closeConnection, counted: counted ?? 0 }, this.s);
    }
    // Answers refused before routing (429, 413, 503...) still count against the route they asked for.
    const route = this.req?.route ?? this.found?.entry.pattern ?? unmatchedPattern;
    this.s.observer?.request(this.method, route, w.status, ms / 1000, this.req?.queuedSeconds ?? 0);
    logRequest(this.s.logger, this.requestId, this.method, route, this.head.path, w.status, ms, w.callerFault);
  }

  /**
   * The bytes of the budget a large answer takes (0 for a small one), or undefined when it does not fit.
   * An answer whose size was reserved before it was rendered (`admitted`) is counted whatever the
   * budget holds now: refusing it once built would spare nothing.
   */
  private countLarge(w: Wire, admitted: boolean): number | undefined {
    const bytes = w.body.length;
    if (bytes < streamedBytesMin) return 0;
    if (admitted) return this.s.answers.takeAnyway(bytes);
    return this.s.answers.take(bytes) ? bytes : undefined;
  }
}

const emptyBody = Buffer.alloc(0);

function startWrite(exchange: { startWrite(body: Buffer): void }, body: Buffer): void {
  exchange.startWrite(body);
}

function sendClosing(exchange: { sendClosing(w: Wire): void }, w: Wire): void {
  exchange.sendClosing(w);
}
