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
 * - Coverage: stringC holds the parameters with non-empty values, as the spec says, so a parameter with an
 *   empty value (`?recurse`, `&recurse=`) would ride along unsigned. A signed request carrying one is
 *   refused (unsigned_parameter): every parameter of an accepted request is covered by its signature.
 *   A flag is sent with a value (`recurse=true`). appKey, nonce, timestamp and signMethod are covered.
 * - Timestamp: the spec's parameters have none, so a nonce alone can only be remembered for a while and
 *   an older capture would be accepted again. A `timestamp` parameter (Unix seconds, the conventions' base
 *   time rule) is required and signed; it must be less than timestampSkewMs from the agent's clock, either
 *   way. Nonces are remembered for twice that (the NonceWindow's windowMs): a request is acceptable for at
 *   most 2 × timestampSkewMs after its first acceptance, so every replay it could see is remembered.
 * - Encoding: names and values are UTF-8 and percent-encoded except the RFC 3986 unreserved set
 *   `A-Z a-z 0-9 - . _ ~`; hex is upper-case and space is `%20` (never `+`). Encoding bytes (not
 *   encodeURIComponent) also encodes `! ' ( ) *` and turns a lone surrogate into U+FFFD as URLSearchParams does.
 * - Order: "ASCII order" is applied to the encoded names, which are pure ASCII. The spec sorts by name only:
 *   a repeated name keeps the order its values were sent in (a stable sort). The server uses a repeated
 *   parameter's first value (the conventions' recommendation), so that order is part of the request's
 *   meaning, and signing it means a reordered request no longer matches its signature. A client that
 *   sorts whole `name=value` pairs agrees with this when it sends repeated values in that order.
 * - stringA upper-cases whatever method it gets (the spec names GET and POST; others are not refused here).
 *   It is "the request method": for a POST carrying `X-HTTP-Method-Override`, the method on the request line,
 *   POST (`sentMethod`), as the spec's "GET or POST" says. A signature over the overridden verb is accepted
 *   too: that one also binds the verb, which the override header alone, like every header, does not.
 *   stringB is the path as it appears on the request line, without the query, neither decoded nor re-encoded.
 * - appKey, nonce, timestamp, signMethod and sign must each appear exactly once with a non-empty value;
 *   otherwise the request is `missing` them (a repeated one is ambiguous, which is no better than absent).
 *   signMethod is matched exactly (case-sensitive).
 * - Order of checks: missing → bad_method → bad_timestamp → bad_nonce → unknown_key → unsigned_parameter →
 *   bad_signature → stale → replayed → busy. The nonce is recorded only after the signature and the
 *   timestamp check out, so unsigned traffic can neither fill the memory nor burn a caller's nonces.
 * - Restarts: a process remembers only the nonces it accepted itself, so a request stamped before the
 *   second its memory began is stale: one captured before a restart cannot be replayed after it. That second
 *   is reckoned back from the wall clock now by the memory's age on the interval clock (ageMs), so a clock
 *   corrected after the start (one that ran an hour ahead) does not put it an hour in the future.
 * - Nonce: at most nonceCharsMax (128) characters, else bad_nonce (checked with the other parameters' forms,
 *   before the app key). The spec gives it no form; a random value needs far fewer.
 * - Memory: each app key has its own share of it, at most entriesMax nonces (the HTTP gate gives each key
 *   nonceEntriesPerKey of the app keys there are), so a caller that fills its share is refused alone. A nonce
 *   is never forgotten before its window has passed (that would let its request be replayed): when a key's
 *   share is full of live nonces its new signed request is refused (busy) until its oldest expire. Only
 *   callers holding a valid secret can fill it. A nonce is kept as a 128-bit keyed digest (HMAC-SHA256 under
 *   a key drawn at start, cut to 16 bytes), so an entry's size does not depend on the nonce's, and two
 *   nonces of one key are taken for each other only with a chance of about 2^-128 per pair.
 */
import { createHash, createHmac, randomBytes, timingSafeEqual } from 'node:crypto';

export type SignMethod = 'MD5' | 'HMACSHA256' | 'HMACSHA512' | 'HMACMD5';

export const signMethods: readonly SignMethod[] = ['MD5', 'HMACSHA256', 'HMACSHA512', 'HMACMD5'];

/** How far a signed request's timestamp may be from the agent's clock, either way: 5 minutes. */
export const timestampSkewMsDefault = 5 * 60_000;
/** How long accepted nonces are remembered by default: twice the timestamp skew (see above). */
export const nonceWindowMsDefault = 2 * timestampSkewMsDefault;
/** How many nonces the agent remembers in all by default, shared among its app keys (nonceEntriesPerKey). */
export const nonceEntriesMaxDefault = 200_000;
/** The fewest nonces one app key may have remembered, however many keys share the memory. */
export const nonceEntriesPerKeyMin = 10_000;
/** The longest nonce taken, in characters (UTF-16 code units). */
export const nonceCharsMax = 128;

/**
 * Each app key's share of the memory when there are `appKeys` of them: the default total divided among them,
 * but never less than nonceEntriesPerKeyMin (the total then grows with the keys: 10,000 for each).
 */
export function nonceEntriesPerKey(appKeys: number): number {
  return Math.max(nonceEntriesPerKeyMin, Math.floor(nonceEntriesMaxDefault / Math.max(1, appKeys)));
}

/** Query parameters that carry the signature itself rather than the request. */
const signatureParams = ['appKey', 'nonce', 'timestamp', 'signMethod', 'sign'] as const;
const contentMd5Name = 'content-md5';

export type SignatureErrorKind =
  | 'missing' | 'bad_method' | 'bad_timestamp' | 'bad_nonce' | 'unknown_key' | 'unsigned_parameter' | 'bad_signature' | 'stale' | 'replayed' | 'busy';

/** An expected failure of verification; the HTTP layer maps each kind to its status. */
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

/**
 * stringC: non-empty parameters other than `sign`, plus content-md5 of a non-empty body, encoded and sorted
 * by name; the values of a repeated name stay in the order sent (Array.prototype.sort is stable).
 */
function canonicalQuery(params: [string, string][], body: Buffer): string {
  const kept = params.filter(([name, value]) => value !== '' && name !== 'sign');
  if (body.length > 0) kept.push([contentMd5Name, md5Hex(body)]);
  const encoded = kept.map(([name, value]) => [percentEncode(name), percentEncode(value)] as const);
  encoded.sort(([a], [b]) => (a < b ? -1 : a > b ? 1 : 0));
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
  /** How long an accepted (appKey, nonce) counts as a replay, in milliseconds. @default 600_000 (nonceWindowMsDefault) */
  windowMs: number;
  /** Most nonces remembered for one app key; when all of its are live, its new ones are refused. See nonceEntriesPerKey. */
  entriesMax: number;
  /**
   * How long this memory has existed (ms, read on the interval clock, which a wall-clock step does not
   * move): a request stamped before the second it began, reckoned back from `nowMs`, may have been accepted
   * by a process whose nonces are gone, so it is refused as stale. @default none (remembers all)
   */
  ageMs?: () => number;
}

/** Remembers accepted nonces for windowMs, each app key's bounded by entriesMax. Time is an input. */
export class NonceWindow {
  readonly windowMs: number;
  readonly entriesMax: number;
  readonly #ageMs: (() => number) | undefined;
  /** Keys the nonces' digests: drawn at start, so no caller can choose nonces whose digests meet. */
  readonly #digestKey = randomBytes(32);
  /** App key → nonce digest → time first accepted; Map order is insertion order, so the oldest come first. */
  readonly #byKey = new Map<string, Map<string, number>>();
  #size = 0;

  constructor(o: NonceWindowOptions) {
    if (!(o.windowMs > 0) || !Number.isInteger(o.entriesMax) || o.entriesMax < 1) {
      throw new Error(`NonceWindow needs windowMs > 0 and an integer entriesMax >= 1, got ${o.windowMs} and ${o.entriesMax}`);
    }
    this.windowMs = o.windowMs;
    this.entriesMax = o.entriesMax;
    this.#ageMs = o.ageMs;
  }

  /** The second (in ms on the wall clock that reads `nowMs`) this memory began: requests stamped before it are older. */
  sinceSecondMs(nowMs: number): number {
    return this.#ageMs === undefined ? 0 : Math.floor((nowMs - this.#ageMs()) / 1000) * 1000;
  }

  /** Nonces currently remembered, of every app key (never more than entriesMax for one). */
  get size(): number {
    return this.#size;
  }

  /**
   * 'replayed' when (appKey, nonce) was seen within the window; 'full' when it was not but every entry of
   * appKey is still live (nothing is recorded then); 'recorded' otherwise.
   */
  record(appKey: string, nonce: string, nowMs: number): 'recorded' | 'replayed' | 'full' {
    let accepted = this.#byKey.get(appKey);
    if (accepted === undefined) this.#byKey.set(appKey, accepted = new Map());
    this.#forgetExpired(accepted, nowMs);
    const digest = createHmac('sha256', this.#digestKey).update(nonce).digest().toString('latin1', 0, 16);
    const acceptedAtMs = accepted.get(digest);
    if (acceptedAtMs !== undefined && nowMs - acceptedAtMs < this.windowMs) return 'replayed';
    if (acceptedAtMs !== undefined) {
      accepted.delete(digest);
      this.#size--;
    }
    if (accepted.size >= this.entriesMax) return 'full';
    accepted.set(digest, nowMs);
    this.#size++;
    return 'recorded';
  }

  /** Milliseconds until appKey's oldest entry expires (0 when it has none): how long a 'full' caller should wait. */
  oldestLeftMs(appKey: string, nowMs: number): number {
    for (const acceptedAtMs of this.#byKey.get(appKey)?.values() ?? []) return Math.max(0, acceptedAtMs + this.windowMs - nowMs);
    return 0;
  }

  /** Drops expired entries from the front; stops at the first live one (a clock step back may leave some behind, which record() re-checks). */
  #forgetExpired(accepted: Map<string, number>, nowMs: number): void {
    for (const [digest, acceptedAtMs] of accepted) {
      if (nowMs - acceptedAtMs < this.windowMs) break;
      accepted.delete(digest);
      this.#size--;
    }
  }
}

/** The single non-empty value of a signature parameter, or undefined when absent, empty or repeated. */
function single(query: URLSearchParams, name: string): string | undefined {
  const values = query.getAll(name);
  return values.length === 1 && values[0] !== '' ? values[0] : undefined;
}

/** Unix seconds as sent: decimal digits only, at most 12 (no sign, exponent or fraction to play with). */
const timestampPattern = /^\d{1,12}$/;

/**
 * Verifies a request carrying appKey/nonce/timestamp/signMethod/sign query parameters; returns the appKey.
 * The timestamp must be less than half the nonce window from `nowMs` (see the header comment).
 */
export function verifySignedRequest(
  req: { method: string; sentMethod?: string | undefined; path: string; query: URLSearchParams; body: Buffer },
  secrets: ReadonlyMap<string, string>,
  nonces: NonceWindow,
  nowMs: number,
): { appKey: string } {
  const [appKey, nonce, timestamp, signMethod, sign] = signatureParams.map((name) => single(req.query, name));
  if (appKey === undefined || nonce === undefined || timestamp === undefined || signMethod === undefined || sign === undefined) {
    const absent = signatureParams.filter((name) => single(req.query, name) === undefined);
    throw new SignatureError('missing', `signature parameters missing, empty or repeated: ${absent.join(', ')}`);
  }
  if (!isSignMethod(signMethod)) {
    throw new SignatureError('bad_method', `signMethod must be one of ${signMethods.join(', ')}`);
  }
  if (!timestampPattern.test(timestamp)) {
    throw new SignatureError('bad_timestamp', 'timestamp must be Unix time in whole seconds');
  }
  if (nonce.length > nonceCharsMax) {
    throw new SignatureError('bad_nonce', `nonce must be at most ${nonceCharsMax} characters, not ${nonce.length}`);
  }
  const secret = secrets.get(appKey);
  if (secret === undefined) throw new SignatureError('unknown_key', 'unknown appKey');
  const unsigned = [...new Set([...req.query].filter(([, value]) => value === '').map(([name]) => name))];
  if (unsigned.length > 0) {
    throw new SignatureError('unsigned_parameter',
      `parameters with an empty value are not covered by the signature; send them with a value: ${unsigned.join(', ')}`);
  }
  if (req.query.has(contentMd5Name)) {
    throw new SignatureError('bad_signature', `${contentMd5Name} is computed from the body and must not be sent`);
  }
  const methods = req.sentMethod === undefined || req.sentMethod === req.method ? [req.method] : [req.sentMethod, req.method];
  const signedAs = (method: string) => hexEquals(signature(signMethod, secret, canonicalString(method, req.path, [...req.query], req.body)), sign);
  if (!methods.some(signedAs)) {
    throw new SignatureError('bad_signature', methods.length === 1 ? 'signature does not match'
      : `signature does not match (stringA tried: ${methods.join(' and ')})`);
  }
  const skewMs = nonces.windowMs / 2;
  if (!(Math.abs(nowMs - Number(timestamp) * 1000) < skewMs)) {
    throw new SignatureError('stale', `timestamp is not within ${Math.round(skewMs / 1000)} s of the server's clock`);
  }
  const sinceSecondMs = nonces.sinceSecondMs(nowMs);
  if (Number(timestamp) * 1000 < sinceSecondMs) {
    throw new SignatureError('stale', `timestamp is older than the agent's memory of nonces (it started at ${new Date(sinceSecondMs).toISOString()}): sign the request again`);
  }
  const recorded = nonces.record(appKey, nonce, nowMs);
  if (recorded === 'replayed') throw new SignatureError('replayed', 'nonce already used');
  if (recorded === 'full') throw new SignatureError('busy', 'too many signed requests in the replay window; retry shortly');
  return { appKey };
}

/**
 * Client side, for tests and tools: the query string to send (without `?`): `params` in their order, then
 * appKey, nonce, timestamp (`timestampSeconds`, else the current time), signMethod, and sign last. A
 * parameter with an empty value is refused: it could not be signed, and the server refuses it.
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
  /** @default the current time */
  timestampSeconds?: number;
}): string {
  const reserved = o.params.find(([name]) => name === contentMd5Name || (signatureParams as readonly string[]).includes(name));
  if (reserved !== undefined) throw new Error(`signRequest: params must not contain ${reserved[0]}; it is added here`);
  const empty = o.params.find(([, value]) => value === '');
  if (empty !== undefined) throw new Error(`signRequest: ${empty[0]} has an empty value, which a signature cannot cover; give it one`);
  if (o.appKey === '' || o.nonce === '') throw new Error('signRequest: appKey and nonce must be non-empty');
  if (o.nonce.length > nonceCharsMax) throw new Error(`signRequest: a nonce has at most ${nonceCharsMax} characters`);
  const timestamp = String(o.timestampSeconds ?? Math.floor(Date.now() / 1000));
  const params: [string, string][] = [
    ...o.params, ['appKey', o.appKey], ['nonce', o.nonce], ['timestamp', timestamp], ['signMethod', o.signMethod],
  ];
  const sign = signature(o.signMethod, o.secret, canonicalString(o.method, o.path, params, o.body));
  const sent: [string, string][] = [...params, ['sign', sign]];
  return sent.map(([name, value]) => `${percentEncode(name)}=${percentEncode(value)}`).join('&');
}
