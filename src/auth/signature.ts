/**
 * Request signature, the optional feature of http-conventions "Authentication › Request signature".
 * Pure: no I/O, no clock (the caller passes `nowMs`), node:crypto only.
 *
 * Decisions where the spec is silent or loose (each is checked by test/auth/signature.test.ts):
 * - HMAC key: the HMAC methods (HMACSHA256, HMACSHA512, HMACMD5) are keyed with appSecret as UTF-8
 *   bytes ("Key used by the HMAC methods: not shown"). MD5 is md5(appSecret + stringD + appSecret).
 * - Hex: the signature is written in lower-case hex; a received `sign` is compared case-insensitively
 *   and in constant time.
 * - content-md5: lower-case hex MD5 of the body bytes, like the signature. "Has a body" means a body of
 *   at least one byte; an empty body adds nothing. `content-md5` is a reserved name: a request that sends
 *   it as a query parameter is refused (bad_signature) and signRequest refuses to send it.
 * - stringC excludes `sign` itself and every parameter with an empty value (so empty-valued parameters are
 *   not covered by the signature). appKey, nonce and signMethod are ordinary parameters and are covered.
 * - Encoding: names and values are UTF-8 and percent-encoded except the RFC 3986 unreserved set
 *   `A-Z a-z 0-9 - . _ ~`; hex is upper-case and space is `%20` (never `+`). Encoding bytes (not
 *   encodeURIComponent) also encodes `! ' ( ) *` and turns a lone surrogate into U+FFFD as URLSearchParams does.
 * - Order: "ASCII order" is applied to the encoded names, which are pure ASCII; a repeated name is ordered by
 *   its encoded value.
 * - stringA upper-cases whatever method it gets (the spec names GET and POST; others are not refused here).
 *   stringB is the path as it appears on the request line, without the query, neither decoded nor re-encoded.
 * - appKey, nonce, signMethod and sign must each appear exactly once with a non-empty value; otherwise the
 *   request is `missing` them (a repeated one is ambiguous, which is no better than absent).
 *   signMethod is matched exactly (case-sensitive).
 * - Order of checks: missing → bad_method → unknown_key → bad_signature → replayed. The nonce is recorded
 *   only after the signature checks out, so unsigned traffic can neither fill the window nor burn a caller's nonces.
 * - Replay window: a nonce is a replay when the same (appKey, nonce) was accepted less than windowMs ago;
 *   at exactly windowMs it is accepted again (the spec has no timestamp, so an older replay cannot be told apart).
 *   When entriesMax is reached the oldest entry is forgotten to make room: memory stays bounded and service stays
 *   up, at the price that a burst of more than entriesMax signed requests within windowMs shortens the window.
 *   Only callers holding a valid secret can cause that.
 */
import { createHash, createHmac, timingSafeEqual } from 'node:crypto';

export type SignMethod = 'MD5' | 'HMACSHA256' | 'HMACSHA512' | 'HMACMD5';

export const signMethods: readonly SignMethod[] = ['MD5', 'HMACSHA256', 'HMACSHA512', 'HMACMD5'];

/** The remembered span of nonces the spec suggests: 5 minutes. */
export const nonceWindowMsDefault = 5 * 60_000;
/** How many (appKey, nonce) pairs a NonceWindow holds at most by default. */
export const nonceEntriesMaxDefault = 100_000;

/** Query parameters that carry the signature itself rather than the request. */
const signatureParams = ['appKey', 'nonce', 'signMethod', 'sign'] as const;
const contentMd5Name = 'content-md5';

export type SignatureErrorKind = 'missing' | 'unknown_key' | 'bad_method' | 'bad_signature' | 'replayed';

/** An expected failure of verification; the HTTP layer maps every kind to 401. */
export class SignatureError extends Error {
  override readonly name = 'SignatureError';
  constructor(readonly kind: SignatureErrorKind, message: string) {
    super(message);
  }
}

export function isSignMethod(text: string): text is SignMethod {
  return (signMethods as readonly string[]).includes(text);
}

/** Percent-encodes the UTF-8 bytes of `text`, keeping only the RFC 3986 unreserved set; hex upper-case. */
function percentEncode(text: string): string {
  let out = '';
  for (const byte of Buffer.from(text, 'utf8')) {
    const unreserved = (byte >= 0x30 && byte <= 0x39) || (byte >= 0x41 && byte <= 0x5a) || (byte >= 0x61 && byte <= 0x7a)
      || byte === 0x2d || byte === 0x2e || byte === 0x5f || byte === 0x7e;
    out += unreserved ? String.fromCharCode(byte) : `%${byte.toString(16).toUpperCase().padStart(2, '0')}`;
  }
  return out;
}

function md5Hex(data: Buffer | string): string {
  return createHash('md5').update(data).digest('hex');
}

/** stringC: non-empty parameters other than `sign`, plus content-md5 of a non-empty body, encoded and sorted. */
function canonicalQuery(params: [string, string][], body: Buffer): string {
  const kept = params.filter(([name, value]) => value !== '' && name !== 'sign');
  if (body.length > 0) kept.push([contentMd5Name, md5Hex(body)]);
  const encoded = kept.map(([name, value]) => [percentEncode(name), percentEncode(value)] as const);
  encoded.sort(([a, av], [b, bv]) => (a < b ? -1 : a > b ? 1 : av < bv ? -1 : av > bv ? 1 : 0));
  return encoded.map(([name, value]) => `${name}=${value}`).join('&');
}

/** stringD = stringA (method line) + stringB (path line) + stringC (canonical parameters). */
export function canonicalString(method: string, path: string, params: [string, string][], body: Buffer): string {
  return `${method.toUpperCase()}\n${path === '' ? '/' : path}\n${canonicalQuery(params, body)}`;
}

/** The signature of stringD as lower-case hex. */
export function signature(method: SignMethod, secret: string, stringD: string): string {
  switch (method) {
    case 'MD5': return md5Hex(`${secret}${stringD}${secret}`);
    case 'HMACSHA256': return createHmac('sha256', secret).update(stringD).digest('hex');
    case 'HMACSHA512': return createHmac('sha512', secret).update(stringD).digest('hex');
    case 'HMACMD5': return createHmac('md5', secret).update(stringD).digest('hex');
    default: throw new Error(`unknown sign method ${String(method satisfies never)}`);
  }
}

/** Constant-time comparison of our lower-case hex with the received one, case-insensitively. */
function hexEquals(expected: string, received: string): boolean {
  const lower = received.toLowerCase();
  if (lower.length !== expected.length || !/^[0-9a-f]*$/.test(lower)) return false;
  return timingSafeEqual(Buffer.from(expected, 'hex'), Buffer.from(lower, 'hex'));
}

export interface NonceWindowOptions {
  /** How long an accepted (appKey, nonce) counts as a replay, in milliseconds. @default 300_000 (nonceWindowMsDefault) */
  windowMs: number;
  /** Most (appKey, nonce) pairs remembered; the oldest is forgotten first. @default 100_000 (nonceEntriesMaxDefault) */
  entriesMax: number;
}

/** Remembers accepted nonces for windowMs, bounded by entriesMax. Time is an input. */
export class NonceWindow {
  readonly windowMs: number;
  readonly entriesMax: number;
  /** Pair key → time first accepted; Map order is insertion order, so the oldest entries come first. */
  readonly #acceptedAtMs = new Map<string, number>();

  constructor(o: NonceWindowOptions) {
    if (!(o.windowMs > 0) || !Number.isInteger(o.entriesMax) || o.entriesMax < 1) {
      throw new Error(`NonceWindow needs windowMs > 0 and an integer entriesMax >= 1, got ${o.windowMs} and ${o.entriesMax}`);
    }
    this.windowMs = o.windowMs;
    this.entriesMax = o.entriesMax;
  }

  /** Pairs currently remembered (never more than entriesMax). */
  get size(): number {
    return this.#acceptedAtMs.size;
  }

  /** true when (appKey, nonce) was seen within the window (a replay); records it otherwise. */
  seen(appKey: string, nonce: string, nowMs: number): boolean {
    this.#forgetExpired(nowMs);
    // Length-prefixed so that no two (appKey, nonce) pairs share a key.
    const key = `${appKey.length}:${appKey}${nonce}`;
    const acceptedAtMs = this.#acceptedAtMs.get(key);
    if (acceptedAtMs !== undefined && nowMs - acceptedAtMs < this.windowMs) return true;
    this.#acceptedAtMs.delete(key);
    for (const oldest of this.#acceptedAtMs.keys()) {
      if (this.#acceptedAtMs.size < this.entriesMax) break;
      this.#acceptedAtMs.delete(oldest);
    }
    this.#acceptedAtMs.set(key, nowMs);
    return false;
  }

  /** Drops expired entries from the front; stops at the first live one (a clock step back may leave some behind, which seen() re-checks). */
  #forgetExpired(nowMs: number): void {
    for (const [key, acceptedAtMs] of this.#acceptedAtMs) {
      if (nowMs - acceptedAtMs < this.windowMs) break;
      this.#acceptedAtMs.delete(key);
    }
  }
}

/** The single non-empty value of a signature parameter, or undefined when absent, empty or repeated. */
function single(query: URLSearchParams, name: string): string | undefined {
  const values = query.getAll(name);
  return values.length === 1 && values[0] !== '' ? values[0] : undefined;
}

/** Verifies a request carrying appKey/nonce/signMethod/sign query parameters; returns the appKey. */
export function verifySignedRequest(
  req: { method: string; path: string; query: URLSearchParams; body: Buffer },
  secrets: ReadonlyMap<string, string>,
  nonces: NonceWindow,
  nowMs: number,
): { appKey: string } {
  const [appKey, nonce, signMethod, sign] = signatureParams.map((name) => single(req.query, name));
  if (appKey === undefined || nonce === undefined || signMethod === undefined || sign === undefined) {
    const absent = signatureParams.filter((name) => single(req.query, name) === undefined);
    throw new SignatureError('missing', `signature parameters missing, empty or repeated: ${absent.join(', ')}`);
  }
  if (!isSignMethod(signMethod)) {
    throw new SignatureError('bad_method', `signMethod must be one of ${signMethods.join(', ')}`);
  }
  const secret = secrets.get(appKey);
  if (secret === undefined) throw new SignatureError('unknown_key', 'unknown appKey');
  if (req.query.has(contentMd5Name)) {
    throw new SignatureError('bad_signature', `${contentMd5Name} is computed from the body and must not be sent`);
  }
  const expected = signature(signMethod, secret, canonicalString(req.method, req.path, [...req.query], req.body));
  if (!hexEquals(expected, sign)) throw new SignatureError('bad_signature', 'signature does not match');
  if (nonces.seen(appKey, nonce, nowMs)) throw new SignatureError('replayed', 'nonce already used');
  return { appKey };
}

/**
 * Client side, for tests and tools: the query string to send (without `?`): `params` in their order (empty
 * values included: they are sent but not signed), then appKey, nonce, signMethod, and sign last.
 */
export function signRequest(o: {
  method: string;
  path: string;
  params: [string, string][];
  body: Buffer;
  appKey: string;
  secret: string;
  nonce: string;
  signMethod: SignMethod;
}): string {
  const reserved = o.params.find(([name]) => name === contentMd5Name || (signatureParams as readonly string[]).includes(name));
  if (reserved !== undefined) throw new Error(`signRequest: params must not contain ${reserved[0]}; it is added here`);
  if (o.appKey === '' || o.nonce === '') throw new Error('signRequest: appKey and nonce must be non-empty');
  const params: [string, string][] = [...o.params, ['appKey', o.appKey], ['nonce', o.nonce], ['signMethod', o.signMethod]];
  const sign = signature(o.signMethod, o.secret, canonicalString(o.method, o.path, params, o.body));
  const sent: [string, string][] = [...params, ['sign', sign]];
  return sent.map(([name, value]) => `${percentEncode(name)}=${percentEncode(value)}`).join('&');
}
