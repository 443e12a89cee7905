/**
 * The KV part of the error catalogue (errors.ts spreads it in): the KV endpoints' errors, and the
 * transaction endpoint's with the texts of a failed operation (`txnWhat`, Consul's words).
 */
import { entry, missingInPath, rule, type Reason } from './error-kinds.ts';

/** A transaction's operation that failed (or was refused): its position and Consul's text for why. */
export interface TxnOpError { opIndex: number; what: string }

export const kvErrorCatalogue = {
  // ------------------------------------------------------------ KV
  kvKeyMissing: missingInPath('key', 'Missing key name', 'key name'),
  kvKeyNotFound: entry<{ key: string }>({ kind: 'notFound', message: (v) => `key "${v.key}" not found`, details: (v) => ({ key: v.key }) }),
  kvUint64Invalid: entry<{ name: string; text: string }>({
    kind: 'invalidParameter', message: (v) => `invalid ${v.name}: must be an unsigned 64-bit integer`, details: (v) => rule(v.name, 'Format:must be an unsigned 64-bit integer'),
    // Go's ParseUint refuses digits alone only when they overflow.
    consulStatus: 500, consulText: (v) => `strconv.ParseUint: parsing ${JSON.stringify(v.text)}: ${/^[0-9]+$/.test(v.text) ? 'value out of range' : 'invalid syntax'}`,
  }),
  kvSessionMissing: entry<{ name: string }>({
    kind: 'missingParameter', message: (v) => `${v.name} requires a session id`, details: (v) => rule(v.name, 'Required:a session id is required'),
    consulStatus: 500, consulText: 'missing session',
  }),
  kvFlagsConflict: entry<{ given: string[]; exclusive: string[]; query: string }>({
    kind: 'invalidParameter', message: (v) => `conflicting flags: ${v.given.join(' and ')} cannot be combined`,
    details: (v) => Object.fromEntries(v.given.map((n) => [n, [`Conflict:only one of ${v.exclusive.join(', ')} may be given`]])),
    consulText: (v) => `Conflicting flags: ${v.query}\n`,
  }),
  kvSessionInvalid: entry<{ session: string | undefined }>({
    kind: 'objectNotFound', message: (v) => `invalid session "${v.session}"`, details: (v) => ({ session: v.session }), consulText: (v) => `invalid session "${v.session}"`,
  }),
  casMismatch: entry<Reason>({ kind: 'conflict', message: 'did not apply: the check-and-set index did not match', details: (v) => ({ reason: v.reason }) }),
  lockNotAcquired: entry<Reason>({ kind: 'conflict', message: 'did not acquire lock', details: (v) => ({ reason: v.reason }) }),
  lockNotReleased: entry<Reason>({ kind: 'conflict', message: 'did not release lock', details: (v) => ({ reason: v.reason }) }),
  kvWriteFailed: entry<Reason>({ kind: 'unknown', message: (v) => `write failed: ${v.reason}` }),

  // ------------------------------------------------------------ write preconditions (src/http/preconditions.ts)
  /** Code 1025 (an optimistic lock that failed is a concurrency conflict) with status 412; the conventions give 412 no code. */
  preconditionFailed: entry<{ header: 'If-Match' | 'If-None-Match'; reason: string; why: string }>({
    kind: 'conflict', status: 412, consulStatus: 412, message: (v) => `precondition failed, nothing changed: ${v.header} ${v.why}`,
    details: (v) => ({ header: v.header, reason: v.reason }),
  }),
  /** A read's If-Match or If-Unmodified-Since that does not hold on its answer (conditional.ts): the writes' 412 and code. */
  readPreconditionFailed: entry<{ header: 'If-Match' | 'If-Unmodified-Since'; reason: string; why: string }>({
    kind: 'conflict', status: 412, consulStatus: 412, message: (v) => `precondition failed: ${v.header} ${v.why}`,
    details: (v) => ({ header: v.header, reason: v.reason }),
  }),
  preconditionUnsupported: entry<{ given: string }>({
    kind: 'invalidParameter', message: (v) => `If-Match and If-None-Match cannot be combined with ${v.given}`,
    details: (v) => rule(v.given, `Conflict:a write with ${v.given} takes no If-Match or If-None-Match`),
  }),

  // ------------------------------------------------------------ transactions
  txnBodyInvalid: entry<{ why: string }>({
    kind: 'illegalJson', message: (v) => `the transaction is not a JSON array of operations: ${v.why}`, details: (v) => rule('body', `JSON:${v.why}`),
    consulText: (v) => `Failed to parse body: ${v.why}`,
  }),
  txnOpsTooMany: entry<{ count: number; max: number }>({
    kind: 'inputTooLong', message: (v) => `the transaction has ${v.count} operations; at most ${v.max}`, details: (v) => ({ operations: v.count, max: v.max }),
    consulText: (v) => `Transaction contains too many operations (${v.count} > ${v.max})`,
  }),
  txnOpNotKv: entry<{ opIndex: number; kind: string }>({
    kind: 'invalidParameter', message: (v) => `operation ${v.opIndex} is a ${v.kind} operation: transactions hold KV operations only`,
    details: (v) => ({ [`[${v.opIndex}].${v.kind}`]: ['Unsupported:transactions hold KV operations only'] }),
    consulText: (v) => `Operation ${v.opIndex} is a ${v.kind} operation: this agent's transactions hold KV operations only`,
  }),
  /** The seed dialect's answer to a transaction that did not apply (the consul dialect answers its own 409 body). */
  txnFailed: entry<{ errors: TxnOpError[] }>({
    kind: 'conflict', message: (v) => `transaction not applied: ${v.errors.length === 1 ? '1 operation' : `${v.errors.length} operations`} failed`,
    details: (v) => ({ errors: v.errors.map((e) => ({ opIndex: e.opIndex, what: e.what })) }),
  }),

};

const q = (text: string): string => JSON.stringify(text);

/** Why an operation of a transaction failed, in Consul's words (keys and sessions quoted as Go's %q does for printable text). */
export const txnWhat = {
  casStale: (key: string) => `failed to set key ${q(key)}, index is stale`,
  deleteCasStale: (key: string) => `failed to delete key ${q(key)}, index is stale`,
  missingSession: () => 'missing session',
  invalidSession: (session: string) => `invalid session ${q(session)}`,
  lockHeld: (key: string) => `failed to lock key ${q(key)}, lock is already held`,
  lockDelay: (key: string) => `failed to lock key ${q(key)} due to lock delay`,
  notHolder: (key: string) => `failed to unlock key ${q(key)}, lock isn't held, or is held by another session`,
  keyMissing: (key: string) => `key ${q(key)} doesn't exist`,
  checkIndexMissing: (key: string) => `failed to check index, key ${q(key)} doesn't exist`,
  checkIndexStale: (key: string, current: number, given: string) => `failed index check for key ${q(key)}, current modify index ${current} != ${given}`,
  checkSessionMissing: (key: string) => `failed to check session, key ${q(key)} doesn't exist`,
  checkSessionStale: (key: string, current: string, given: string) => `failed session check for key ${q(key)}, current session ${q(current)} != ${q(given)}`,
  keyExists: (key: string) => `key ${q(key)} exists`,
  unknownVerb: (verb: string) => `unknown KV verb ${q(verb)}`,
  keyMissingInOp: () => 'Must provide key',
  permissionDenied: () => 'Permission denied',
} as const;
