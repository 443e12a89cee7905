/**
 * Who is asking and may they: the gate every routed request passes once authentication is enabled.
 * Credentials are a bearer JWT (`Authorization: Bearer`, or the same token in `X-Consul-Token` or
 * `?token=`), or a signed request (`appKey`, `nonce`, `signMethod`, `sign`). Without credentials a
 * request is refused (default deny); the identity's rules decide each route's read or write.
 */
import { accessFor, allowed, allowedPrefix, appSubject, AuthError, bearerToken, TokenAuthority, wwwAuthenticate, type Access, type AccessRequest, type Identity, type Resource, type Rule } from '../auth/index.ts';
import { NonceWindow, nonceEntriesPerKey, SignatureError, timestampSkewMsDefault, verifySignedRequest } from '../auth/signature.ts';
import { RegistryError, type ErrorName } from '../domain/errors.ts';
import { intervalMs } from '../ports/clock.ts';
import { tokenCaller } from './rate-limit.ts';
import type { Request } from './request.ts';

export interface AuthSettings {
  /** HS256 secret the bearer tokens are signed with. */
  jwtSecret: string;
  /** Signed-request callers: appKey → its secret and rules. */
  appKeys: Record<string, { secret: string; rules: Rule[] }>;
  /** Longest a bearer token is accepted after its `iat`. @default 86400 (24h) */
  tokenLifetimeSecondsMax?: number;
  /** Clock difference tolerated on a token's `exp`, `nbf` and `iat`. @default 60 */
  clockSkewSeconds?: number;
  /** Audiences a token's `aud` must name one of; empty: tokens naming any audience are refused. @default [] */
  audiences?: string[];
  /** How far a signed request's timestamp may be from the agent's clock. @default 5 minutes */
  signatureSkewMs?: number;
}

const tokenErrors = { missing: 'tokenMissing', invalid: 'tokenInvalid', expired: 'tokenExpired' } as const satisfies Record<AuthError['kind'], ErrorName>;
const signatureErrors = {
  missing: 'signatureMissing', bad_method: 'signatureBadMethod', bad_timestamp: 'signatureBadTimestamp', bad_nonce: 'signatureBadNonce', unknown_key: 'signatureUnknownKey',
  unsigned_parameter: 'signatureUnsignedParameter', bad_signature: 'signatureBad', stale: 'signatureStale', replayed: 'signatureReplayed',
} as const satisfies Record<Exclude<SignatureError['kind'], 'busy'>, ErrorName>;

/** The query parameters that carry credentials: a bearer token, or a signed request's. */
export const credentialParameters = ['token', 'appKey', 'nonce', 'timestamp', 'signMethod', 'sign'] as const;

/** Whether a request is signed (app keys): its signature parameters decide, whatever bearer token it carries. */
const isSigned = (query: URLSearchParams) => query.has('appKey') || query.has('sign');

/** A header or parameter that is absent, empty or blank is no credential at all. */
function present(value: string | undefined | null): string | undefined {
  return value === undefined || value === null || value.trim() === '' ? undefined : value;
}

const unmappedRoute: AccessRequest = { resource: 'operator', name: '', access: 'write' };

/** 403 code 1004 for a permission the caller's rules do not grant. */
export function denied(need: AccessRequest): RegistryError {
  return new RegistryError('permissionDenied', need);
}

/**
 * Throws 403 unless the caller holds `access` on `name` of `resource`; passes when authentication is off.
 * For routes whose name is known only to the handler (a body's node, service or check).
 */
export function requireAccess(req: Request, resource: Resource, name: string, access: Access): void {
  if (req.identity === undefined) return;
  const need = { resource, name, access };
  if (!allowed(req.identity, need)) throw denied(need);
}

export class AuthGate {
  private readonly tokens: TokenAuthority;
  private readonly secrets: Map<string, string>;
  private readonly nonces: NonceWindow;

  constructor(private readonly settings: AuthSettings) {
    this.tokens = new TokenAuthority({
      secret: settings.jwtSecret,
      ...(settings.tokenLifetimeSecondsMax !== undefined ? { tokenLifetimeSecondsMax: settings.tokenLifetimeSecondsMax } : {}),
      ...(settings.clockSkewSeconds !== undefined ? { clockSkewSeconds: settings.clockSkewSeconds } : {}),
      ...(settings.audiences !== undefined ? { audiences: settings.audiences } : {}),
    });
    // Nonces live twice the timestamp skew: as long as any request carrying them could be accepted.
    // This process's nonces begin now: a request stamped before may have been accepted by an earlier one.
    // Each app key has its own share, so one that fills it is refused alone.
    const beganMs = intervalMs();
    this.nonces = new NonceWindow({
      windowMs: 2 * (settings.signatureSkewMs ?? timestampSkewMsDefault), entriesMax: nonceEntriesPerKey(Object.keys(settings.appKeys).length),
      ageMs: () => intervalMs() - beganMs,
    });
    this.secrets = new Map(Object.entries(settings.appKeys).map(([k, v]) => [k, v.secret]));
  }

  mint(subject: string, rules: Rule[], ttlSeconds: number): Promise<string> {
    return this.tokens.mint({ subject, rules, ttlSeconds });
  }

  /**
   * Resolves when the request may go on, leaving the caller's identity on the request (and whom the rate
   * limiter counts it against: the verified token subject or app key); throws the
   * 401/403 (or signature) error otherwise. KV lists (`?recurse`, `?keys` on GET) need no permission
   * on the prefix: their answer holds only the keys the caller may read. A recursive delete needs
   * write on the prefix and on every rule below it (a protected subtree cannot be deleted from above).
   */
  async check(req: Request): Promise<void> {
    const signed = isSigned(req.query);
    // Proven from the head before the body was read (`identify`), or proven now.
    const identity = req.identity ?? (signed ? this.signed(req) : await this.bearer(req.headers, req.query));
    req.identity = identity;
    req.caller = signed ? identity.subject : tokenCaller(identity.subject);
    const method = req.method === 'HEAD' ? 'GET' : req.method;
    // A route missing from the rule table (acl.ts) is an operator's, so none is open by being forgotten.
    const need = accessFor(method, req.path, req.rest) ?? unmappedRoute;
    // Routes whose name only the handler knows check it there (need.byHandler).
    if (need.byHandler) return;
    const kvList = need.resource === 'key' && method === 'GET' && (req.query.has('recurse') || req.query.has('keys'));
    if (kvList) return;
    const recursiveDelete = need.resource === 'key' && method === 'DELETE' && req.query.has('recurse');
    if (!(recursiveDelete ? allowedPrefix(identity, need) : allowed(identity, need))) throw denied(need);
  }

  /**
   * The identity a request's head proves, before its body is read: a request without credentials, or with a
   * bearer token that fails, is refused (401) without waiting for a body. Undefined for a signed request: its
   * signature covers the body, so it is judged by `check` once the body is in.
   */
  identify(headers: Map<string, string>, query: URLSearchParams): Promise<Identity> | undefined {
    return isSigned(query) ? undefined : this.bearer(headers, query);
  }

  /**
   * The identity of a bearer token: `Authorization: Bearer`, else `X-Consul-Token`, else `?token=`, else
   * (for the stream upgrade, where browsers cannot set headers) a token carried in a subprotocol. An empty
   * or blank one counts as absent, so it cannot hide the next.
   */
  async bearer(headers: Map<string, string>, query: URLSearchParams, subprotocolToken?: string): Promise<Identity> {
    const authorization = present(headers.get('authorization'));
    const token = present(headers.get('x-consul-token')) ?? present(query.get('token')) ?? present(subprotocolToken);
    try {
      const jwt = authorization !== undefined || token === undefined ? bearerToken(authorization) : token;
      return await this.tokens.verify(jwt);
    } catch (err) {
      if (!(err instanceof AuthError)) throw err;
      throw new RegistryError(tokenErrors[err.kind], { why: err.message, credentials: err.kind, challenge: wwwAuthenticate(err) });
    }
  }

  private signed(req: Request): Identity {
    try {
      const { appKey } = verifySignedRequest(req, this.secrets, this.nonces, Date.now());
      return { subject: appSubject(appKey), rules: this.settings.appKeys[appKey]!.rules };
    } catch (err) {
      if (!(err instanceof SignatureError)) throw err;
      if (err.kind === 'busy') {
        const retryAfterSeconds = Math.max(1, Math.ceil(this.nonces.oldestLeftMs(req.query.get('appKey') ?? '', Date.now()) / 1000));
        throw new RegistryError('signatureBusy', { why: err.message, retryAfterSeconds });
      }
      // The one 401 among them (an unknown app key) names the scheme a caller may authenticate with instead.
      const challenge = err.kind === 'unknown_key' ? { challenge: wwwAuthenticate() } : {};
      throw new RegistryError(signatureErrors[err.kind], { why: err.message, signature: err.kind, ...challenge });
    }
  }
}
