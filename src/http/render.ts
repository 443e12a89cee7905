/**
 * The wire dialects, in one module. `seed` follows http-conventions.md: errors are
 * `{code, message, details}` with the catalogue's status; a failed conditional write is 409/1025.
 * `consul` follows consul-compat.md: plain-text errors with Consul's statuses, `200 false` for a failed
 * acquire/release/CAS, empty 404 for a missing key. Both send the convention and index headers.
 */
import type { RegistryError } from '../domain/errors.ts';
import type { Feed, IndexInfo, Reply } from './reply.ts';

export type Dialect = 'seed' | 'consul';
export const dialects: readonly Dialect[] = ['seed', 'consul'];

/**
 * The Consul release the consul dialect reports itself as (`/v1/agent/self` Config.Version, the `consul`
 * service's `version` meta, the members' `build` tag): clients and tools gate features on it (Go's version comparisons, `>= 1.x`
 * checks), and Roster's own version would make them see an ancient Consul. The dialect follows the HTTP API
 * of Consul CE 1.16–1.21 (spec/consul-compat.md); 1.21.4 is the newest release of that line whose KV takes
 * any key, as Roster's does (1.21.5 began refusing keys by their characters). Roster's own version stays in
 * Config.RosterVersion.
 */
export const consulApiVersion = '1.21.4';

/** The server version a dialect reports: Roster's own in the seed dialect, the Consul release followed in the consul one. */
export function reportedVersion(dialect: Dialect, rosterVersion: string): string {
  return dialect === 'consul' ? consulApiVersion : rosterVersion;
}

export interface Wire {
  status: number;
  headers: [string, string][];
  body: string | Buffer;
  /** The body's ETag, when the route kept it with a rendered body it reuses (conditional.ts entityTag). */
  tag?: string;
  /** Bytes taken from the budget of large answers before the body was rendered; the exchange gives them back. */
  reservedBytes?: number;
  /** The body is written as it comes (reply.ts Feed); `body` is empty. */
  feed?: Feed;
  /** An error the request alone caused (RegistryError.callerFault): its request line is not a warning. */
  callerFault?: boolean;
}

const statusText: Record<number, string> = {
  200: 'OK', 201: 'Created', 204: 'No Content', 301: 'Moved Permanently', 302: 'Found', 304: 'Not Modified', 400: 'Bad Request', 401: 'Unauthorized',
  403: 'Forbidden', 404: 'Not Found', 405: 'Method Not Allowed', 406: 'Not Acceptable', 409: 'Conflict', 412: 'Precondition Failed', 413: 'Payload Too Large',
  408: 'Request Timeout', 415: 'Unsupported Media Type', 421: 'Misdirected Request', 426: 'Upgrade Required', 428: 'Precondition Required', 429: 'Too Many Requests', 500: 'Internal Server Error', 503: 'Service Unavailable',
};

export function statusLine(status: number): string {
  return `${status} ${statusText[status] ?? 'Status'}`;
}

const jsonType: [string, string] = ['Content-Type', 'application/json'];

/** What query answers say about the leader: a single node always knows it (itself). */
export interface LeaderView {
  knownLeader: boolean;
  lastContactMs: number;
}

const selfLeader: LeaderView = { knownLeader: true, lastContactMs: 0 };

/** X-Consul-Index is never 0 (clients treat 0 as an error). */
function indexHeaders(index: IndexInfo | undefined, leader: LeaderView): [string, string][] {
  return withIndexHeaders([], index, leader);
}

/** `headers` with the index headers added (none without an index). */
function withIndexHeaders(headers: [string, string][], index: IndexInfo | undefined, leader: LeaderView): [string, string][] {
  if (index === undefined) return headers;
  headers.push(['X-Consul-Index', String(Math.max(1, index.index))]);
  headers.push(['X-Consul-KnownLeader', leader.knownLeader ? 'true' : 'false']);
  headers.push(['X-Consul-LastContact', leader.lastContactMs === 0 ? '0' : String(Math.round(leader.lastContactMs))]);
  if (index.consistency !== undefined) headers.push(['X-Consul-Effective-Consistency', index.consistency]);
  return headers;
}

export function renderReply(reply: Reply, dialect: Dialect, leader: LeaderView = selfLeader): Wire {
  switch (reply.t) {
    case 'json': {
      const [status, headers] = [reply.status ?? 200, withIndexHeaders([jsonType, ...reply.headers ?? []], reply.index, leader)];
      if (reply.cache === true) headers.push(['X-Cache', 'HIT'], ['Age', String(Math.max(0, Math.round(leader.lastContactMs / 1000)))]);
      if (reply.json !== undefined) {
        const w: Wire = { status, headers, body: reply.json };
        if (reply.tag !== undefined) w.tag = reply.tag;
        if (reply.reservedBytes !== undefined) w.reservedBytes = reply.reservedBytes;
        return w;
      }
      return { status, headers, body: stringify(reply.value, reply.pretty === true) };
    }
    case 'empty':
      return { status: 200, headers: reply.warning !== undefined && dialect === 'seed' ? [['X-Roster-Warning', reply.warning]] : [], body: '' };
    case 'raw': {
      const w: Wire = {
        status: 200,
        headers: [['Content-Type', 'text/plain'], ['X-Content-Type-Options', 'nosniff'], ['Content-Security-Policy', 'sandbox'], ...indexHeaders(reply.index, leader)],
        body: reply.body,
      };
      if (reply.tag !== undefined) w.tag = reply.tag;
      return w;
    }
    case 'text':
      return { status: reply.status ?? 200, headers: [['Content-Type', reply.contentType]], body: reply.body };
    case 'outcome':
      if (reply.ok && reply.index !== undefined && dialect === 'seed') {
        return { status: 200, headers: [jsonType, ['X-Consul-Index', String(reply.index)]], body: 'true' };
      }
      if (reply.ok || dialect === 'consul') return { status: 200, headers: [jsonType], body: reply.ok ? 'true' : 'false' };
      return renderError(reply.failure!, dialect);
    case 'missing':
      if (dialect === 'consul') return { status: 404, headers: indexHeaders(reply.index, leader), body: '' };
      return withHeaders(renderError(reply.failure, dialect), indexHeaders(reply.index, leader));
    case 'conflict':
      if (dialect === 'consul') return { status: 409, headers: [jsonType], body: reply.json };
      return renderError(reply.failure, dialect);
    case 'options':
      return { status: 200, headers: [['Allow', reply.allow.join(',')]], body: '' };
    case 'file':
      return {
        status: 200,
        headers: [['Content-Type', reply.contentType], ['Cache-Control', reply.cacheControl], ['X-Content-Type-Options', 'nosniff'], ...(reply.headers ?? [])],
        body: reply.body,
      };
    case 'redirect':
      return { status: reply.status, headers: [['Location', reply.location]], body: '' };
    case 'feed':
      return { status: 200, headers: [['Content-Type', reply.contentType], ['Cache-Control', 'no-store'], ['X-Content-Type-Options', 'nosniff']], body: '', feed: reply.feed };
  }
}

/**
 * The error in the dialect's format; `more`: headers the transport adds (Connection: close). A 401's
 * challenge is the seed dialect's alone: Consul answers those refusals 403 without one.
 */
export function renderError(err: RegistryError, dialect: Dialect, more: [string, string][] = []): Wire {
  if (dialect === 'consul') {
    return { status: err.consulStatus, headers: [['Content-Type', 'text/plain; charset=utf-8'], ...err.headers, ...more], body: err.consulText, ...callerFault(err, err.consulStatus) };
  }
  const body: { code: number; message: string; details?: Record<string, unknown> } = { code: err.code, message: err.message };
  if (err.details !== undefined) body.details = err.details;
  return { status: err.status, headers: [jsonType, ...err.headers, ...err.seedHeaders, ...more], body: JSON.stringify(body), ...callerFault(err, err.status) };
}

/** `callerFault` on a server error's wire that the request alone caused: the one its request line needs. */
function callerFault(err: RegistryError, status: number): { callerFault?: true } {
  return status >= 500 && err.callerFault ? { callerFault: true } : {};
}

/** The answer with `more` headers after its own. */
export function withHeaders(w: Wire, more: [string, string][]): Wire {
  return { ...w, headers: [...w.headers, ...more] };
}

const bigMark = '\u0000big:';

/** JSON with BigInt values written as exact digits (uint64 Flags), optionally indented. */
export function stringify(value: unknown, pretty = false): string {
  let sawBig = false;
  const text = JSON.stringify(value, (_k, v: unknown) => {
    if (typeof v !== 'bigint') return v;
    sawBig = true;
    return `${bigMark}${v.toString()}`;
  }, pretty ? 2 : undefined);
  return sawBig ? text.replace(/"\\u0000big:(-?\d+)"/g, '$1') : text;
}
