/** The request as handlers see it: copied out of uWS synchronously, body complete, path decoded once. */
import { RegistryError } from '../domain/errors.ts';

export interface Request {
  /** Upper-case method. */
  method: string;
  /** The raw (percent-encoded) path. */
  path: string;
  /** The route's trailing parameter, URL-decoded once (a key may contain `/` and `:`). */
  rest: string;
  query: URLSearchParams;
  headers: Map<string, string>;
  body: Buffer;
  /** Aborted when the client goes away (blocking queries stop waiting). */
  signal: AbortSignal;
}

/** Presence-tested flag (`?recurse`, `?keys`, `?raw`, `?consistent`...): on whatever its value. */
export function flag(req: Request, name: string): boolean {
  return req.query.has(name);
}

/** First occurrence wins for repeated parameters (URLSearchParams.get returns the first). */
export function param(req: Request, name: string): string | undefined {
  return req.query.get(name) ?? undefined;
}

export function decodeOnce(raw: string): string {
  try {
    return decodeURIComponent(raw);
  } catch {
    throw new RegistryError('illegalRequest', `malformed percent-encoding in path: ${raw}`, { path: [`Encoding:malformed percent-encoding`] }, { status: 400, text: `invalid URL escape in path` });
  }
}
