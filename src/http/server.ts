/**
 * The HTTP front end on uWebSockets.js: one app whose every request is an Exchange (exchange.ts) —
 * admitted (admission.ts, auth-gate.ts, rate-limit.ts), dispatched to its route (dispatch.ts), given its
 * list rules (list-rules.ts) and conditional answer (conditional.ts), and written through the uWS
 * adapter (uws.ts) with the convention headers and a log line (request-log.ts).
 */
import { requestBodyBytesMax } from '../domain/limits.ts';
import { InFlight } from './admission.ts';
import { Exchange, type Server } from './exchange.ts';
import { AnswerBudget, answerBytesMaxDefault, writeIdleMsDefault } from './large-answers.ts';
import { reservedParameters } from './list-rules.ts';
import type { HttpServer, HttpServerOptions } from './options.ts';
import { listen, loadUws, OpenFeeds, type TlsPaths } from './uws.ts';

export type { HttpServer, HttpServerOptions, WebSocketRoute } from './options.ts';
export { loadUws } from './uws.ts';
export { parseHttpDate } from './conditional.ts';
export { isoWithOffset, requestIdOf } from './request-log.ts';

/**
 * What every exchange of the server shares, with the options' defaults applied. The limits are read from
 * the options at each request, so a reload that changes them there takes effect at once.
 */
function serverOf<Ctx>(o: HttpServerOptions<Ctx>): Server<Ctx> {
  return {
    ...o,
    reserved: reservedParameters(o.router),
    inFlight: new InFlight(),
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
    for (const route of o.websockets ?? []) for (const path of [route.path, `${route.path}/`]) app.ws(path, route.behavior);
    app.any('/*', (res, uwsReq) => new Exchange(server, res, uwsReq).run());
    return app;
  };
  const beforeClose = () => {
    for (const route of o.websockets ?? []) route.closeAll();
    server.feeds.endAll();
  };
  return listen(uws, makeApp, { host: o.host, port: o.port, ...(o.tls ? { tls: o.tls } : {}), beforeClose });
}
