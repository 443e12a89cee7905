/**
 * The raw HTTP layer's fuzz cases: malformed request lines and heads and pipelined requests as bytes over one TCP
 * connection, each with what it must get (decided when it is generated), and the check of one exchange.
 */
import fc from 'fast-check';
import { type RawExchange } from './raw-http.ts';

/**
 * What a raw exchange must get, decided when it is generated:
 * * `served`: well-formed requests, pipelined in one packet: one answer each, in order, Roster's (x-request-id), no 5xx;
 * * `refused`: a head Roster refuses (Transfer-Encoding it cannot read, differing Content-Length headers, a path or
 *   query that is not UTF-8): one 400 of Roster's at once;
 * * `uws-answers`: heads uWebSockets.js refuses itself before Roster sees them (platform limit: HTTP/1.0, absolute-form
 *   and `*` targets, LF-only lines, a space in the target, a head past its size limit, a bad Content-Length or
 *   chunked body): an answer at once of its own (400, 431 or 505, an HTML page without x-request-id) and a close;
 * * `uws-drops`: heads uWebSockets.js drops without an answer (platform limit: control characters in header values,
 *   obs-fold, a space before the colon, `_` or non-token characters in a header name, a line without a colon, a
 *   missing Host, more than about 100 headers, empty lines before the request line; the Node.js 20 build answers one empty
 *   line, and a request line without a version, with 505): nothing reaches Roster; uWS closes the connection at its idle
 *   timeout (about 10 s), so the exchange is only watched briefly for a wrong answer.
 */
export type RawKind = 'served' | 'refused' | 'uws-answers' | 'uws-drops';
export interface RawCase {
  kind: RawKind; bytes: Buffer; ids: string[]; writes: boolean[]; label: string;
  /**
   * Platform limit: with differing Content-Length headers uWS takes the first, and when the bytes after that
   * body are a request line it refuses, its own answer (505 and a close) replaces Roster's 400 on the wire.
   */
  uwsMayAnswer?: boolean;
}

export const rawHost = 'Host: localhost\r\n';
export const rawReadPaths = ['/v1/status/leader', '/v1/status/peers', '/v1/kv/fuzz/a', '/v1/kv/fuzz?keys', '/v1/kv/fuzz/?recurse', '/v1/kv/nope',
  '/v1/agent/checks', '/v1/agent/services', '/v1/agent/self', '/v1/session/list', '/v1/session/info/nope', '/v1/catalog/nodes',
  '/v1/catalog/services', '/v1/health/state/any', '/v1/health/service/web', '/v1/kv/fuzz/sp%20ace%25', '/v1/kv/%E2%98%83', '/v1/nope'];

/** A header line a client may legally send (odd but valid: tabs and high bytes in values, empty values, long values). */
export const legalHeader = fc.oneof(
  fc.constantFrom('Accept: */*', 'X-Tab: a\tb', 'X-Empty:', 'User-Agent: fuzz', 'Accept-Encoding: gzip', 'Connection: keep-alive', 'X-Latin: caf\xe9'),
  fc.tuple(fc.stringMatching(/^[A-Za-z][A-Za-z0-9-]{0,20}$/).filter((k) => k.toLowerCase() !== 'request-id'), fc.stringMatching(/^[ -~]{0,40}$/)).map(([k, v]) => `X-${k}: ${v.trim()}`),
  fc.integer({ min: 1, max: 8000 }).map((n) => `X-Long: ${'v'.repeat(n)}`),
);

export let rawSeq = 0;
/** One well-formed request; `write` requests are ones Roster refuses (they change nothing). */
export const servedRequest = fc.tuple(fc.boolean(), fc.constantFrom(...rawReadPaths), fc.array(legalHeader, { maxLength: 4 }), fc.constantFrom('GET', 'OPTIONS'))
  .map(([write, path, headers, method]) => {
    const id = `raw-${(++rawSeq).toString(36)}`;
    const extra = headers.map((h) => `${h}\r\n`).join('');
    if (!write) return { id, write, text: `${method} ${path} HTTP/1.1\r\n${rawHost}x-request-id: ${id}\r\n${extra}\r\n` };
    const body = '{';
    return { id, write, text: `PUT /v1/session/create HTTP/1.1\r\n${rawHost}x-request-id: ${id}\r\n${extra}Content-Type: application/json\r\nContent-Length: ${body.length}\r\n\r\n${body}` };
  });

/**
 * 1–6 requests in one packet. Only the last may be a write: uWebSockets.js closes a connection when a
 * request arrives behind one still waiting for its answer (platform limit), and a write waits for its commit.
 */
export const servedCase: fc.Arbitrary<RawCase> = fc.array(servedRequest, { minLength: 1, maxLength: 6 }).map((rs) => {
  const kept = rs.map((r, i) => (i < rs.length - 1 && r.write ? { ...r, write: false, text: `GET /v1/status/leader HTTP/1.1\r\n${rawHost}x-request-id: ${r.id}\r\n\r\n` } : r));
  return { kind: 'served' as const, bytes: Buffer.from(kept.map((r) => r.text).join(''), 'latin1'), ids: kept.map((r) => r.id), writes: kept.map((r) => r.write), label: `${kept.length} pipelined` };
});

export const refusedCase: fc.Arbitrary<RawCase> = fc.oneof(
  fc.constantFrom('gzip', 'deflate', 'compress', 'identity', 'gzip, chunked', 'chunked, gzip', 'x-custom', 'chunked;q=1').map((te) =>
    ({ label: `Transfer-Encoding ${te}`, text: `PUT /v1/kv/fuzz/te HTTP/1.1\r\n${rawHost}Transfer-Encoding: ${te}\r\n\r\n3\r\nabc\r\n0\r\n\r\n` })),
  fc.tuple(fc.integer({ min: 0, max: 9 }), fc.integer({ min: 0, max: 9 })).filter(([a, b]) => a !== b).map(([a, b]) =>
    ({ label: `Content-Length ${a} and ${b}`, text: `PUT /v1/kv/fuzz/cl HTTP/1.1\r\n${rawHost}Content-Length: ${a}\r\nContent-Length: ${b}\r\n\r\n${'x'.repeat(Math.max(a, b))}`, uwsMayAnswer: true })),
  fc.constantFrom('\xff', '\xfe', '\xc3', '\xc3\x28', '\xe2\x82', '\xed\xa0\x80', '\xef\xbf\xbd', '\x80').map((bad) =>
    ({ label: `raw bytes ${Buffer.from(bad, 'latin1').toString('hex')} in the path`, text: `PUT /v1/kv/fuzz/u${bad} HTTP/1.1\r\n${rawHost}Content-Length: 1\r\n\r\nx` })),
  fc.constantFrom('%FF', '%C3', '%C3%28', '%E2%82', '%ED%A0%80', '%80').map((bad) =>
    ({ label: `${bad} in the query`, text: `GET /v1/kv/fuzz/a?separator=${bad} HTTP/1.1\r\n${rawHost}\r\n` })),
).map((c: { label: string; text: string; uwsMayAnswer?: boolean }) =>
  ({ kind: 'refused' as const, bytes: Buffer.from(c.text, 'latin1'), ids: [], writes: [false], label: c.label, uwsMayAnswer: c.uwsMayAnswer === true }));

export const uwsAnswersCase: fc.Arbitrary<RawCase> = fc.oneof(
  fc.constantFrom(
    ['HTTP/1.0', `GET /v1/status/leader HTTP/1.0\r\n\r\n`],
    ['absolute-form target', `GET http://localhost/v1/status/leader HTTP/1.1\r\n${rawHost}\r\n`],
    ['* target', `OPTIONS * HTTP/1.1\r\n${rawHost}\r\n`],
    ['LF-only lines', `GET /v1/status/leader HTTP/1.1\n${rawHost.trim()}\n\n`],
    ['HTTP/2.0 version', `GET /v1/status/leader HTTP/2.0\r\n${rawHost}\r\n`],
    ['HTTP/1.2 version', `GET /v1/status/leader HTTP/1.2\r\n${rawHost}\r\n`],
    ['HTTP/2 preface', 'PRI * HTTP/2.0\r\n\r\nSM\r\n\r\n'],
    ['space in the target', `GET /v1/kv/a b HTTP/1.1\r\n${rawHost}\r\n`],
    ['control character in the target', `GET /v1/kv/a\x01b HTTP/1.1\r\n${rawHost}\r\n`],
    ['two spaces after the method', `GET  /v1/status/leader HTTP/1.1\r\n${rawHost}\r\n`],
    ['Content-Length abc', `PUT /v1/kv/fuzz/x HTTP/1.1\r\n${rawHost}Content-Length: abc\r\n\r\nx`],
    ['Content-Length -1', `PUT /v1/kv/fuzz/x HTTP/1.1\r\n${rawHost}Content-Length: -1\r\n\r\nx`],
    ['Content-Length +1', `PUT /v1/kv/fuzz/x HTTP/1.1\r\n${rawHost}Content-Length: +1\r\n\r\nx`],
    ['Content-Length past 2^64', `PUT /v1/kv/fuzz/x HTTP/1.1\r\n${rawHost}Content-Length: 99999999999999999999\r\n\r\nx`],
    ['Content-Length with Transfer-Encoding', `PUT /v1/kv/fuzz/x HTTP/1.1\r\n${rawHost}Content-Length: 1\r\nTransfer-Encoding: chunked\r\n\r\n1\r\nx\r\n0\r\n\r\n`],
    ['a chunk size that is not hex', `PUT /v1/kv/fuzz/x HTTP/1.1\r\n${rawHost}Transfer-Encoding: chunked\r\n\r\nzz\r\nabc\r\n0\r\n\r\n`],
  ),
  fc.integer({ min: 200_000, max: 300_000 }).map((n) => ['a target of 200 KB+', `GET /v1/kv/${'a'.repeat(n)} HTTP/1.1\r\n${rawHost}\r\n`]),
  fc.integer({ min: 200_000, max: 300_000 }).map((n) => ['a header of 200 KB+', `GET /v1/status/leader HTTP/1.1\r\n${rawHost}X-Big: ${'a'.repeat(n)}\r\n\r\n`]),
  fc.tuple(fc.constantFrom('GET', 'PUT', 'BREW', '\x00'), fc.string({ unit: 'binary-ascii', maxLength: 30 }).filter((t) => !/^\/[!-~]*$/.test(t)))
    .map(([m, t]) => [`request line ${JSON.stringify(`${m} ${t}`)}`, `${m} ${t} HTTP/1.1\r\n${rawHost}\r\n`]),
).map(([label, text]) => ({ kind: 'uws-answers' as const, bytes: Buffer.from(text!, 'latin1'), ids: [], writes: [false], label: label! }));

export const uwsDropsCase: fc.Arbitrary<RawCase> = fc.oneof(
  fc.integer({ min: 0, max: 31 }).filter((c) => c !== 9 && c !== 10 && c !== 13).map((c) => [`control character ${c} in a header value`, `GET /v1/status/leader HTTP/1.1\r\n${rawHost}X-A: a${String.fromCharCode(c)}b\r\n\r\n`]),
  fc.constantFrom(
    ['obs-fold', `GET /v1/status/leader HTTP/1.1\r\n${rawHost}X-A: a\r\n  b\r\n\r\n`],
    ['a space before the colon', `GET /v1/status/leader HTTP/1.1\r\n${rawHost}X-A : a\r\n\r\n`],
    ['_ in a header name', `GET /v1/status/leader HTTP/1.1\r\n${rawHost}X_A: a\r\n\r\n`],
    ['( in a header name', `GET /v1/status/leader HTTP/1.1\r\n${rawHost}X(A): a\r\n\r\n`],
    ['a header line without a colon', `GET /v1/status/leader HTTP/1.1\r\n${rawHost}Foo\r\n\r\n`],
    ['a bare CR in a header value', `GET /v1/status/leader HTTP/1.1\r\n${rawHost}X-A: a\rb\r\n\r\n`],
    ['no Host header', 'GET /v1/status/leader HTTP/1.1\r\n\r\n'],
    // The Node.js 20 build answers these two with 505; the Node.js 22/24 builds (a newer uWS core) drop them.
    ['no version', `GET /v1/status/leader\r\n${rawHost}\r\n`],
    ['one CRLF before the request line', `\r\nGET /v1/status/leader HTTP/1.1\r\n${rawHost}\r\n`],
    ['two CRLFs before the request line', `\r\n\r\nGET /v1/status/leader HTTP/1.1\r\n${rawHost}\r\n`],
  ),
  fc.integer({ min: 120, max: 400 }).map((n) => [`${n} headers`, `GET /v1/status/leader HTTP/1.1\r\n${rawHost}${Array.from({ length: n }, (_, i) => `X-${i}: v\r\n`).join('')}\r\n`]),
).map(([label, text]) => ({ kind: 'uws-drops' as const, bytes: Buffer.from(text!, 'latin1'), ids: [], writes: [false], label: label! }));

export const rawCases = fc.oneof(
  { weight: 6, arbitrary: servedCase },
  { weight: 3, arbitrary: refusedCase },
  { weight: 3, arbitrary: uwsAnswersCase },
  { weight: 1, arbitrary: uwsDropsCase },
);

/** The longest any exchange may take before it counts as a hang (answers come within milliseconds). */
export const rawAnswerWaitMs = 5_000;
/** How long a dropped head is watched for a wrong answer. */
export const rawDropWatchMs = 100;

export function checkRawExchange(c: RawCase, r: RawExchange): string | undefined {
  const got = r.answers.map((a) => `${a.status} ${a.headers['x-request-id'] ?? '(no x-request-id)'}`).join(', ') || '(none)';
  switch (c.kind) {
    case 'served': {
      if (r.answers.length !== c.ids.length) return `${c.ids.length} requests, ${r.answers.length} answers: ${got}${r.timedOut ? ' (hung)' : ''}`;
      for (const [i, a] of r.answers.entries()) {
        if (a.headers['x-request-id'] !== c.ids[i]) return `answer ${i + 1} is not request ${c.ids[i]}'s: ${got}`;
        if (a.status >= 500) return `5xx: ${got}`;
        if (c.writes[i] && a.status < 400) return `a malformed write accepted: ${got}`;
      }
      return undefined;
    }
    case 'refused': {
      if (r.timedOut && r.answers.length === 0) return 'no answer (hung)';
      const a = r.answers[0];
      if (c.uwsMayAnswer && r.closed && r.answers.every((x) => [400, 505].includes(x.status) && x.headers['x-request-id'] === undefined)) return undefined;
      if (r.answers.length !== 1 || a?.status !== 400 || !a.headers['x-request-id']) return `expected one 400 of Roster's, got ${got}`;
      try { if (typeof JSON.parse(a.body).code !== 'number') return `not the seed error format: ${a.body}`; } catch { return `not JSON: ${a.body}`; }
      return undefined;
    }
    case 'uws-answers':
      // Platform limit: uWebSockets.js answers these itself (no x-request-id; 505 for request lines it cannot parse).
      if (r.timedOut) return `no answer and no close (hung): ${got}`;
      if (r.answers.some((a) => ![400, 431, 505].includes(a.status))) return `unexpected answer ${got}`;
      return undefined;
    case 'uws-drops':
      // Platform limit: uWebSockets.js drops these heads without an answer; nothing must answer them wrongly.
      if (r.answers.some((a) => a.status >= 500 && a.headers['x-request-id'] !== undefined)) return `5xx from Roster: ${got}`;
      return undefined;
  }
}
