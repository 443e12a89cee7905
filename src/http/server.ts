/**
 * The HTTP front end on uWebSockets.js: one app whose every request is an Exchange (exchange.ts) —
 * admitted (admission.ts, auth-gate.ts, rate-limit.ts), dispatched to its route (dispatch.ts), given its
 * list rules (list-rules.ts) and conditional answer (conditional.ts), and written through the uWS
 * adapter (uws.ts) with the convention headers and a log line (request-log.ts).
 */
import type * as Uws from 'uWebSockets.js';
import { RegistryError } from '../domain/errors.ts';
import { requestBodyBytesMax } from '../domain/limits.ts';
import { InFlight } from './admission.ts';
import { Exchange, type Server } from './exchange.ts';
import { AnswerBudget, answerBytesMaxDefault, writeIdleMsDefault } from './large-answers.ts';
import { reservedParameters } from './list-rules.ts';
import type { HttpServer, HttpServerOptions } from './options.ts';
import { renderError } from './render.ts';
import { logRequest, requestIdOf } from './request-log.ts';
import { unmatchedPattern } from './router.ts';
import { listen, loadUws, OpenFeeds, writeAnswer, type TlsPaths } from './uws.ts';

export type { HttpServer, HttpServerOptions, WebSocketRoute } from './options.ts';
export { loadUws } from './uws.ts';
export { parseHttpDate } from './conditional.ts';
export { isoWithOffset, requestIdOf } from './request-log.ts';

/** The server, and the Host check in front of its exchanges. */
type Front<Ctx> = Server<Ctx> & Pick<HttpServerOptions<Ctx>, 'hostAllowed'>;

/**
 * What every exchange of the server shares, with the options' defaults applied. The limits are read from
 * the options at each request, so a reload that changes them there takes effect at once.
 */
function serverOf<Ctx>(o: HttpServerOptions<Ctx>): Front<Ctx> {
  return {
    ...o,
    reserved: reservedParameters(o.router),
    inFlight: new InFlight((address) => o.ownRequestsFrom?.(address) ?? 0),
    get inFlightMax() { return o.requestsInFlightPerClientMax ?? 200; },
    get bodyBytesMax() { return o.bodyBytesMax ?? requestBodyBytesMax; },
    get bodyTimeoutMs() { return o.bodyTimeoutMs ?? 8_000; },
    answers: new AnswerBudget({ get answerBytesMax() { return o.answerBytesMax ?? answerBytesMaxDefault; } }),
    get writeIdleMs() { return o.writeIdleMs ?? writeIdleMsDefault; },
    feeds: new OpenFeeds(),
  };
}

export function startHttpServer<Ctx>(o: HttpServerOptions<Ctx>): Promise<HttpServer> {
  const uws = loadUws();
  const server = serverOf(o);
  const makeApp = (tls?: TlsPaths) => {
    const app = tls ? uws.SSLApp({ cert_file_name: tls.certFile, key_file_name: tls.keyFile }) : uws.App();
    // A path with and without a final `/` names one endpoint (router.ts): the upgrade is served at both.
    for (const route of o.websockets ?? []) for (const path of [route.path, `${route.path}/`]) app.ws(path, withHostCheck(server, route.behavior));
    app.any('/*', (res, uwsReq) => {
      if (!refusedHost(server, res, uwsReq)) new Exchange(server, res, uwsReq).run();
    });
    return app;
  };
  const beforeClose = () => {
    for (const route of o.websockets ?? []) route.closeAll();
    server.feeds.endAll();
  };
  return listen(uws, makeApp, { host: o.host, port: o.port, ...(o.tls ? { tls: o.tls } : {}), beforeClose });
}

/**
 * A request naming a Host the agent does not answer to (allowed-hosts.ts) is answered 421 at once, before
 * anything counts it: not in flight, not against the rate limit (a page rebinding its name to the agent's
 * address must not fill its visitor's allowances either), its body unread. Whether it was refused.
 */
function refusedHost<Ctx>(s: Front<Ctx>, res: Uws.HttpResponse, uwsReq: Uws.HttpRequest): boolean {
  const host = uwsReq.getHeader('host');
  if (s.hostAllowed === undefined || s.hostAllowed(host)) return false;
  const startedMs = performance.now();
  const method = uwsReq.getCaseSensitiveMethod();
  const path = uwsReq.getUrl();
  const requestId = requestIdOf(uwsReq.getHeader('x-request-id') || undefined);
  const w = renderError(new RegistryError('hostNotAllowed', { host }), s.dialect);
  const ms = performance.now() - startedMs;
  writeAnswer(res, w, { requestId, ms, head: method === 'HEAD', resume: false, close: false, counted: 0 }, s);
  const route = s.router.find(path)?.entry.pattern ?? unmatchedPattern;
  s.observer?.request(method, route, w.status, ms / 1000, 0);
  logRequest(s.logger, requestId, method, route, path, w.status, ms);
  return true;
}

/** The WebSocket route's upgrade, behind the same Host check as every other request. */
function withHostCheck<Ctx>(s: Front<Ctx>, behavior: Uws.WebSocketBehavior<unknown>): Uws.WebSocketBehavior<unknown> {
  const upgrade = behavior.upgrade ?? defaultUpgrade;
  return { ...behavior, upgrade: (res, req, context) => { if (!refusedHost(s, res, req)) upgrade(res, req, context); } };
}

/** What uWS does for a route without an upgrade handler of its own. */
function defaultUpgrade(res: Uws.HttpResponse, req: Uws.HttpRequest, context: Uws.us_socket_context_t): void {
  res.upgrade({}, req.getHeader('sec-websocket-key'), req.getHeader('sec-websocket-protocol'), req.getHeader('sec-websocket-extensions'), context);
}
