/** The request as handlers see it: copied out of uWS synchronously, body complete, path decoded once. */
import { allowed, allowedPrefix, allowedSomewhereUnder, type Identity, type Resource } from '../auth/index.ts';
import { RegistryError } from '../domain/errors.ts';
import type { StopSignal } from '../util/stop.ts';

export interface Request {
  /** Upper-case method: the verb the request stands for (POST's `X-HTTP-Method-Override` applied). */
  method: string;
  /** The method on the request line when `X-HTTP-Method-Override` replaced it (always POST); absent otherwise. */
  sentMethod?: string;
  /** The raw (percent-encoded) path. */
  path: string;
  /** The route's trailing parameter, URL-decoded once (a key may contain `/` and `:`). */
  rest: string;
  query: URLSearchParams;
  headers: Map<string, string>;
  body: Buffer;
  /** Aborted when the client goes away (blocking queries stop waiting). */
  signal: StopSignal;
  /**
   * A JSON body must come with `Content-Type: application/json` (seed dialect: 428 code 1028 when
   * the header is missing, 415 when it names another type). Consul ignores the type, so its dialect does too.
   */
  jsonTypeRequired?: boolean;
  /** Who is asking, once authentication is on and has passed (absent: no authentication configured). */
  identity?: Identity;
  /** The verified caller the rate limiter counts this request against (absent: its client address). */
  caller?: string;
  /** The request id: sent back as x-request-id and carried by the request's log lines. */
  id: string;
  /** The pattern of the route that took the request (`/v1/kv/*`, or `unmatched`), once routed. */
  route?: string;
  /** Seconds this request waited in a lock queue (a queued acquire): metrics keep it out of service time. */
  queuedSeconds?: number;
}

/**
 * Which names under `prefix` the caller may read, for a route that filters its list item by item (KV
 * recurse and keys lists, catalog and health lists, as Consul filters them; KV lists also count only
 * those items in their index). Undefined when every name under the prefix is readable: always without
 * authentication, and for a token whose rules allow the whole subtree. `nothingReadable` when no rule can
 * allow a name under it, so a route may skip walking the names.
 */
export function readableUnder(req: Request, resource: Resource, prefix: string): ((name: string) => boolean) | undefined {
  const identity = req.identity;
  if (identity === undefined || allowedPrefix(identity, { resource, name: prefix, access: 'read' })) return undefined;
  if (!allowedSomewhereUnder(identity, resource, prefix, 'read')) return nothingReadable;
  return (name) => allowed(identity, { resource, name, access: 'read' });
}

/** What readableUnder answers for a prefix no rule can open. */
export const nothingReadable = (_name: string): boolean => false;

/** Presence-tested flag (`?recurse`, `?keys`, `?raw`, `?consistent`...): on whatever its value. */
export function flag(req: Request, name: string): boolean {
  return req.query.has(name);
}

/** First occurrence wins for repeated parameters (URLSearchParams.get returns the first). */
export function param(req: Request, name: string): string | undefined {
  return req.query.get(name) ?? undefined;
}

export function decodeOnce(raw: string): string {
  if (!raw.includes('%')) return raw;
  try {
    return decodeURIComponent(raw);
  } catch {
    throw new RegistryError('pathEncodingMalformed', { path: raw });
  }
}
