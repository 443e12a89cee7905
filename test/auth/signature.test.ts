// Goal: the request signature of http-conventions "Authentication › Request signature" (steps 1–6).
// A reference signer written here from the spec's steps, sharing no code with src/auth/signature.ts,
// must agree with signRequest and be accepted by verifySignedRequest for every signMethod, with and
// without a body; every way of breaking a request must fail with the right SignatureError kind. A signed
// request carries a timestamp and no parameter its signature does not cover.
import { createHash, createHmac } from 'node:crypto';
import { describe, expect, test } from 'vitest';
import {
  canonicalString, NonceWindow, nonceEntriesPerKey, signature, SignatureError, signRequest, verifySignedRequest,
  type SignatureErrorKind, type SignMethod,
} from '../../src/auth/signature.ts';

const methods: SignMethod[] = ['MD5', 'HMACSHA256', 'HMACSHA512', 'HMACMD5'];
const secrets = new Map([['k1', 's3cret'], ['k2', 'other secret']]);
/** Nonces are remembered for windowMs; a timestamp is accepted less than skewMs = windowMs / 2 away. */
const windowMs = 10 * 60_000;
const skewMs = windowMs / 2;
const t0 = 1_700_000_000_000;
const ts0 = t0 / 1000;

// ---- Reference implementation, from the spec text only ----

/** Step 3 encoding: UTF-8, upper-case hex, space as %20 (encodeURIComponent plus the RFC 3986 leftovers). */
function refEncode(s: string): string {
  return encodeURIComponent(s).replace(/[!'()*]/g, (c) => `%${c.charCodeAt(0).toString(16).toUpperCase()}`);
}

/** Steps 1–4 and 5: params are every query parameter except sign (appKey, nonce, signMethod included). */
function refSign(method: string, path: string, params: [string, string][], body: Buffer, secret: string, how: SignMethod): string {
  const stringA = `${method.toUpperCase()}\n`;
  const stringB = `${path || '/'}\n`;
  const list = params.filter(([, v]) => v.length > 0).map(([k, v]) => [refEncode(k), refEncode(v)]);
  if (body.length > 0) list.push(['content-md5', createHash('md5').update(body).digest('hex')]);
  // Sorted by name alone, stably: a repeated name's values stay in the order given (they are sent so).
  list.sort(([a], [b]) => (a! < b! ? -1 : a! > b! ? 1 : 0));
  const stringD = stringA + stringB + list.map(([k, v]) => `${k}=${v}`).join('&');
  if (how === 'MD5') return createHash('md5').update(secret + stringD + secret).digest('hex');
  const algorithm = { HMACSHA256: 'sha256', HMACSHA512: 'sha512', HMACMD5: 'md5' }[how];
  return createHmac(algorithm, secret).update(stringD).digest('hex');
}

/** An independent client: the query string it would send, signed by refSign. */
function refQuery(o: { method: string; path: string; params: [string, string][]; body: Buffer; appKey: string; secret: string; nonce: string; how: SignMethod }): URLSearchParams {
  const all: [string, string][] = [...o.params, ['appKey', o.appKey], ['nonce', o.nonce], ['timestamp', String(ts0)], ['signMethod', o.how]];
  return new URLSearchParams([...all, ['sign', refSign(o.method, o.path, all, o.body, o.secret, o.how)]]);
}

// ---- Fixtures ----

const paramSets: Record<string, [string, string][]> = {
  none: [],
  plain: [['zeta', '1'], ['alpha', 'two'], ['Mid', 'x']],
  'spaces, slash, unicode, reserved chars': [['q', 'a b/c'], ['name', 'Zoë 東京 🚀'], ['expr', "it's (a)*b!~+=&?#%"]],
  'repeated name': [['tag', 'b'], ['tag', 'a']],
};
const bodies: Record<string, Buffer> = { 'no body': Buffer.alloc(0), 'JSON body': Buffer.from('{"Key":"é","n":1}') };

function expectKind(fn: () => unknown, kind: SignatureErrorKind): void {
  try {
    fn();
  } catch (e) {
    expect(e).toBeInstanceOf(SignatureError);
    expect((e as SignatureError).kind).toBe(kind);
    return;
  }
  throw new Error(`expected SignatureError ${kind}, nothing was thrown`);
}

function freshNonces(entriesMax = 100_000): NonceWindow {
  return new NonceWindow({ windowMs, entriesMax });
}

/** A good signed POST to play with, stamped `timestampSeconds` (t0 by default). */
function goodRequest(how: SignMethod = 'HMACSHA256', nonce = 'n-1', timestampSeconds = ts0) {
  const body = Buffer.from('{"a":1}');
  const query = new URLSearchParams(signRequest({
    method: 'POST', path: '/v1/kv/x', params: [['q', 'a b'], ['flags', '3']], body, appKey: 'k1', secret: 's3cret', nonce, signMethod: how, timestampSeconds,
  }));
  return { method: 'POST', path: '/v1/kv/x', query, body };
}

function verify(req: ReturnType<typeof goodRequest>, nonces = freshNonces(), nowMs = t0) {
  return verifySignedRequest(req, secrets, nonces, nowMs);
}

// ---- Tests ----

describe('stringD (steps 1–4) against a literal', () => {
  test('method upper-cased, empty path is /, empty values dropped, sign dropped, sorted, %20 and upper-case hex', () => {
    const params: [string, string][] = [['q', 'a b/ü'], ['empty', ''], ['appKey', 'k1'], ['nonce', 'n1'], ['signMethod', 'MD5'], ['sign', 'ff']];
    expect(canonicalString('get', '', params, Buffer.alloc(0)))
      .toBe('GET\n/\nappKey=k1&nonce=n1&q=a%20b%2F%C3%BC&signMethod=MD5');
  });

  test('a repeated name keeps its values in the order sent, whatever they are', () => {
    expect(canonicalString('GET', '/v1/x', [['tag', 'b'], ['a', '1'], ['tag', 'a'], ['tag', 'c']], Buffer.alloc(0)))
      .toBe('GET\n/v1/x\na=1&tag=b&tag=a&tag=c');
  });

  test('a body adds content-md5 (lower-case hex) into the sorted list', () => {
    const body = Buffer.from('hello');
    expect(canonicalString('POST', '/v1/x', [['z', '1'], ['a', '2']], body))
      .toBe('POST\n/v1/x\na=2&content-md5=5d41402abc4b2a76b9719d911017c592&z=1');
  });

  test('signature: MD5 wraps stringD with the secret at both ends; HMACs keyed with the secret; lower-case hex', () => {
    const d = 'GET\n/\na=1';
    expect(signature('MD5', 'S', d)).toBe(createHash('md5').update(`S${d}S`).digest('hex'));
    expect(signature('HMACSHA256', 'S', d)).toBe(createHmac('sha256', 'S').update(d).digest('hex'));
    expect(signature('HMACSHA512', 'S', d)).toMatch(/^[0-9a-f]{128}$/);
    expect(signature('HMACMD5', 'S', d)).toMatch(/^[0-9a-f]{32}$/);
  });
});

describe.each(methods)('%s: module and reference agree', (how) => {
  for (const [bodyName, body] of Object.entries(bodies)) {
    for (const [setName, params] of Object.entries(paramSets)) {
      test(`${bodyName}, ${setName}`, () => {
        const o = { method: 'POST', path: '/v1/kv/a%20b/c', params, body, appKey: 'k1', secret: 's3cret', nonce: `n-${how}` };
        const sent = new URLSearchParams(signRequest({ ...o, signMethod: how, timestampSeconds: ts0 }));
        const ref = refQuery({ ...o, how });

        // signRequest sends every parameter, content-md5 never, sign last, and the reference's signature.
        expect([...sent.keys()].at(-1)).toBe('sign');
        expect(sent.has('content-md5')).toBe(false);
        expect([...sent].slice(0, -1)).toEqual([...ref].slice(0, -1));
        expect(sent.get('sign')).toBe(ref.get('sign'));

        // The verifier accepts the reference client's request.
        expect(verifySignedRequest({ method: 'post', path: o.path, query: ref, body }, secrets, freshNonces(), t0)).toEqual({ appKey: 'k1' });
      });
    }
  }
});

describe('bad_signature', () => {
  test('tampered parameter, added parameter', () => {
    const tampered = goodRequest();
    tampered.query.set('q', 'a c');
    expectKind(() => verify(tampered), 'bad_signature');
    const added = goodRequest();
    added.query.append('admin', 'true');
    expectKind(() => verify(added), 'bad_signature');
  });

  test('the values of a repeated parameter reordered (the first one is the one served)', () => {
    const query = new URLSearchParams(signRequest({
      method: 'PUT', path: '/v1/kv/x', params: [['flags', '1'], ['flags', '2']], body: Buffer.alloc(0), appKey: 'k1', secret: 's3cret', nonce: 'n-r', signMethod: 'HMACSHA256', timestampSeconds: ts0,
    }));
    const sent = { method: 'PUT', path: '/v1/kv/x', query, body: Buffer.alloc(0) };
    expect(verify(sent)).toEqual({ appKey: 'k1' });
    const reordered = new URLSearchParams(query.toString().replace('flags=1&flags=2', 'flags=2&flags=1'));
    expectKind(() => verify({ ...sent, query: reordered }), 'bad_signature');
  });

  test('tampered, removed or added body', () => {
    expectKind(() => verify({ ...goodRequest(), body: Buffer.from('{"a":2}') }), 'bad_signature');
    expectKind(() => verify({ ...goodRequest(), body: Buffer.alloc(0) }), 'bad_signature');
    const empty = Buffer.alloc(0);
    const signedWithout = { method: 'POST', path: '/v1/kv/x', body: empty, query: new URLSearchParams(signRequest({
      method: 'POST', path: '/v1/kv/x', params: [], body: empty, appKey: 'k1', secret: 's3cret', nonce: 'n', signMethod: 'MD5', timestampSeconds: ts0,
    })) };
    expect(verify(signedWithout).appKey).toBe('k1');
    expectKind(() => verify({ ...signedWithout, body: Buffer.from('x') }), 'bad_signature');
  });

  test('tampered method or path', () => {
    expectKind(() => verify({ ...goodRequest(), method: 'PUT' }), 'bad_signature');
    expectKind(() => verify({ ...goodRequest(), path: '/v1/kv/y' }), 'bad_signature');
  });

  test.each(methods)('wrong secret (%s)', (how) => {
    const req = goodRequest(how);
    expectKind(() => verifySignedRequest(req, new Map([['k1', 'not it']]), freshNonces(), t0), 'bad_signature');
  });

  test('signature made for another method, garbage, or truncated', () => {
    for (const sign of ['zz', 'not-hex', 'ab'.repeat(16), 'ab'.repeat(33)]) {
      const req = goodRequest();
      req.query.set('sign', sign);
      expectKind(() => verify(req), 'bad_signature');
    }
    const req = goodRequest('MD5');
    req.query.set('signMethod', 'HMACMD5'); // same length of hex, different algorithm
    expectKind(() => verify(req), 'bad_signature');
  });

  test('content-md5 sent as a query parameter is refused', () => {
    const req = goodRequest();
    req.query.append('content-md5', createHash('md5').update(req.body).digest('hex'));
    expectKind(() => verify(req), 'bad_signature');
  });
});

describe('accepted variations', () => {
  test('sign in upper-case hex is accepted', () => {
    const req = goodRequest();
    req.query.set('sign', req.query.get('sign')!.toUpperCase());
    expect(verify(req).appKey).toBe('k1');
  });
});

describe('coverage: every parameter of an accepted request is signed', () => {
  test.each([['blank', ''], ['recurse', ''], ['q', '']])('an added parameter %s with an empty value → unsigned_parameter', (name, value) => {
    const req = goodRequest();
    req.query.append(name, value);
    expectKind(() => verify(req), 'unsigned_parameter');
  });

  test('a request signed by the spec\'s steps with an empty-valued parameter is refused, not accepted unsigned', () => {
    const body = Buffer.alloc(0);
    const query = refQuery({ method: 'DELETE', path: '/v1/kv/app/x', params: [['recurse', '']], body, appKey: 'k1', secret: 's3cret', nonce: 'n', how: 'HMACSHA256' });
    expectKind(() => verifySignedRequest({ method: 'DELETE', path: '/v1/kv/app/x', query, body }, secrets, freshNonces(), t0), 'unsigned_parameter');
  });

  test('a flag sent with a value is covered: removing or changing it breaks the signature', () => {
    const body = Buffer.alloc(0);
    const query = new URLSearchParams(signRequest({
      method: 'DELETE', path: '/v1/kv/app/x', params: [['recurse', 'true']], body, appKey: 'k1', secret: 's3cret', nonce: 'n', signMethod: 'MD5', timestampSeconds: ts0,
    }));
    const req = { method: 'DELETE', path: '/v1/kv/app/x', query, body };
    expect(verify(req).appKey).toBe('k1');
    const removed = { ...req, query: new URLSearchParams(query) };
    removed.query.delete('recurse');
    expectKind(() => verify(removed), 'bad_signature');
  });

  test('a signed timestamp: changing it breaks the signature', () => {
    const req = goodRequest();
    req.query.set('timestamp', String(ts0 + 1));
    expectKind(() => verify(req), 'bad_signature');
  });
});

describe('missing, unknown_key, bad_method', () => {
  test.each(['appKey', 'nonce', 'timestamp', 'signMethod', 'sign'])('%s absent, empty or repeated → missing', (name) => {
    const absent = goodRequest();
    absent.query.delete(name);
    expectKind(() => verify(absent), 'missing');
    const empty = goodRequest();
    empty.query.set(name, '');
    expectKind(() => verify(empty), 'missing');
    const repeated = goodRequest();
    repeated.query.append(name, repeated.query.get(name)!);
    expectKind(() => verify(repeated), 'missing');
  });

  test('an unsigned request → missing', () => {
    expectKind(() => verify({ method: 'GET', path: '/', query: new URLSearchParams('a=1'), body: Buffer.alloc(0) }), 'missing');
  });

  test.each(['-1', '1.7e9', '1700000000.5', ' 1700000000', '0x10', '1234567890123'])('timestamp %s → bad_timestamp', (ts) => {
    const req = goodRequest();
    req.query.set('timestamp', ts);
    expectKind(() => verify(req), 'bad_timestamp');
  });

  test('unknown appKey', () => {
    const req = goodRequest();
    req.query.set('appKey', 'nobody');
    expectKind(() => verify(req), 'unknown_key');
  });

  test.each(['SHA1', 'md5', 'HMAC-SHA256', 'hmacsha256'])('signMethod %s → bad_method', (how) => {
    const req = goodRequest();
    req.query.set('signMethod', how);
    expectKind(() => verify(req), 'bad_method');
  });
});

describe('timestamp window and replay', () => {
  test('a timestamp less than skewMs away either way is accepted; at skewMs or beyond it is stale', () => {
    expect(verify(goodRequest('MD5', 'a'), freshNonces(), t0 + skewMs - 1).appKey).toBe('k1');
    expect(verify(goodRequest('MD5', 'b'), freshNonces(), t0 - skewMs + 1).appKey).toBe('k1');
    expectKind(() => verify(goodRequest('MD5', 'c'), freshNonces(), t0 + skewMs), 'stale');
    expectKind(() => verify(goodRequest('MD5', 'd'), freshNonces(), t0 - skewMs), 'stale');
    expectKind(() => verify(goodRequest('MD5', 'e'), freshNonces(), t0 + 3_600_000), 'stale');
  });

  test('the same nonce twice → replayed; another nonce is fine', () => {
    const nonces = freshNonces();
    expect(verify(goodRequest('HMACSHA256', 'n-1'), nonces, t0).appKey).toBe('k1');
    expectKind(() => verify(goodRequest('HMACSHA256', 'n-1'), nonces, t0 + 1), 'replayed');
    expect(verify(goodRequest('HMACSHA256', 'n-2'), nonces, t0 + 1).appKey).toBe('k1');
  });

  test('a captured request is refused at every later moment: replayed while remembered, stale after', () => {
    const nonces = freshNonces();
    // First accepted as early as its timestamp allows: the longest span in which it stays acceptable.
    const first = t0 - skewMs + 1;
    expect(verify(goodRequest('HMACSHA256', 'cap'), nonces, first).appKey).toBe('k1');
    for (let now = first + 1; now < t0 + skewMs + 2 * windowMs; now += 7_919) {
      const kind = Math.abs(now - t0) < skewMs ? 'replayed' : 'stale';
      expectKind(() => verify(goodRequest('HMACSHA256', 'cap'), nonces, now), kind);
    }
    expectKind(() => verify(goodRequest('HMACSHA256', 'cap'), nonces, t0 + skewMs - 1), 'replayed');
  });

  test('a request that fails verification (or is stale) does not burn its nonce', () => {
    const nonces = freshNonces();
    const forged = goodRequest('HMACSHA256', 'n-1');
    forged.query.set('q', 'forged');
    expectKind(() => verify(forged, nonces), 'bad_signature');
    expectKind(() => verify(goodRequest('HMACSHA256', 'n-1', ts0 - 3600), nonces), 'stale');
    expect(nonces.size).toBe(0);
    expect(verify(goodRequest('HMACSHA256', 'n-1'), nonces).appKey).toBe('k1');
  });

  test('nonces are per appKey', () => {
    const w = freshNonces();
    expect(w.record('k1', 'n', t0)).toBe('recorded');
    expect(w.record('k2', 'n', t0)).toBe('recorded');
    expect(w.record('k1', 'n', t0)).toBe('replayed');
    // the pair key cannot be forged by moving characters between appKey and nonce
    expect(w.record('k', '1n', t0)).toBe('recorded');
  });

  test('entries are bounded: when all are live a new one is refused (busy), never an old one forgotten', () => {
    const nonces = freshNonces(3);
    for (const n of ['a', 'b', 'c']) expect(verify(goodRequest('MD5', n), nonces, t0).appKey).toBe('k1');
    expectKind(() => verify(goodRequest('MD5', 'd'), nonces, t0 + 1), 'busy');
    expectKind(() => verify(goodRequest('MD5', 'a'), nonces, t0 + 1), 'replayed');
    expect(nonces.size).toBe(3);
    expect(nonces.oldestLeftMs('k1', t0 + 1)).toBe(windowMs - 1);
    // Once the oldest expire there is room again.
    const w = freshNonces(3);
    for (const n of ['a', 'b', 'c']) w.record('k1', n, t0);
    expect(w.record('k1', 'd', t0 + windowMs)).toBe('recorded');
    expect(w.size).toBe(1);
  });

  test('each app key has its own share: one that fills it is refused alone', () => {
    const w = freshNonces(3);
    for (const n of ['a', 'b', 'c']) expect(w.record('k1', n, t0)).toBe('recorded');
    expect(w.record('k1', 'd', t0)).toBe('full');
    expect(w.record('k2', 'a', t0)).toBe('recorded');
    expect(w.size).toBe(4);
    expect(w.oldestLeftMs('k1', t0 + 1)).toBe(windowMs - 1);
    expect(w.oldestLeftMs('k3', t0 + 1)).toBe(0);
  });

  test('a nonce of more than 128 characters is refused (bad_nonce) before the app key is looked at; signRequest will not send one', () => {
    const nonces = freshNonces();
    expect(verify(goodRequest('HMACSHA256', 'n'.repeat(128)), nonces).appKey).toBe('k1');
    const long = goodRequest('HMACSHA256', 'n'.repeat(128));
    long.query.set('nonce', 'n'.repeat(129));
    long.query.set('appKey', 'nobody');
    expectKind(() => verify(long, nonces), 'bad_nonce');
    expect(nonces.size).toBe(1);
    expect(() => goodRequest('HMACSHA256', 'n'.repeat(129))).toThrow(/at most 128 characters/);
  });

  test('shares follow the number of app keys: 200,000 divided among them, at least 10,000 each', () => {
    expect(nonceEntriesPerKey(1)).toBe(200_000);
    expect(nonceEntriesPerKey(4)).toBe(50_000);
    expect(nonceEntriesPerKey(20)).toBe(10_000);
    expect(nonceEntriesPerKey(100)).toBe(10_000);
  });

  test('expired entries are dropped as time passes', () => {
    const w = freshNonces();
    for (let i = 0; i < 10; i++) w.record('k1', `n${i}`, t0 + i);
    w.record('k1', 'late', t0 + windowMs + 4);
    expect(w.size).toBe(10 - 5 + 1);
  });

  test('options are checked', () => {
    expect(() => new NonceWindow({ windowMs: 0, entriesMax: 1 })).toThrow();
    expect(() => new NonceWindow({ windowMs: 1, entriesMax: 0 })).toThrow();
  });
});

describe('signRequest refuses what it adds itself', () => {
  test.each(['appKey', 'nonce', 'timestamp', 'signMethod', 'sign', 'content-md5'])('%s in params', (name) => {
    expect(() => signRequest({
      method: 'GET', path: '/', params: [[name, 'x']], body: Buffer.alloc(0), appKey: 'k1', secret: 's', nonce: 'n', signMethod: 'MD5',
    })).toThrow();
  });

  test('a parameter with an empty value, which no signature covers', () => {
    expect(() => signRequest({
      method: 'GET', path: '/', params: [['raw', '']], body: Buffer.alloc(0), appKey: 'k1', secret: 's', nonce: 'n', signMethod: 'MD5',
    })).toThrow(/empty value/);
  });
});
