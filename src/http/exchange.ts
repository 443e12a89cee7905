/**
 * One request and its answer on a uWS connection: admitted, its body read, dispatched, answered once.
 * It copies what it needs from the uWS request synchronously, registers onAborted before any await,
 * counts the client's requests in flight, and writes the answer with the convention and rate headers.
 */
import type * as Uws from 'uWebSockets.js';
import { RegistryError } from '../domain/errors.ts';
import { setLongTimeout } from '../util/timer.ts';
import { bodylessMethods, effectiveMethod, refusalBeforeBody, tooLarge, unusableHead, type InFlight, type Limits } from './admission.ts';
import { conditional } from './conditional.ts';
import { errorWire, handle, type Dispatcher } from './dispatch.ts';
import type { HttpObserver } from '../ports/observer.ts';
import { addressCaller, addressKey, Admission, type RateLimiter } from './rate-limit.ts';
import { renderError, withHeaders, type Wire } from './render.ts';
import { logRequest, requestIdOf } from './request-log.ts';
import type { Request } from './request.ts';
import { copyHead, readBody, writeAnswer, type Head } from './uws.ts';

/** What every exchange of one server shares. */
export interface Server<Ctx> extends Dispatcher<Ctx>, Limits {
  inFlight: InFlight;
  rateLimit?: RateLimiter;
  observer?: HttpObserver;
  bodyTimeoutMs: number;
  timeOfIndex?: (index: number) => number | undefined;
}

export class Exchange<Ctx> {
  private readonly startedMs = performance.now();
  private readonly head: Head;
  private readonly method: string;
  private readonly query: URLSearchParams;
  private readonly requestId: string;
  /**
   * The binary address as the in-flight key: uWS's text form cost a fifth of a simple GET (profiled),
   * so the text is made only where a message or the rate limiter shows it.
   */
  private readonly remote: string;
  private readonly held: number;
  /** Counted once per request: against the verified identity once authentication has passed, else the address. */
  private readonly admission: Admission;
  private req: Request | undefined;
  /** Only blocking queries look at the signal: made when one does (most requests never). */
  private abort: AbortController | undefined;
  private aborted = false;
  private done = false;
  /** Reading from the connection is paused while a write commits (see `start`). */
  private paused = false;

  constructor(private readonly s: Server<Ctx>, private readonly res: Uws.HttpResponse, uwsReq: Uws.HttpRequest) {
    this.head = copyHead(uwsReq);
    this.query = new URLSearchParams(this.head.rawQuery);
    this.method = effectiveMethod(this.head.sentMethod, this.head.headers);
    this.requestId = requestIdOf(this.head.headers.get('x-request-id'));
    this.remote = addressKey(res.getRemoteAddress());
    this.held = s.inFlight.enter(this.remote);
    this.admission = new Admission(s.rateLimit, s.dialect);
    res.onAborted(() => {
      if (!this.done) s.inFlight.leave(this.remote);
      this.done = true;
      this.aborted = true;
      this.abort?.abort();
    });
  }

  private readonly admit = (caller: string | undefined): Wire | undefined => this.admission.admit(caller ?? addressCaller(this.remote));

  /** Refuses what cannot be admitted, else reads the body (within its deadline) and starts the request. */
  run(): void {
    const { headers } = this.head;
    // A head whose framing or encoding is unusable is refused before anything else looks at it.
    const unusable = unusableHead(this.head);
    if (unusable !== undefined) return this.send(renderError(unusable.error, this.s.dialect), unusable.close);
    // Without authentication there is no identity to wait for: the address is counted before the body is read.
    const early = this.s.authorize === undefined ? this.admit(undefined) : undefined;
    if (early !== undefined) return this.send(early);
    const declared = Number(headers.get('content-length') ?? '0');
    const address = () => Buffer.from(this.res.getRemoteAddressAsText()).toString();
    // A route may take larger bodies than the server's limit (a snapshot to restore).
    const bodyBytesMax = this.s.router.bodyBytesMax(this.head.path) ?? this.s.bodyBytesMax;
    const refusal = refusalBeforeBody(this.method, this.held, declared, { ...this.s, bodyBytesMax }, address);
    if (refusal !== undefined) return this.send(renderError(refusal.error, this.s.dialect, refusal.more), refusal.close);
    if (bodylessMethods.has(this.method) || (declared === 0 && !headers.has('transfer-encoding'))) return this.start(Buffer.alloc(0));
    // A body trickled in slower than the deadline is cut off with an answer (uWS itself would drop
    // the connection silently about 10 s after the head).
    const deadline = setLongTimeout(() => {
      this.send(renderError(new RegistryError('bodyTimeout', { bodyTimeoutMs: this.s.bodyTimeoutMs }), this.s.dialect), true);
    }, this.s.bodyTimeoutMs, false);
    readBody(this.res, bodyBytesMax, (body) => {
      deadline.clear();
      this.start(body);
    }, (size) => {
      deadline.clear();
      this.send(renderError(tooLarge(size, bodyBytesMax), this.s.dialect, [['Connection', 'close']]));
    });
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
    setImmediate(() => {
      if (this.done) return;
      if (!this.query.has('wait')) {
        this.res.pause();
        this.paused = true;
      }
      this.dispatch(body);
    });
  }

  private dispatch(body: Buffer): void {
    const exchange = this;
    const { method, query, requestId } = this;
    const req: Request = {
      method, path: this.head.path, rest: '', query, headers: this.head.headers, body, jsonTypeRequired: this.s.dialect === 'seed', id: requestId,
      get signal() {
        if (exchange.abort === undefined) {
          exchange.abort = new AbortController();
          if (exchange.aborted) exchange.abort.abort();
        }
        return exchange.abort.signal;
      },
    };
    this.req = req;
    // A request that failed (authentication above all) counts against its address: past the address's
    // limit it is answered 429 rather than with its error.
    handle(this.s, req, this.admit).then(
      (w) => this.send(conditional(req, w, this.s.timeOfIndex)),
      (err: unknown) => this.send(this.admit(undefined) ?? errorWire(this.s, err, requestId)),
    );
  }

  /** Answers once: counts the request if nothing did, adds the rate headers, observes and logs it. */
  private send(w: Wire, closeConnection = false): void {
    if (this.done) return;
    this.done = true;
    this.s.inFlight.leave(this.remote);
    this.admit(undefined);
    if (this.s.rateLimit !== undefined) w = withHeaders(w, this.admission.headers);
    const ms = performance.now() - this.startedMs;
    writeAnswer(this.res, w, { requestId: this.requestId, ms, head: this.method === 'HEAD', resume: this.paused, close: closeConnection });
    // Answers refused before routing (429, 413, 503...) still count against the route they asked for.
    const route = this.req?.route ?? this.s.router.pattern(this.head.path);
    this.s.observer?.request(this.method, route, w.status, ms / 1000, this.req?.queuedSeconds ?? 0);
    logRequest(this.s.logger, this.requestId, this.method, route, this.head.path, w.status, ms);
  }
}
