/**
 * The wire dialects, in one module. `seed` follows http-conventions.md: errors are
 * `{code, message, details}` with the catalogue's status; a failed conditional write is 409/1025.
 * `consul` follows consul-compat.md: plain-text errors with Consul's statuses, `200 false` for a failed
 * acquire/release/CAS, empty 404 for a missing key. Both send the convention and index headers.
 */
import { errorCatalogue, type RegistryError } from '../domain/errors.ts';
import type { IndexInfo, Reply } from './reply.ts';

export type Dialect = 'seed' | 'consul';
export const dialects: readonly Dialect[] = ['seed', 'consul'];

export interface Wire {
  status: number;
  headers: [string, string][];
  body: string | Buffer;
}

const statusText: Record<number, string> = {
  200: 'OK', 201: 'Created', 204: 'No Content', 304: 'Not Modified', 400: 'Bad Request', 401: 'Unauthorized',
  403: 'Forbidden', 404: 'Not Found', 405: 'Method Not Allowed', 409: 'Conflict', 413: 'Payload Too Large',
  415: 'Unsupported Media Type', 428: 'Precondition Required', 500: 'Internal Server Error', 503: 'Service Unavailable',
};

export function statusLine(status: number): string {
  return `${status} ${statusText[status] ?? 'Status'}`;
}

const jsonType: [string, string] = ['Content-Type', 'application/json'];

/** X-Consul-Index is never 0 (clients treat 0 as an error); a single node always knows its leader. */
function indexHeaders(index: IndexInfo | undefined): [string, string][] {
  if (index === undefined) return [];
  const headers: [string, string][] = [
    ['X-Consul-Index', String(Math.max(1, index.index))],
    ['X-Consul-KnownLeader', 'true'],
    ['X-Consul-LastContact', '0'],
  ];
  if (index.consistency !== undefined) headers.push(['X-Consul-Effective-Consistency', index.consistency]);
  return headers;
}

export function renderReply(reply: Reply, dialect: Dialect): Wire {
  switch (reply.t) {
    case 'json':
      return { status: 200, headers: [jsonType, ...indexHeaders(reply.index)], body: reply.json ?? JSON.stringify(reply.value) };
    case 'empty':
      return { status: 200, headers: [], body: '' };
    case 'raw':
      return {
        status: 200,
        headers: [['Content-Type', 'text/plain'], ['X-Content-Type-Options', 'nosniff'], ['Content-Security-Policy', 'sandbox'], ...indexHeaders(reply.index)],
        body: reply.body,
      };
    case 'outcome':
      if (reply.ok || dialect === 'consul') return { status: 200, headers: [jsonType], body: reply.ok ? 'true' : 'false' };
      return renderError(reply.failure!, dialect);
    case 'missing':
      if (dialect === 'consul') return { status: 404, headers: indexHeaders(reply.index), body: '' };
      return withHeaders(renderError(reply.failure, dialect), indexHeaders(reply.index));
    case 'options':
      return { status: 200, headers: [['Allow', ['OPTIONS', ...reply.allow].join(',')]], body: '' };
  }
}

export function renderError(err: RegistryError, dialect: Dialect, extra: [string, string][] = []): Wire {
  const entry = errorCatalogue[err.kind];
  if (dialect === 'consul') {
    const status = err.consul?.status ?? entry.consulStatus;
    return { status, headers: [['Content-Type', 'text/plain; charset=utf-8'], ...extra], body: err.consul?.text ?? err.message };
  }
  const body: { code: number; message: string; details?: Record<string, unknown> } = { code: entry.code, message: err.message };
  if (err.details !== undefined) body.details = err.details;
  return { status: entry.status, headers: [jsonType, ...extra], body: JSON.stringify(body) };
}

function withHeaders(w: Wire, more: [string, string][]): Wire {
  return { ...w, headers: [...w.headers, ...more] };
}
