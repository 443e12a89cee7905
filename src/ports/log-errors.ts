/**
 * The errors a log gives its callers, told apart by `code`: an append refused for now (overloaded,
 * unavailable), a log failed for good, and data on disk damaged so that open() refuses. Callers test
 * them with the `is*` guards; the HTTP front end maps each to its answer.
 */

/** `code` of the error an append gets when the queue of appends waiting for a commit is full. */
export const logOverloadedCode = 'LOG_OVERLOADED' as const;

/** `code` of the error an append gets while the log cannot store it for now (the WAL: its disk is full). */
export const logUnavailableCode = 'LOG_UNAVAILABLE' as const;

/** `code` of the error appends get once the log has failed for good (a write or fsync error other than a full disk). */
export const logFailedCode = 'LOG_FAILED' as const;

/**
 * `code` of the error a proposal gets when its write was not confirmed (committed and applied here) within
 * the agent's write timeout: the log may still take it, so its outcome is unknown.
 */
export const writeTimedOutCode = 'WRITE_TIMED_OUT' as const;

/**
 * `code` of the error a proposal gets when its log gave up on storing it without knowing whether it was
 * stored (a cluster's commit whose publish kept failing: its acknowledgement may have been lost).
 */
export const outcomeUnknownCode = 'OUTCOME_UNKNOWN' as const;

/** `code` of the error an append gets when one of its entries is larger than the log takes in one entry. */
export const entryTooLargeCode = 'ENTRY_TOO_LARGE' as const;

/** `code` of the error open() throws when the data on disk is damaged or incomplete and it refuses to open. */
export const logDamagedCode = 'LOG_DAMAGED' as const;

/**
 * `code` of the error open() throws when the log it finds is not the one this node joined before (its
 * `joined` option): another log of the name, or none where one is expected. Nothing is created then.
 */
export const logForeignCode = 'LOG_FOREIGN' as const;

/** What the error of a foreign log says, for a caller that words it for its operator. */
export interface ForeignLog {
  /** The identity of the log this node joined before. */
  joined: string;
  /** The identity of the log found; undefined when there is none. */
  found: string | undefined;
  /** When there is no log: snapshots of one of its name that are still kept beside it (it was deleted). */
  deletedSnapshots?: { store: string; count: number; newest: number } | undefined;
}

/** The error for an append refused because `queued` entries already wait and at most `max` may. */
export function overloadedError(kind: string, queued: number, adding: number, max: number): Error {
  const err = new Error(`${kind}: log is overloaded: ${queued} entries already wait for the next commit and `
    + `${adding} more would pass queuedEntriesMax (${max}); retry later`);
  return Object.assign(err, { code: logOverloadedCode });
}

/** The error for appends refused until the log can store them again; the message names no path. */
export function unavailableError(kind: string, why: string, shortage: LogShortage = 'space'): Error {
  return Object.assign(new Error(`${kind}: cannot store writes now: ${why}; retry later`), { code: logUnavailableCode, shortage });
}

/**
 * What a log that cannot store writes for now is short of: disk space, file descriptors, its files (its
 * data dir was removed while it ran, and is being written afresh), a data dir it can use (its permissions
 * taken away, a file where a directory of it goes), its stream (a cluster's JetStream stream deleted on the
 * nats-servers), or the nats-servers' JetStream storage (full).
 */
export type LogShortage = 'space' | 'descriptors' | 'files' | 'dir' | 'stream' | 'storage';

/**
 * The error every append gets once the log has failed for good; `cause` is the write or sync error, which
 * its message names. It is not attached as the error's `cause` as well: a logger prints a cause after the
 * message, which would name it twice (the log logs the cause itself, with its stack, when it fails).
 */
export function failedError(kind: string, cause: unknown): Error {
  const msg = cause instanceof Error ? cause.message : String(cause);
  return Object.assign(new Error(`${kind} failed, no further appends are accepted: ${msg}`), { code: logFailedCode });
}

/** The error for a write not confirmed within `timeoutMs`; the log may still commit it later. */
export function writeTimedOutError(timeoutMs: number): Error & { timeoutMs: number } {
  return Object.assign(new Error(`the write was not confirmed within ${timeoutMs} ms; it may still take effect`), { code: writeTimedOutCode, timeoutMs });
}

/** The error for a write the log gave up on, stored or not; `why` says what failed (no paths). */
export function outcomeUnknownError(message: string, cause: unknown): Error {
  return Object.assign(new Error(message, { cause }), { code: outcomeUnknownCode });
}

/** The error for a proposal of `bytes` in a log whose entries hold at most `max` (a cluster's: the nats-servers' max_payload). */
export function entryTooLargeError(pid: string, bytes: number, max: number): RangeError & { bytes: number; max: number } {
  return Object.assign(new RangeError(`proposal ${pid} needs ${bytes} bytes, above the ${max}-byte entry limit`), { code: entryTooLargeCode, bytes, max });
}

export function isEntryTooLarge(err: unknown): err is RangeError & { code: typeof entryTooLargeCode; bytes: number; max: number } {
  return hasCode(err, entryTooLargeCode);
}

export function damagedError(message: string): Error {
  return Object.assign(new Error(message), { code: logDamagedCode });
}

/** The error of an open() that found a log other than the one this node joined (see logForeignCode). */
export function foreignLogError(message: string, foreign: ForeignLog): Error & ForeignLog {
  return Object.assign(new Error(message), { code: logForeignCode }, foreign);
}

export function isLogForeign(err: unknown): err is Error & ForeignLog & { code: typeof logForeignCode } {
  return hasCode(err, logForeignCode);
}

/** True for the error an append gets when the log is overloaded (its queue of waiting appends is full). */
export function isLogOverloaded(err: unknown): err is Error & { code: typeof logOverloadedCode } {
  return hasCode(err, logOverloadedCode);
}

/** True for the error of an append the log could not store for now and may store later (nothing of it was applied). */
export function isLogUnavailable(err: unknown): err is Error & { code: typeof logUnavailableCode; shortage: LogShortage } {
  return hasCode(err, logUnavailableCode);
}

/** True for the error of a write not confirmed in time (outcome unknown). */
export function isWriteTimedOut(err: unknown): err is Error & { code: typeof writeTimedOutCode; timeoutMs: number } {
  return hasCode(err, writeTimedOutCode);
}

export function isOutcomeUnknown(err: unknown): err is Error & { code: typeof outcomeUnknownCode } {
  return hasCode(err, outcomeUnknownCode);
}

export function isLogFailed(err: unknown): err is Error & { code: typeof logFailedCode } {
  return hasCode(err, logFailedCode);
}

export function isLogDamaged(err: unknown): err is Error & { code: typeof logDamagedCode } {
  return hasCode(err, logDamagedCode);
}

function hasCode(err: unknown, code: string): boolean {
  return err instanceof Error && (err as { code?: unknown }).code === code;
}
