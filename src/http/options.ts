/** The HTTP server's options and handle (server.ts starts it). */
import type * as Uws from 'uWebSockets.js';
import type { Identity } from '../auth/index.ts';
import type { HostCheck } from './allowed-hosts.ts';
import type { Logger } from '../ports/index.ts';
import type { HttpObserver } from '../ports/observer.ts';
import type { RateLimiter } from './rate-limit.ts';
import type { Dialect, LeaderView } from './render.ts';
import type { Request } from './request.ts';
import type { Router } from './router.ts';

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
  /** The identity a request's head proves, judged before its body is read (dispatch.ts headIdentity). @default none */
  identify?: (headers: Map<string, string>, query: URLSearchParams) => Promise<Identity> | undefined;
  /**
   * Whether a request naming this Host is served (allowed-hosts.ts); one that is not is answered 421 before
   * anything counts it, WebSocket upgrades included. @default every Host
   */
  hostAllowed?: HostCheck;
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
  /** How many of an address's requests in flight are the agent's own checks' (probes/own-requests.ts), allowed besides the cap. @default none */
  ownRequestsFrom?: (address: string) => number;
  /** A request body must arrive within this long of its head, else 400 code 1015 and the connection closes. @default 8 s */
  bodyTimeoutMs?: number;
  /** Bytes of large answers in flight over all clients; past them a large answer is refused 503 (large-answers.ts). @default 256 MiB */
  answerBytesMax?: number;
  /** A large answer's connection is closed when its client has read nothing for this long. @default 30 s */
  writeIdleMs?: number;
}

export interface HttpServer {
  url: string;
  port: number;
  /**
   * HTTPS: new connections get this certificate and key (files uWS reads now); open ones keep theirs.
   * Throws when the files do not make a TLS context, or the server serves plain HTTP.
   */
  useCertificate(tls: { certFile: string; keyFile: string }): void;
  close(): void;
}
