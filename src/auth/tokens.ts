/**
 * Authentication by bearer token (http-conventions.md "Authentication › Bearer token"): the caller sends
 * `Authorization: Bearer <token>`; the token is an HS256 JWT signed with a shared secret, carrying the
 * subject and its rules. No identity → 401 (1002 missing, 1021 invalid, 1005 expired), always with
 * WWW-Authenticate; an identity whose rules do not permit the request → 403 (1004). A subject beginning
 * with `app:` is refused (invalid): that namespace names signed-request callers (acl.ts appSubject).
 *
 * Tokens are never logged nor echoed: no error message or property here contains one.
 */
import { SignJWT, errors, jwtVerify } from 'jose';
import type { Clock } from '../ports/index.ts';
import { appSubjectPrefix, isAppSubject, parseRules, rulesPerIdentityMax, type Identity, type Rule } from './acl.ts';

/**
 * The auth rows of the error catalogue of http-conventions.md. src/domain/errors.ts already holds 1004
 * as `insufficientPermission`; the rest are here until the HTTP layer wires authentication in.
 * `unknownUser` (1001) is for a caller that resolves user names; a token's subject is not looked up here.
 */
export const authErrorCatalogue = {
  unknownUser: { code: 1001, status: 401, message: 'unknown user' },
  missing: { code: 1002, status: 401, message: 'user not logged in' },
  forbidden: { code: 1004, status: 403, message: 'insufficient permission' },
  expired: { code: 1005, status: 401, message: 'token expired' },
  invalid: { code: 1021, status: 401, message: 'invalid token' },
} as const;

export type AuthErrorKind = 'missing' | 'invalid' | 'expired';

/**
 * No acceptable identity: always a 401. The message is the catalogue's, or a reason that says more
 * (it also goes into WWW-Authenticate's error_description, so it holds no `"` nor backslash); never the token.
 */
export class AuthError extends Error {
  override readonly name = 'AuthError';
  readonly code: number;
  readonly status = 401;

  constructor(readonly kind: AuthErrorKind, reason?: string) {
    super(reason ?? authErrorCatalogue[kind].message);
    this.code = authErrorCatalogue[kind].code;
  }
}

/** Bytes in the shared secret, at least (RFC 7518 §3.2: an HS256 key is at least as long as the hash). */
export const secretBytesMin = 32;
/** Characters in a bearer token; longer ones are refused before any parsing. */
export const tokenCharsMax = 16 * 1024;
/** @default issuer of minted tokens and the only one verify accepts */
export const issuerDefault = 'roster';
/** @default seconds of clock difference tolerated on `exp`, `nbf` and `iat` (Consul's JWT auth method leeway) */
export const clockSkewSecondsDefault = 60;
/** @default seconds a token is accepted after its `iat`, whatever its `exp` says (Consul's ACL token cap: 24h) */
export const tokenLifetimeSecondsMaxDefault = 24 * 60 * 60;

export interface TokenAuthorityOptions {
  /** HMAC key, at least `secretBytesMin` bytes of UTF-8. */
  secret: string;
  /** @default 'roster' */
  issuer?: string;
  /** Clock difference tolerated on `exp`, `nbf` and `iat`. @default 60 (clockSkewSecondsDefault) */
  clockSkewSeconds?: number;
  /**
   * Longest a token is accepted after its `iat` (jose's maxTokenAge): a token is refused as expired once
   * `iat` + this (+ skew) has passed even when its `exp` is later, and mint refuses a longer ttl.
   * @default 86400 (tokenLifetimeSecondsMaxDefault)
   */
  tokenLifetimeSecondsMax?: number;
  /**
   * Audiences accepted in `aud` (any one matching suffices); minted tokens carry the first. Absent or
   * empty: a token carrying any `aud` is refused, since it was issued for some other service.
   * @default []
   */
  audiences?: readonly string[];
  /** @default the system clock */
  clock?: Pick<Clock, 'nowMs'>;
}

/**
 * Why a token subject beginning with `app:` is refused, at minting and at verification: that namespace names
 * signed-request callers (acl.ts appSubject), and a session owned by one must not be usable by a token.
 */
export const appSubjectRefusal = `invalid token: its subject must not begin with ${appSubjectPrefix}, which names signed-request callers (app keys)`;

const systemClock: Pick<Clock, 'nowMs'> = { nowMs: () => Date.now() };

export class TokenAuthority {
  private readonly key: Uint8Array;
  private readonly issuer: string;
  private readonly clockSkewSeconds: number;
  private readonly tokenLifetimeSecondsMax: number;
  private readonly audiences: readonly string[];
  private readonly clock: Pick<Clock, 'nowMs'>;

  constructor(o: TokenAuthorityOptions) {
    this.key = new TextEncoder().encode(o.secret);
    if (this.key.byteLength < secretBytesMin) {
      throw new RangeError(`token secret must be at least ${secretBytesMin} bytes`);
    }
    this.issuer = o.issuer ?? issuerDefault;
    this.clockSkewSeconds = o.clockSkewSeconds ?? clockSkewSecondsDefault;
    if (!Number.isFinite(this.clockSkewSeconds) || this.clockSkewSeconds < 0) {
      throw new RangeError('clockSkewSeconds must be a non-negative number');
    }
    this.tokenLifetimeSecondsMax = o.tokenLifetimeSecondsMax ?? tokenLifetimeSecondsMaxDefault;
    if (!Number.isInteger(this.tokenLifetimeSecondsMax) || this.tokenLifetimeSecondsMax < 1) {
      throw new RangeError('tokenLifetimeSecondsMax must be a positive whole number of seconds');
    }
    this.audiences = [...(o.audiences ?? [])];
    if (this.audiences.some((a) => typeof a !== 'string' || a === '')) throw new RangeError('audiences must be non-empty strings');
    this.clock = o.clock ?? systemClock;
  }

  /**
   * A token for `subject` with `rules`, valid `ttlSeconds` from now (a negative ttl mints an expired one),
   * for the first configured audience if there is one. A ttl above tokenLifetimeSecondsMax is refused:
   * verify would stop accepting the token before its `exp`.
   */
  async mint(o: { subject: string; rules: Rule[]; ttlSeconds: number }): Promise<string> {
    if (o.subject === '') throw new RangeError('token subject must not be empty');
    if (isAppSubject(o.subject)) throw new RangeError(appSubjectRefusal);
    if (!Number.isFinite(o.ttlSeconds)) throw new RangeError('ttlSeconds must be finite');
    if (o.ttlSeconds > this.tokenLifetimeSecondsMax) {
      throw new RangeError(`ttlSeconds must be at most the token lifetime limit, ${this.tokenLifetimeSecondsMax} s`);
    }
    const rules = parseRules(o.rules);
    if (rules === undefined) throw new RangeError(`rules must be at most ${rulesPerIdentityMax} well-formed rules`);
    const iat = Math.floor(this.clock.nowMs() / 1000);
    const jwt = new SignJWT({ rules })
      .setProtectedHeader({ alg: 'HS256', typ: 'JWT' })
      .setIssuer(this.issuer)
      .setSubject(o.subject)
      .setIssuedAt(iat)
      .setExpirationTime(iat + Math.trunc(o.ttlSeconds));
    if (this.audiences.length > 0) jwt.setAudience(this.audiences[0]!);
    return jwt.sign(this.key);
  }

  /** The identity a token proves. Throws AuthError `expired` or `invalid`; nothing else for bad input. */
  async verify(token: string): Promise<Identity> {
    if (typeof token !== 'string' || token === '' || token.length > tokenCharsMax) throw new AuthError('invalid');
    let payload: Record<string, unknown>;
    try {
      // jose checks exp and nbf against the clock, and with maxTokenAge also an iat in the future
      // (beyond the tolerance: invalid) or older than the lifetime limit (expired).
      ({ payload } = await jwtVerify(token, this.key, {
        algorithms: ['HS256'],
        issuer: this.issuer,
        requiredClaims: ['sub', 'exp', 'iat'],
        clockTolerance: this.clockSkewSeconds,
        maxTokenAge: this.tokenLifetimeSecondsMax,
        ...(this.audiences.length > 0 ? { audience: [...this.audiences] } : {}),
        currentDate: new Date(this.clock.nowMs()),
      }));
    } catch (err) {
      // The jose error is dropped, not attached as `cause`: it may carry the claims.
      if (err instanceof errors.JWTExpired) throw new AuthError('expired');
      throw new AuthError('invalid');
    }
    const rules = parseRules(payload.rules);
    if (typeof payload.sub !== 'string' || payload.sub === '' || rules === undefined) throw new AuthError('invalid');
    if (isAppSubject(payload.sub)) throw new AuthError('invalid', appSubjectRefusal);
    // jose has no option for "no audience": without configured audiences a token naming any is refused.
    if (this.audiences.length === 0 && payload.aud !== undefined) throw new AuthError('invalid');
    const lastSecond = Math.min(payload.exp as number, (payload.iat as number) + this.tokenLifetimeSecondsMax);
    const expiresAtMs = (lastSecond + this.clockSkewSeconds) * 1000;
    return { subject: payload.sub, rules, expiresAtMs };
  }
}

/**
 * The token of an `Authorization` header value. No header → `missing`; another scheme, or Bearer with
 * nothing after it → `invalid` (the caller sent credentials we cannot accept).
 */
export function bearerToken(authorization: string | undefined): string {
  // An empty or blank header is no header: it neither fails the request nor hides another credential.
  if (authorization === undefined || authorization.trim() === '') throw new AuthError('missing');
  const match = /^Bearer[ ]+([A-Za-z0-9\-._~+/]+=*)[ ]*$/i.exec(authorization);
  if (match === null) throw new AuthError('invalid');
  return match[1] as string;
}

/**
 * The WWW-Authenticate value for a 401 (RFC 6750 §3), sent with every 401 (RFC 9110 §15.5.2; the
 * conventions ask it when the request carried an Authorization header). Without a token error (none was
 * sent, or the 401 refuses a signed request's app key) the challenge names the scheme and realm only.
 */
export function wwwAuthenticate(err?: AuthError, realm = issuerDefault): string {
  if (err === undefined || err.kind === 'missing') return `Bearer realm="${realm}"`;
  return `Bearer realm="${realm}", error="invalid_token", error_description="${err.message}"`;
}
