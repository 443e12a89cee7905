/**
 * What a refused API call was, and how the page words it. An answer that is not 2xx becomes an ApiError
 * carrying the agent's own message and its kind: the token may not, a condition did not hold, or another
 * error. A transaction (`PUT /v1/txn`, which the KV browser uses for keys with `.` or `..` segments)
 * refuses by operation, so a rule's refusal there is a 409 whose operation says "Permission denied",
 * beside the 409 of a stale check-and-set: the operations decide which it is.
 */

/**
 * What a refusal was: the token may not (401 or 403, or an operation of a transaction refused "Permission
 * denied"), a condition that did not hold (a check-and-set or a create of an existing key: 409, the consul
 * dialect's `false`, or a transaction's stale-index operation), or anything else, told by its message.
 */
export type Refusal = 'denied' | 'conflict' | 'other';

export class ApiError extends Error {
  constructor(readonly status: number, message: string, readonly refusal: Refusal = 'other') {
    super(message);
  }
}

/** Why a transaction's operations failed: the seed dialect's `details.errors[].what`, the consul dialect's `Errors[].What`. */
function txnWhats(parsed: unknown): string[] {
  const body = parsed as { details?: { errors?: { what?: unknown }[] }; Errors?: { What?: unknown }[] } | null;
  const whats = body?.details?.errors?.map((e) => e.what) ?? body?.Errors?.map((e) => e.What) ?? [];
  return whats.filter((w): w is string => typeof w === 'string');
}

/** A transaction's operation refused by a rule (Consul's words). */
const deniedWhat = /^permission denied$/i;
/** A transaction's operation whose condition did not hold: a stale check-and-set index, a key that exists. */
const conflictWhat = /(, index is stale|^key ".*" exists|^failed index check)/;

function refusalOf(status: number, whats: string[]): Refusal {
  if (status === 401 || status === 403 || whats.some((w) => deniedWhat.test(w))) return 'denied';
  if (whats.length > 0) return whats.every((w) => conflictWhat.test(w)) ? 'conflict' : 'other';
  return status === 409 ? 'conflict' : 'other';
}

/**
 * An error answer as an ApiError: its message is the seed dialect's `{code, message}` or the consul
 * dialect's plain text, followed by why each operation of a failed transaction failed.
 */
export function failureOf(status: number, body: string): ApiError {
  let message = body;
  let parsed: unknown;
  try {
    parsed = JSON.parse(body);
  } catch { /* a plain-text error (consul dialect) */ }
  const seed = parsed as { message?: unknown; code?: unknown } | undefined;
  const whats = txnWhats(parsed);
  if (typeof seed?.message === 'string') message = seed.code === undefined ? seed.message : `${seed.message} (code ${String(seed.code)})`;
  else if (whats.length > 0) message = 'transaction not applied';
  if (whats.length > 0) message = `${message}: ${whats.join('; ')}`;
  return new ApiError(status, `${status}: ${message.trim()}`, refusalOf(status, whats));
}

export function errorText(err: unknown): string {
  return err instanceof Error ? err.message : String(err);
}

/** What a refused call was doing, for `explained`. */
export interface Attempt {
  /** The outcome as the page words it: `Not saved`, `Not deleted`, `Cannot edit`. */
  outcome: string;
  /** What the token needs and on what: `write` on `app/config`, on `every key under app/`. */
  access: 'read' | 'write';
  on: string;
  /** What a failed condition means here (the key changed since it was read, it exists already). */
  conflict?: string;
}

/**
 * A refused KV call as the page says it: permission denied (the token may not read or write the key, as
 * a 403 or a transaction's "Permission denied" says), the attempt's own words for a failed condition,
 * or the agent's message (the browser's, when the call did not reach the agent).
 */
export function explained(err: unknown, a: Attempt): Error {
  if (!(err instanceof ApiError)) return new Error(`${a.outcome}: ${errorText(err)}`);
  const text = err.refusal === 'denied' ? `${a.outcome}: permission denied: this token may not ${a.access} ${a.on}${a.access === 'write' ? '; nothing was changed' : ''}. (${err.message})`
    : err.refusal === 'conflict' && a.conflict !== undefined ? `${a.outcome}: ${a.conflict} (${err.message})`
      : `${a.outcome}: ${err.message}`;
  return new ApiError(err.status, text, err.refusal);
}
