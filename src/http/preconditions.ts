/**
 * Preconditions on writes: If-Match and If-None-Match (RFC 9110 §13.1.1, §13.1.2, evaluated in the order
 * of §13.2.2), the optimistic locking http-conventions.md "Server constraints" asks of updates, answered
 * 412 when one fails. The seed dialect evaluates them; the consul dialect ignores them, as Consul does.
 *
 * A route with a representation at its URL (Route.preconditions: a KV key) judges them on the version it
 * would replace and makes that judgement part of the write: the version's index becomes the write's
 * compare-and-set index, so the write applies only if nothing changed since the headers were judged. When
 * something did, the compare-and-set fails and changes nothing, and the headers are judged again on what is
 * there now: false, the answer is 412; still true (the new version matches too), the write is tried again
 * on it. Every other write has no representation at its URL that a tag could name: If-Match is false there
 * (412 before its handler runs) and If-None-Match true.
 */
import { RegistryError } from '../domain/errors.ts';
import type { Dialect } from './render.ts';
import type { Request } from './request.ts';

export interface Preconditions {
  /** `*` or the entity tags listed (as sent, `W/` included). */
  ifMatch?: '*' | string[];
  ifNoneMatch?: '*' | string[];
}

/** The version of the resource a write would replace. */
export interface Version {
  /** What names it in the log: the compare-and-set index of a write that must replace exactly it. */
  index: number;
  /** Whether `tag` (a strong entity tag, quotes included) is the ETag of one of its representations. */
  has(tag: string): boolean;
}

/** A write attempt found the version it was conditioned on replaced (its compare-and-set failed). */
export const moved: unique symbol = Symbol('moved');

/**
 * Attempts of one conditional write. Each failed attempt means another write to the resource was applied
 * in the meantime and the headers still held on its result; past this many the answer is 412.
 */
export const preconditionAttemptsMax = 8;

const writeMethods: ReadonlySet<string> = new Set(['PUT', 'POST', 'PATCH', 'DELETE']);

/** The request's preconditions; undefined when it has none, and always in the consul dialect. */
export function preconditionsOf(req: Request, dialect: Dialect): Preconditions | undefined {
  if (dialect === 'consul') return undefined;
  const ifMatch = req.headers.get('if-match');
  const ifNoneMatch = req.headers.get('if-none-match');
  if (ifMatch === undefined && ifNoneMatch === undefined) return undefined;
  const p: Preconditions = {};
  if (ifMatch !== undefined) p.ifMatch = tagList(ifMatch);
  if (ifNoneMatch !== undefined) p.ifNoneMatch = tagList(ifNoneMatch);
  return p;
}

/** An If-Match or If-None-Match value: `*`, or its entity tags as sent. */
export function tagList(value: string): '*' | string[] {
  if (value.trim() === '*') return '*';
  return value.split(',').map((t) => t.trim()).filter((t) => t !== '');
}

/**
 * The write under its preconditions: `write(index)` proposes the write conditioned on the version `index`
 * names (0: no version, the resource must not exist) and resolves its answer, or `moved`.
 */
export async function conditionalWrite<T>(
  p: Preconditions, current: () => Version | undefined, write: (index: number) => Promise<T | typeof moved>,
): Promise<T> {
  for (let attempt = 1; ; attempt++) {
    const version = current();
    const refused = judged(p, version);
    if (refused !== undefined) throw refused;
    const answer = await write(version?.index ?? 0);
    if (answer !== moved) return answer;
    if (attempt >= preconditionAttemptsMax) {
      throw failed(p.ifMatch !== undefined ? 'If-Match' : 'If-None-Match', 'kept-changing', `held, but the resource changed under each of ${attempt} attempts to write it`);
    }
  }
}

/** A write to a route without a representation at its URL: If-Match cannot hold there (412). */
export function checkPreconditionsWithoutRepresentation(req: Request, dialect: Dialect): void {
  if (!writeMethods.has(req.method)) return;
  const p = preconditionsOf(req, dialect);
  const refused = p === undefined ? undefined : judged(p, undefined);
  if (refused !== undefined) throw refused;
}

/** The 412 when the preconditions do not hold on `version` (undefined: the resource has no representation). */
function judged(p: Preconditions, version: Version | undefined): RegistryError | undefined {
  if (p.ifMatch !== undefined) {
    if (version === undefined) return failed('If-Match', 'no-representation', 'names a representation, and the resource has none');
    // Strong comparison: a weak tag never matches.
    if (p.ifMatch !== '*' && !p.ifMatch.some((t) => !t.startsWith('W/') && version.has(t))) {
      return failed('If-Match', 'not-matched', 'names none of the current representations');
    }
  }
  if (p.ifNoneMatch !== undefined && version !== undefined) {
    if (p.ifNoneMatch === '*') return failed('If-None-Match', 'exists', 'is *, and the resource exists');
    // Weak comparison: the opaque tags compared, whatever their W/.
    if (p.ifNoneMatch.some((t) => version.has(t.startsWith('W/') ? t.slice(2) : t))) {
      return failed('If-None-Match', 'matched', 'names a current representation');
    }
  }
  return undefined;
}

function failed(header: 'If-Match' | 'If-None-Match', reason: string, why: string): RegistryError {
  return new RegistryError('preconditionFailed', { header, reason, why });
}
