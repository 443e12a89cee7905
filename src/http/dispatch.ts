/**
 * From an admitted request to its rendered answer: the API version header, routing (404, 405 and
 * OPTIONS answered here, and the seed dialect's 406 for an Accept no answer meets), authorization and the
 * caller's rate limit, the route's handler, the list rules, and every failure turned into the dialect's error.
 */
import type { Identity } from '../auth/index.ts';
import { RegistryError } from '../domain/errors.ts';
import type { Logger } from '../ports/index.ts';
import { isEntryTooLarge, isLogFailed, isLogOverloaded, isLogUnavailable, isOutcomeUnknown, isWriteTimedOut } from '../wal/index.ts';
import { streamedBytesMin, type AnswerBudget } from './large-answers.ts';
import { withListRules } from './list-rules.ts';
import { acceptedBy, refusedAnswer, refuseUnacceptable } from './negotiation.ts';
import { checkPreconditionsWithoutRepresentation } from './preconditions.ts';
import { renderError, renderReply, withHeaders, type Dialect, type LeaderView, type Wire } from './render.ts';
import { decodeOnce, type Request } from './request.ts';
import type { Reply } from './reply.ts';
import { unmatchedPattern, type Found, type Handler, type Router } from './router.ts';
import type { LogShortage } from '../ports/log-errors.ts';
import { lineLimitOf } from '../util/line-limit.ts';

/** The 503 a write gets while the log cannot store writes, by what it is short of. */
export const shortageErrors = {
  space: 'diskFull', descriptors: 'descriptorsShort', files: 'dataDirRemoved', dir: 'dataDirUnusable', stream: 'logStreamGone', storage: 'logStorageFull',
} as const satisfies Record<LogShortage, string>;

/** Counts a request against a caller (undefined: its address); the 429 answer when that caller is past its limit. */
export interface Admitter {
  admit(caller: string | undefined): Wire | undefined;
}

/** What dispatching needs of the server's options. */
export interface Dispatcher<Ctx> {
  router: Router<Ctx>;
  ctx: Ctx;
  dialect: Dialect;
  logger: Logger;
  leader?: () => LeaderView;
  authorize?: (req: Request) => Promise<void>;
  /**
   * The identity a request's head proves, judged before its body is read (`headIdentity`); undefined when it
   * can be judged only with the body (a signed request). Left on the request, `authorize` takes it as proven.
   */
  identify?: (headers: Map<string, string>, query: URLSearchParams) => Promise<Identity> | undefined;
  /** The query parameters the list rules leave alone (list-rules.ts reservedParameters). */
  reserved: readonly string[];
  /** Bytes of large answers in flight (large-answers.ts); asked before a large list is rendered. */
  answers?: AnswerBudget;
}

/**
 * The answer to an admitted request; `found`: the path's route when the exchange looked it up already.
 * A request that waits for nothing (no authentication to verify, a handler answering at once) is answered
 * synchronously, so the exchange can write it before uWS's handler returns; a failure then throws.
 */
export function handle<Ctx>(d: Dispatcher<Ctx>, req: Request, admitter: Admitter, found?: Found<Ctx>): Wire | Promise<Wire> {
  const versionHeaders = apiVersion(req, d.dialect);
  const w = route(d, req, admitter, found);
  if (versionHeaders.length === 0) return w;
  return isPromise(w) ? w.then((x) => withHeaders(x, versionHeaders)) : withHeaders(w, versionHeaders);
}

/** What judging a request before its body looks at. */
export interface RequestHead {
  /** The method the request stands for (effectiveMethod). */
  method: string;
  path: string;
  headers: Map<string, string>;
  query: URLSearchParams;
}

/**
 * The identity a request's head proves, which the exchange waits for before it reads the body: a request
 * without credentials, or with a bearer token that fails, is refused (401) at once, not after a body it may
 * never send (up to the body timeout and the body limit). Undefined where nothing is judged before the body:
 * authentication off; a request the route table answers before authentication (404, 405, OPTIONS, the seed
 * dialect's 406), which it does after the body as before; a public route; a signed request, whose signature
 * covers the body. The identity is to be left on the request (`identity`) for `authorize`.
 */
export function headIdentity<Ctx>(d: Dispatcher<Ctx>, head: RequestHead, found: Found<Ctx> | undefined): Promise<Identity> | undefined {
  if (d.identify === undefined) return undefined;
  const match = d.router.match(head.method === 'HEAD' ? 'GET' : head.method, head.path, found);
  if (match.kind !== 'found' || match.public) return undefined;
  if (d.dialect === 'seed' && !acceptedBy(head.headers, match.produces)) return undefined;
  return d.identify(head.headers, head.query);
}

export function isPromise<T>(x: T | Promise<T>): x is Promise<T> {
  return typeof (x as { then?: unknown } | undefined)?.then === 'function';
}

/**
 * `x-api-version` (a minor version, yyyyMMdd) is accepted and echoed; one that is not a calendar date is
 * refused (seed) or ignored (consul).
 */
function apiVersion(req: Request, dialect: Dialect): [string, string][] {
  const version = req.headers.get('x-api-version');
  if (version === undefined) return [];
  if (!isCalendarDate(version.trim())) {
    if (dialect === 'consul') return [];
    throw new RegistryError('apiVersionInvalid');
  }
  return [['x-api-version', version.trim()]];
}

/** Whether `text` is yyyyMMdd naming a day of the (proleptic Gregorian) calendar: the Date's own arithmetic decides. */
function isCalendarDate(text: string): boolean {
  const parts = /^(\d{4})(\d{2})(\d{2})$/.exec(text);
  if (parts === null) return false;
  const [year, month, day] = [Number(parts[1]), Number(parts[2]), Number(parts[3])];
  // setUTCFullYear takes years below 100 as they are (Date.UTC would add 1900); an overflowing month or
  // day rolls into the next, so the round trip holds only for a real date.
  const date = new Date(0);
  date.setUTCFullYear(year, month - 1, day);
  return date.getUTCFullYear() === year && date.getUTCMonth() === month - 1 && date.getUTCDate() === day;
}

function route<Ctx>(d: Dispatcher<Ctx>, req: Request, admitter: Admitter, found: Found<Ctx> | undefined): Wire | Promise<Wire> {
  found ??= d.router.find(req.path);
  const match = d.router.match(req.method === 'HEAD' ? 'GET' : req.method, req.path, found);
  req.route = match.kind === 'none' ? unmatchedPattern : match.pattern;
  if (match.kind === 'none') {
    // Consul answers a path it does not serve 404 whatever the method, OPTIONS too: no client takes it for an endpoint.
    if (req.method === 'OPTIONS' && d.dialect === 'seed') return renderReply({ t: 'options', allow: ['OPTIONS'] }, d.dialect);
    throw new RegistryError('noEndpoint', { method: req.method, path: req.path });
  }
  if (match.kind === 'method') {
    if (req.method === 'OPTIONS') return renderReply({ t: 'options', allow: match.allow }, d.dialect);
    return renderError(new RegistryError('methodNotAllowed', { method: req.method, allowed: match.allow }), d.dialect);
  }
  req.rest = decodeOnce(match.rest);
  // Like 404 and 405, judged from the route table alone, before authentication and before anything runs.
  if (d.dialect === 'seed') refuseUnacceptable(req, match.produces);
  const authorize = match.public ? undefined : d.authorize;
  const ownPreconditions = found?.entry.route.preconditions === true;
  if (authorize !== undefined) return authorize(req).then(() => authorized(d, req, admitter, match.handler, ownPreconditions));
  return authorized(d, req, admitter, match.handler, ownPreconditions);
}

/**
 * The caller counted against its rate limit, then the route's handler and the rendering of its reply; a
 * write's If-Match refused first where the route judges no preconditions itself (preconditions.ts).
 */
function authorized<Ctx>(d: Dispatcher<Ctx>, req: Request, admitter: Admitter, handler: Handler<Ctx>, ownPreconditions: boolean): Wire | Promise<Wire> {
  const limited = admitter.admit(req.caller);
  if (limited !== undefined) return limited;
  if (!ownPreconditions) checkPreconditionsWithoutRepresentation(req, d.dialect);
  const reply = handler(req, d.ctx);
  return isPromise(reply) ? reply.then((r) => rendered(d, req, r)) : rendered(d, req, reply);
}

function rendered<Ctx>(d: Dispatcher<Ctx>, req: Request, reply: Reply): Wire {
  const refused = d.dialect === 'seed' ? refusedAnswer(req, reply) : undefined;
  if (refused !== undefined) return refused;
  // Only JSON lists have list rules or a size worth reserving: every write's answer is rendered at once.
  if (reply.t !== 'json') return renderReply(reply, d.dialect, d.leader?.());
  const listed = withListRules(req, reply, d.reserved);
  // A large list is rendered whole, in one turn of the event loop: past the budget of large answers it is
  // refused before it is rendered, not after (the time and memory of rendering are what the budget spares).
  const reserved = reservedFor(d.answers, reply, listed.reply);
  if (reserved === undefined) return renderError(new RegistryError('answersBusy'), d.dialect);
  let w: Wire;
  try {
    w = renderReply(listed.reply, d.dialect, d.leader?.());
  } catch (err) {
    if (reserved > 0) d.answers!.release(reserved);
    throw err;
  }
  if (reserved > 0) w.reservedBytes = reserved;
  return listed.headers.length === 0 ? w : withHeaders(w, listed.headers);
}

/**
 * The bytes taken from the budget for a list whose rendering may be large (its route's hint, in proportion
 * to what the list rules kept of it): 0 for a small one, undefined when the budget is full.
 */
function reservedFor(answers: AnswerBudget | undefined, reply: Reply, listed: Reply): number | undefined {
  if (answers === undefined || reply.t !== 'json' || reply.bytesHint === undefined || listed.t !== 'json') return 0;
  const all = Array.isArray(reply.value) ? reply.value.length : 0;
  const kept = Array.isArray(listed.value) ? listed.value.length : all;
  const bytes = all === 0 ? reply.bytesHint : Math.ceil(reply.bytesHint * (kept / all));
  if (bytes < streamedBytesMin) return 0;
  return answers.take(bytes) ? bytes : undefined;
}

/** A failure as the dialect's error: the registry's own, the log's refusals, or an internal error (logged). */
export function errorWire(d: Pick<Dispatcher<unknown>, 'dialect' | 'logger'>, err: unknown, reqId: string): Wire {
  if (err instanceof RegistryError) return renderError(err, d.dialect);
  if (isLogOverloaded(err)) return renderError(new RegistryError('logOverloaded'), d.dialect);
  // The write was not applied; the log stores writes again by itself once the disk has room or descriptors are free.
  if (isLogUnavailable(err)) return renderError(new RegistryError(shortageErrors[err.shortage]), d.dialect);
  if (isWriteTimedOut(err)) return renderError(new RegistryError('writeTimedOut', { timeoutMs: err.timeoutMs }), d.dialect);
  if (isEntryTooLarge(err)) return renderError(new RegistryError('entryTooLarge', { bytes: err.bytes, max: err.max }), d.dialect);
  if (isOutcomeUnknown(err)) {
    const msg = 'request failed: the log gave up on the write, which may still take effect';
    if (lineLimitOf(d.logger, 'warn', msg).admit()) d.logger.warn({ err, reqId }, msg);
    return renderError(new RegistryError('writeOutcomeUnknown'), d.dialect);
  }
  if (isLogFailed(err)) {
    // The cause (with paths) is in the agent's log, logged once by the log when it failed, not in the answer;
    // each write refused for it afterwards is only noted (the request line records its 500).
    d.logger.debug({ reqId, why: err.message }, 'request refused: the log has failed');
    return renderError(new RegistryError('logFailed'), d.dialect);
  }
  // Limited (line-limit.ts): a request that fails so, repeated, must not fill the log.
  if (lineLimitOf(d.logger, 'error', 'request failed').admit()) d.logger.error({ err, reqId }, 'request failed');
  const message = err instanceof Error ? err.message : String(err);
  return renderError(new RegistryError('internal', { why: message }), d.dialect);
}
