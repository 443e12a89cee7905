/**
 * The fuzz suite's building blocks: malformed bodies and values, paths, query strings and headers (fast-check
 * arbitraries), and the ids the agent is seeded with.
 */
import fc from 'fast-check';

/** Bodies stay well under the 512 KiB limit (413 is not what this file looks at). */
export const bodyBytesMax = 100_000;
/** The seeded session, set once the agent is up (the request generators read it lazily). */
export const seeded = { sessionId: '' };
export const seededCheckIds = ['service:web', 'seed-ttl'];
export const seededServiceIds = ['web'];

// ---------------------------------------------------------------- requests

export interface FuzzRequest {
  family: string;
  /** The method put on the wire (POST when the verb travels in X-HTTP-Method-Override). */
  method: string;
  path: string;
  query: string;
  headers: Record<string, string>;
  body?: string | Uint8Array;
  /** True when the server must refuse it (4xx): a write that cannot be valid. */
  refuse: boolean;
}

export type Pair = [name: string, value: string | null];

/** encodeURIComponent after replacing lone surrogates (which it cannot encode) with U+FFFD. */
export const enc = (s: string) => encodeURIComponent(Buffer.from(s, 'utf8').toString('utf8'));

/** Segments that the URL parser would resolve (`.`, `..`, `%2e`) would move the request to another path. */
export function safeSegment(s: string): string {
  const dots = s.replace(/%2e/gi, '.');
  return dots === '.' || dots === '..' ? `x${s}` : s;
}

export const anyText = fc.oneof(
  fc.string({ maxLength: 24 }),
  fc.string({ unit: 'grapheme', maxLength: 12 }),
  fc.string({ unit: 'binary', maxLength: 12 }),
  fc.constantFrom('', 'abc', '-1', '1e3', '0x10', ' 1', '1 ', '1.5', '+1', 'NaN', 'null', 'true', '%zz', '\u0000', '☃',
    '18446744073709551616', '99999999999999999999999', '1s', '-5s', '10m', '1h', 'passing', 'node1', 'web', 'fuzz/a'),
);

/** Text that is never an unsigned 64-bit integer. */
export const notUint64 = fc.oneof(
  anyText.filter((s) => !/^\d+$/.test(s)),
  fc.constantFrom('18446744073709551616', '99999999999999999999999', '-0', '-1', '1.0', '1e3', ' 7', '7 '),
);

/** A long string, ≤ bodyBytesMax bytes once encoded. */
export const hugeText = fc.tuple(fc.string({ unit: 'grapheme', minLength: 1, maxLength: 4 }), fc.integer({ min: 0, max: bodyBytesMax }))
  .map(([unit, n]) => {
    let s = unit.repeat(Math.ceil(n / unit.length)).slice(0, n);
    while (Buffer.byteLength(s) > bodyBytesMax - 64) s = s.slice(0, Math.floor(s.length / 2));
    return s;
  });

export const deepJson = fc.tuple(fc.integer({ min: 1, max: 5000 }), fc.constantFrom('[', '{"a":'))
  .map(([depth, open]) => open.repeat(depth) + (open === '[' ? ']' : '1}').repeat(depth));

/** Deep nesting as a JS value, for putting inside an otherwise meaningful field. */
export const deepValue = fc.integer({ min: 1, max: 2000 }).map((depth) => {
  let v: unknown = 'x';
  for (let i = 0; i < depth; i++) v = i % 2 === 0 ? [v] : { a: v };
  return v;
});

/** Any JSON-ish value, for fields whose value does not matter. */
export const junkValue: fc.Arbitrary<unknown> = fc.oneof(
  { weight: 4, arbitrary: fc.jsonValue({ maxDepth: 3 }) },
  { weight: 2, arbitrary: anyText },
  { weight: 1, arbitrary: hugeText },
  { weight: 1, arbitrary: deepValue },
);

/** A value that is not a string. */
export const nonString = fc.oneof(fc.integer(), fc.double({ noNaN: true, noDefaultInfinity: true }), fc.boolean(), fc.array(fc.jsonValue({ maxDepth: 2 }), { maxLength: 3 }),
  fc.dictionary(fc.string({ maxLength: 5 }), fc.jsonValue({ maxDepth: 2 }), { maxKeys: 3 }), deepValue);

/** Bytes that are not JSON. */
export const nonJsonBytes: fc.Arbitrary<string | Uint8Array> = fc.oneof(
  fc.uint8Array({ minLength: 1, maxLength: 2000 }),
  fc.string({ unit: 'binary', minLength: 1, maxLength: 200 }),
  fc.constantFrom('{', '{"Name":', '[1,', 'nul', '{"a":1,}', "{'Name':'x'}", '\u0000', '}{', '{"Name": "x"} trailing', '\xff\xfe'),
  hugeText.map((s) => `{"Name":"${s}`),
).filter((b) => { try { JSON.parse(Buffer.from(b).toString('utf8')); return false; } catch { return true; } });

/** A JSON body that is not an object (null left out: it means "no body" to the session endpoint). */
export const nonObjectJson = fc.oneof(fc.integer(), fc.boolean(), anyText, fc.array(fc.jsonValue({ maxDepth: 2 }), { maxLength: 4 }), deepJson.filter((s) => s.startsWith('[')))
  .map((v) => (typeof v === 'string' && v.startsWith('[') ? v : JSON.stringify(v)));

/** Any body at all: JSON, junk bytes, huge, deep, empty. */
export const anyBody: fc.Arbitrary<string | Uint8Array | undefined> = fc.oneof(
  fc.constant(undefined), fc.constant(''), fc.jsonValue({ maxDepth: 3 }).map((v) => JSON.stringify(v)), nonJsonBytes, hugeText, deepJson,
);

/** Extra object fields with junk values; unknown names start with "zz" so they never alias a real field. */
export function extraFields(names: string[]): fc.Arbitrary<Record<string, unknown>> {
  const name = fc.oneof(fc.constantFrom(...names), fc.string({ maxLength: 10 }).map((s) => `zz${s}`));
  return fc.array(fc.tuple(name, junkValue), { maxLength: 4 }).map((kv) => Object.fromEntries(kv));
}

/** A poison object (its fields make the body invalid) merged over junk extras whose names never collide with it. */
export function withExtras(poison: fc.Arbitrary<Record<string, unknown>>, extraNames: string[], norm: (k: string) => string = (k) => k.toLowerCase()) {
  return fc.tuple(poison, extraFields(extraNames)).map(([p, extra]) => {
    const taken = new Set(Object.keys(p).map(norm));
    const out: Record<string, unknown> = { ...p };
    for (const [k, v] of Object.entries(extra)) if (!taken.has(norm(k))) out[k] = v;
    return out;
  });
}

export const json = (a: fc.Arbitrary<unknown>) => a.map((v) => JSON.stringify(v));

// ---------------------------------------------------------------- paths and queries

/** One path segment: percent-encoded text, sometimes with a broken escape. */
export const segment = fc.tuple(anyText, fc.constantFrom('', '', '', '%zz', '%', '%4', '%%', '%C3', '%u00e9'), fc.boolean())
  .map(([s, broken, front]) => safeSegment(front ? broken + enc(s) : enc(s) + broken));

/** A key or id in the path: segments joined by "/" (or by an encoded %2F). */
export const pathTail = fc.oneof(
  { weight: 1, arbitrary: fc.constant('') },
  { weight: 5, arbitrary: fc.array(segment, { minLength: 1, maxLength: 4 }).chain((segs) => fc.constantFrom('/', '%2F', '%2f').map((sep) => segs.join(sep))) },
  { weight: 2, arbitrary: fc.constantFrom('fuzz/a', 'fuzz/locked', 'fuzz', 'fuzz/', 'web', 'node1', 'service:web', 'seed-ttl', 'gossipHealth', 'serfHealth') },
);

export const queryNames = ['index', 'wait', 'consistent', 'stale', 'leader', 'max_stale', 'dc', 'recurse', 'keys', 'raw', 'separator', 'seperator',
  'flags', 'cas', 'acquire', 'release', 'filter', 'tag', 'passing', 'near', 'node-meta', 'note', 'replace-existing-checks', 'segment',
  'wan', 'pretty', 'cached', 'token', 'ns', 'q', 'sort', 'fields', 'count', 'page', 'perPage', 'start', 'limit'];

/** Filter expressions: mostly broken, some well formed on unknown selectors or odd values. */
export const filterText = fc.oneof(
  anyText,
  hugeText.map((s) => s.slice(0, 4000)),
  fc.constantFrom('Status == "passing"', 'Status ==', '(', ')', '"unterminated', 'Service.Tags contains "x"', 'not', 'Name matches "["',
    'Meta.x == "y" and (', 'Node in ServiceTags', 'Unknown == 1', 'ServiceTags is empty', 'Checks.Status == passing',
    'Name == "a" or not Name != "b"', 'Weights.Passing > 1e999', 'Port == -0x1', '\\', 'a == "\\u00"'),
  fc.integer({ min: 1, max: 3000 }).map((n) => '('.repeat(n) + 'Name == "x"' + ')'.repeat(n)),
  fc.integer({ min: 1, max: 3000 }).map((n) => 'not '.repeat(n) + 'Name == "x"'),
);

export const pairValue = fc.oneof(fc.constant(null), anyText, filterText);
export const pair: fc.Arbitrary<Pair> = fc.tuple(fc.oneof({ weight: 4, arbitrary: fc.constantFrom(...queryNames) }, { weight: 1, arbitrary: anyText }), pairValue);

export function renderPairs(pairs: Pair[], rawJunk: string[] = []): string {
  const parts = pairs.map(([k, v]) => (v === null ? enc(k) : `${enc(k)}=${enc(v)}`));
  return [...parts, ...rawJunk].filter((p) => p !== '').join('&');
}

/** Raw, unencoded query junk: broken escapes, stray separators. */
export const rawQueryJunk = fc.array(fc.constantFrom('%zz', '=', '&&', 'a=%', '%=%', '+', 'x=%E0%A4%A', '==1', 'dc1'), { maxLength: 2 });

/**
 * Keeps a query harmless to the harness: a different `dc` answers 503 by design (not overload), and a numeric `index`
 * with the default wait would block for minutes, so those get a first `dc=dc1` or `wait=5ms` (the first value wins).
 */
/**
 * uWebSockets.js refuses request heads beyond its own limit (tens of KB) before Roster sees them, with
 * its own 431/505 answer (a known limit, in the README): queries are kept well under it here.
 */
export const queryCharsMax = 16_000;

export function headSized(query: string): string {
  if (query.length <= queryCharsMax) return query;
  const cut = query.slice(0, queryCharsMax);
  // Do not leave a broken %XX escape at the cut.
  return cut.replace(/%[0-9A-Fa-f]?$/, '');
}

export function tame(query: string): string {
  const q = new URLSearchParams(query);
  const prefix: string[] = [];
  const dc = q.get('dc');
  if (dc !== null && dc !== '' && dc !== 'dc1') prefix.push('dc=dc1');
  const index = q.get('index');
  if (index !== null && /^\d+$/.test(index) && !/^0+$/.test(index)) prefix.push('wait=5ms');
  return [...prefix, query].filter((p) => p !== '').join('&');
}

export const readQuery = fc.tuple(fc.array(pair, { maxLength: 5 }), rawQueryJunk).map(([pairs, raw]) => tame(renderPairs(pairs, raw)));

/** Extra query pairs after the poison ones; names in `excluded` (decoded) are left out. */
export function extraQuery(excluded: string[]): fc.Arbitrary<string> {
  return fc.array(pair, { maxLength: 4 }).map((pairs) => renderPairs(pairs.filter(([k]) => !excluded.includes(k))));
}

// ---------------------------------------------------------------- headers

export const printable = fc.string({ unit: fc.integer({ min: 0x21, max: 0x7e }).map((c) => String.fromCharCode(c)), maxLength: 40 });
export const contentType = fc.oneof(printable, fc.constantFrom('application/json', 'text/plain', 'application/octet-stream',
  'application/json; charset=utf-16', 'multipart/form-data; boundary=x', 'application/x-www-form-urlencoded', '*/*', 'application/json;;'));
export const apiVersion = fc.oneof(printable, fc.constantFrom('20261122', '2026-11-22', 'v2', '00000000', '99999999', '1', ''));
export const ifNoneMatch = fc.oneof(printable, fc.constantFrom('*', '"x"', 'W/"x"', '"', ',', 'W/'));
export const overrideJunk = fc.oneof(printable, fc.constantFrom('GET', 'PUT', 'DELETE', 'PATCH', 'put', ' delete ', 'HEAD', 'OPTIONS', 'TRACE', ''));

/** Junk convention headers; the method override is added by `send` for writes. */
export function junkHeaders(withOverride: boolean): fc.Arbitrary<Record<string, string>> {
  // Mostly absent: a junk x-api-version is refused before routing, which would hide the handlers from most runs.
  const sometimes = (a: fc.Arbitrary<string>, weight: number) => fc.oneof({ weight, arbitrary: fc.constant('') }, { weight: 1, arbitrary: a });
  return fc.record({
    // Mostly JSON, so the seed dialect's type rules (415/428) leave most bodies to the parsers.
    'content-type': fc.oneof({ weight: 3, arbitrary: fc.constant('application/json') }, { weight: 1, arbitrary: contentType }, { weight: 1, arbitrary: fc.constant('') }), 'x-api-version': sometimes(apiVersion, 5), 'if-none-match': sometimes(ifNoneMatch, 2),
    accept: sometimes(printable, 3), 'x-request-id': sometimes(printable, 3), 'x-http-method-override': withOverride ? sometimes(overrideJunk, 2) : fc.constant(''),
  }).map((h) => Object.fromEntries(Object.entries(h).filter(([, v]) => v.trim() !== '')));
}

/** A write sent as its verb, or as POST with the verb in X-HTTP-Method-Override (any case, padded). */
export function verb(method: 'PUT' | 'DELETE'): fc.Arbitrary<{ method: string; override?: string }> {
  return fc.oneof(
    { weight: 3, arbitrary: fc.constant({ method }) },
    { weight: 1, arbitrary: fc.constantFrom(method, method.toLowerCase(), ` ${method} `).map((o) => ({ method: 'POST', override: o })) },
  );
}
