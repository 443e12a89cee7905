/**
 * The stream's upgrade (watch.md §4.1): the subprotocol must be ours when any is offered; with
 * authentication on, a valid token (Authorization, X-Consul-Token, `?token=` or a `bearer.<base64url>`
 * subprotocol) or 401, and rules that read something the stream shows or 403; then the agent's cap
 * (503) and the per-client cap (429); a Sec-WebSocket-Version other than 13 (or none) is 426 with
 * `Sec-WebSocket-Version: 13`, as RFC 6455 asks. Each attempt counts once against the rate limit, as an HTTP
 * request does: against the token's subject once it verified, else (no auth, a refusal before or by
 * authentication) the address; past it the answer is 429 with Retry-After instead, before any upgrade.
 * A credential header sent twice is refused first (400), as for any request (admission.ts).
 * Refusals are answered in the dialect's error format and carry the rate headers. Without authentication, a
 * browser's upgrade from a page of another origin is refused 403 (`foreignOrigin`).
 */
import type * as Uws from 'uWebSockets.js';
import { allowed, type Identity } from '../auth/index.ts';
import { RegistryError } from '../domain/errors.ts';
import { addressCaller, addressKey, Admission, tokenCaller } from './rate-limit.ts';
import { credentialRepeated } from './admission.ts';
import { renderError, statusLine, withHeaders, type Dialect, type Wire } from './render.ts';
import { bearerSubprotocol, streamSubprotocol, type ConnData, type StreamSettings } from './stream-conn.ts';
import { credentialHeaders } from './uws.ts';

/** What an upgrade asks of the stream server. */
export interface UpgradeHost {
  dialect: Dialect;
  o: StreamSettings;
  /** Open connections of the agent. */
  connections(): number;
  /** Open connections of one client (`token:<subject>` or `address:<address>`). */
  connectionsOf(client: string): number;
}

/** The only WebSocket version there is (RFC 6455), which a client must ask for. */
export const websocketVersion = '13';
const upgradeRequired = 426;

/** What the stream's topics show, by the resource their rules name. */
const streamResources = ['service', 'node', 'session', 'key'] as const;

/**
 * Whether a token may open the stream: its rules must grant read on some name of a resource a topic
 * shows (a service, node, session or key prefix). A rule's own prefix is such a name when any is: the
 * longest rule matching a readable name is an allow rule whose prefix is itself readable.
 */
function mayOpen(identity: Identity): boolean {
  return identity.rules.some((r) => r.access !== 'deny' && (streamResources as readonly string[]).includes(r.resource)
    && allowed(identity, { resource: r.resource, name: r.prefix, access: 'read' }));
}

/**
 * The upgrade's judgement of a verified token (`identity`; undefined without authentication): 403
 * `streamForbidden` when its rules read nothing a topic shows, else undefined. A plain GET of the stream's
 * path answers with it too (routes/stream-probe.ts), so a browser can learn why its upgrade failed.
 */
export function tokenRefusal(identity: Identity | undefined): RegistryError | undefined {
  return identity !== undefined && !mayOpen(identity) ? new RegistryError('streamForbidden', { resources: streamResources }) : undefined;
}

/**
 * The Origin of a browser's upgrade when it is not the agent's own address (the Host it was asked on), else
 * undefined. Browsers let any page open a WebSocket to any address and send its Origin: without
 * authentication nothing else would keep a page of another site from reading the registry through its
 * visitor's browser (the HTTP API is kept from that by the same-origin rule). Clients other than browsers
 * send no Origin. An opaque origin (`null`: a sandboxed frame, a file) is another origin.
 */
export function foreignOrigin(headers: ReadonlyMap<string, string>): string | undefined {
  const origin = headers.get('origin');
  if (origin === undefined || origin === '') return undefined;
  try {
    const from = new URL(origin);
    if (from.protocol !== 'http:' && from.protocol !== 'https:') return origin;
    // Behind a proxy that passes the Host it was asked on as X-Forwarded-Host (a page cannot set that header on an upgrade).
    const hosts = [headers.get('host'), headers.get('x-forwarded-host')?.split(',')[0]?.trim()];
    return hosts.some((h) => h !== undefined && h !== '' && new URL(`${from.protocol}//${h}`).host === from.host) ? undefined : origin;
  } catch {
    return origin;
  }
}

/** One upgrade attempt: what it needs is copied from the uWS request at once (uWS reuses it). */
export class Upgrade {
  private readonly key: string;
  private readonly version: string;
  private readonly extensions: string;
  private readonly protocols: string[];
  private readonly headers = new Map<string, string>();
  /** A credential header sent more than once (refused, as for any request: admission.ts). */
  private repeated: string | undefined;
  private readonly query: URLSearchParams;
  private readonly remote: string;
  private readonly byAddress: string;
  /** Counted once per attempt, against the first caller named, as an HTTP request is. */
  private readonly admission: Admission;
  private aborted = false;

  constructor(private readonly host: UpgradeHost, private readonly res: Uws.HttpResponse, req: Uws.HttpRequest, private readonly context: Uws.us_socket_context_t) {
    this.key = req.getHeader('sec-websocket-key');
    this.version = req.getHeader('sec-websocket-version').trim();
    this.extensions = req.getHeader('sec-websocket-extensions');
    this.protocols = req.getHeader('sec-websocket-protocol').split(',').map((p) => p.trim()).filter((p) => p !== '');
    req.forEach((k, v) => {
      if (credentialHeaders.has(k) && this.headers.has(k)) this.repeated ??= k;
      this.headers.set(k, v);
    });
    this.query = new URLSearchParams(req.getQuery() ?? '');
    this.remote = Buffer.from(res.getRemoteAddressAsText()).toString();
    this.byAddress = addressCaller(addressKey(res.getRemoteAddress()));
    this.admission = new Admission(host.o.rateLimit, host.dialect);
  }

  run(): void {
    if (this.repeated !== undefined) {
      const over = this.limited(this.byAddress);
      return over !== undefined ? this.reject(over) : this.refuse(credentialRepeated(this.repeated));
    }
    // Without authentication there is no identity to wait for: the address counts at once.
    const early = this.host.o.auth === undefined ? this.limited(this.byAddress) : undefined;
    if (early !== undefined) return this.reject(early);
    const foreign = this.host.o.auth === undefined ? foreignOrigin(this.headers) : undefined;
    if (foreign !== undefined) {
      const over = this.limited(this.byAddress);
      return over !== undefined ? this.reject(over) : this.refuse(new RegistryError('streamOriginRefused', { origin: foreign }));
    }
    if (this.version !== websocketVersion) {
      const over = this.limited(this.byAddress);
      return this.reject(over ?? this.versionRefusal());
    }
    if (this.protocols.length > 0 && !this.protocols.includes(streamSubprotocol)) {
      const over = this.limited(this.byAddress);
      if (over !== undefined) return this.reject(over);
      const offered = this.protocols.filter((p) => !p.startsWith(bearerSubprotocol));
      return this.refuse(new RegistryError('streamSubprotocolUnsupported', { use: streamSubprotocol, offered }));
    }
    if (this.host.o.auth === undefined) return this.accept(undefined, (write) => write());
    this.authenticate(this.host.o.auth);
  }

  private authenticate(auth: NonNullable<StreamSettings['auth']>): void {
    const carried = this.protocols.find((p) => p.startsWith(bearerSubprotocol));
    const subprotocolToken = carried === undefined ? undefined : Buffer.from(carried.slice(bearerSubprotocol.length), 'base64url').toString('utf8');
    this.res.onAborted(() => {
      this.aborted = true;
    });
    auth.bearer(this.headers, this.query, subprotocolToken).then(
      // Not inside cork(): uWebSockets.js 20.x now and then closes (1006) a socket upgraded after an await
      // within cork() right after its open (uNetworking/uWebSockets issue 1928, fixed upstream by PR 1929;
      // seen here in about 1 of 15 authenticated connections, never without auth).
      (identity) => { if (!this.aborted) this.accept(identity, (write) => this.res.cork(write)); },
      (err: unknown) => {
        if (this.aborted) return;
        const refusal = err instanceof RegistryError ? err : new RegistryError('authenticationFailed');
        const over = this.limited(this.byAddress);
        this.res.cork(() => (over !== undefined ? this.reject(over) : this.refuse(refusal)));
      },
    );
  }

  /** `corked` wraps writes made after an await (uWS wants them corked); the upgrade itself is not wrapped. */
  private accept(identity: Identity | undefined, corked: (write: () => void) => void): void {
    const client = identity !== undefined ? `token:${identity.subject}` : `address:${this.remote}`;
    const over = identity !== undefined ? this.limited(tokenCaller(identity.subject)) : undefined;
    if (over !== undefined) return corked(() => this.reject(over));
    const refusal = this.refusal(identity, client);
    if (refusal !== undefined) return corked(() => this.refuse(refusal));
    // Echo only our protocol, never the token (watch.md §4.1).
    const caller = identity !== undefined ? tokenCaller(identity.subject) : this.byAddress;
    this.res.upgrade<ConnData>({ client, caller, identity }, this.key, this.protocols.length > 0 ? streamSubprotocol : '', this.extensions, this.context);
  }

  /** Why an authenticated (or open) attempt is refused: rules that read nothing shown, or a connection cap. */
  private refusal(identity: Identity | undefined, client: string): RegistryError | undefined {
    const o = this.host.o;
    const refused = tokenRefusal(identity);
    if (refused !== undefined) return refused;
    if (this.host.connections() >= o.connectionsMax) return new RegistryError('streamConnectionsFull', { max: o.connectionsMax });
    if (this.host.connectionsOf(client) >= o.connectionsPerClientMax) return new RegistryError('streamClientConnectionsFull', { max: o.connectionsPerClientMax });
    return undefined;
  }

  /**
   * RFC 6455 §4.2.2: a version the server does not speak (or none) is answered 426 Upgrade Required with
   * the version it does speak in Sec-WebSocket-Version, in the dialect's format.
   */
  private versionRefusal(): Wire {
    const err = new RegistryError('fieldsInvalid', {
      fields: { 'Sec-WebSocket-Version': [`Value:must be ${websocketVersion}`] },
      consul: { status: upgradeRequired, text: `unsupported WebSocket version: use ${websocketVersion}` },
    });
    const w = withHeaders(renderError(err, this.host.dialect), [['Sec-WebSocket-Version', websocketVersion], ...this.admission.headers]);
    return { ...w, status: upgradeRequired };
  }

  private limited(caller: string): Wire | undefined {
    const over = this.admission.admit(caller);
    return over === undefined ? undefined : withHeaders(over, this.admission.headers);
  }

  /** Every refusal carries the rate headers, as every HTTP answer does. */
  private refuse(err: RegistryError): void {
    this.reject(withHeaders(renderError(err, this.host.dialect), this.admission.headers));
  }

  private reject(w: Wire): void {
    this.res.writeStatus(statusLine(w.status));
    for (const [k, v] of w.headers) this.res.writeHeader(k, v);
    this.res.end(w.body);
  }
}
