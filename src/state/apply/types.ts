/**
 * What apply works with: the context of one entry's apply, what it yields (a result and effects), the
 * failures each command can return and the shape of a command's handler.
 */
import type { Command, CommandTag } from '../../domain/commands.ts';
import type { TxnOpError } from '../../domain/errors-kv.ts';
import type { KvEntry, Session } from '../../domain/types.ts';
import type { RegistryState } from '../registry-state.ts';

/**
 * The expected failures of each command, returned as values. A handler that returns a failure not
 * listed for its command does not compile; a command missing here does not compile either.
 */
export type CommandFailures = {
  'session.create': 'unknown-node' | 'session-exists' | 'unknown-check' | 'check-critical';
  'session.destroy': never;
  'session.renew': 'session-not-found';
  'session.expire': 'stale';
  'kv.set': never;
  'kv.cas': 'cas-mismatch';
  'kv.acquire': 'invalid-session' | 'lock-delay' | 'held-by-other';
  'kv.release': 'not-locked' | 'not-holder';
  'kv.delete': never;
  'kv.deleteCas': 'cas-mismatch';
  'kv.deleteTree': never;
  /** Some operation failed: `errors` says which and why; nothing applied. */
  'txn.kv': 'txn-failed';
  /** A rename's ID is held by another node than the one the command replaces. */
  'catalog.register': 'node-id-taken';
  'catalog.deregister': 'unknown-node' | 'unknown-check';
  'check.register': 'unknown-node' | 'unknown-service';
  'check.deregister': 'unknown-check';
  'check.update': 'unknown-check' | 'stale';
  'check.ttlExpire': 'unknown-check' | 'stale';
  'service.register': 'unknown-node';
  'service.deregister': 'unknown-service';
  'service.reap': 'stale' | 'unknown-service';
  barrier: never;
  'state.restore': never;
};

export type Failure = CommandFailures[CommandTag];

export type Result<F extends Failure = Failure> =
  /** `index`: the entry that applied it, set by the runtime for the proposer (a write's fencing token). */
  /** `results`: a transaction's answer, one entry per result in operation order. */
  | { ok: true; session?: Session; index?: number; results?: KvEntry[] }
  /** `errors`: a failed transaction's operations that failed, in order. */
  | { ok: false; reason: F; detail?: string; errors?: TxnOpError[] };

/** What the runtime does after an entry applied: wake watchers, (re)arm or drop TTL timers. */
export type Effect =
  | { t: 'kv'; key: string }
  | { t: 'sessions' }
  | { t: 'catalog' }
  /** A check was registered, changed, updated or removed: its runner reconciles with state. */
  | { t: 'check'; node: string; checkId: string; serviceId: string }
  /** A session was created or invalidated. */
  | { t: 'session'; id: string }
  /** A service instance was registered, changed or removed. */
  | { t: 'service'; node: string; serviceId: string }
  /** A catalog node was registered, changed or removed. */
  | { t: 'node'; node: string }
  /** A service name's index moved (registry-state.ts serviceIndexes): its readers' blocking queries wake. */
  | { t: 'serviceIndex'; name: string }
  | { t: 'ttl.arm'; id: string; renewIndex: number; ttlMs: number }
  | { t: 'ttl.cancel'; id: string };

export interface Applied {
  result: Result;
  effects: Effect[];
}

/** What one entry's apply works with: the state, the entry's index and time, and the effects it yields. */
export interface Ctx {
  state: RegistryState;
  index: number;
  atMs: number;
  effects: Effect[];
}

/** Each command by its tag. */
export type CommandMap = { [C in Command as C['t']]: C };

/** Applies one command of tag `T`: changes the state, pushes effects, returns its result. */
export type Handler<T extends CommandTag> = (c: Ctx, cmd: CommandMap[T]) => Result<CommandFailures[T]>;

/** One handler for each tag in `T`. */
export type Handlers<T extends CommandTag = CommandTag> = { [K in T]: Handler<K> };

/** The tags of one table: those that start with `prefix` and a dot. */
export type TagsOf<P extends string> = Extract<CommandTag, `${P}.${string}`>;

export const ok: { ok: true } = { ok: true };

export function fail<F extends Failure>(reason: F, detail?: string): Result<F> {
  return detail === undefined ? { ok: false, reason } : { ok: false, reason, detail };
}
