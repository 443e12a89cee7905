/**
 * The log is a wire format: every mutation of the registry is one of these commands.
 * Tags are fixed and only ever added; a node that meets an unknown tag stops (see src/state/apply/dispatch.ts).
 * Everything nondeterministic (ids, the entry time) is settled before a command reaches the log.
 */
import type { CheckDefinition, CheckKind, CheckStatus, ServiceInstance, Session } from './types.ts';

export type { Behavior } from './types.ts';

/**
 * A new session: the record as state keeps it, less what apply fills in from the entry. `owner` is set by
 * the proposer from the verified caller; entries written without it (no authentication, or before owners
 * were recorded) apply as sessions without an owner.
 */
export type SessionCreate = { t: 'session.create' } & Omit<Session, 'createIndex' | 'modifyIndex' | 'renewIndex' | 'renewedAtMs'>;

export interface SessionDestroy { t: 'session.destroy'; id: string }
export interface SessionRenew { t: 'session.renew'; id: string }
/** Proposed by the TTL owner: applies only if the session was last renewed at `renewIndex`. */
export interface SessionExpire { t: 'session.expire'; id: string; renewIndex: number }

/** Values travel base64-encoded ("" with `null: true` for an absent body); flags as decimal uint64 text. */
export interface KvSet { t: 'kv.set'; key: string; value: string | null; flags: string }
export interface KvCas { t: 'kv.cas'; key: string; value: string | null; flags: string; cas: string }
export interface KvAcquire { t: 'kv.acquire'; key: string; value: string | null; flags: string; session: string }
export interface KvRelease { t: 'kv.release'; key: string; value: string | null; flags: string; session: string }
export interface KvDelete { t: 'kv.delete'; key: string }
export interface KvDeleteCas { t: 'kv.deleteCas'; key: string; cas: string }
export interface KvDeleteTree { t: 'kv.deleteTree'; prefix: string }

/** The KV verbs of a transaction (Consul's /v1/txn KV operations). */
export const txnKvVerbs = [
  'set', 'cas', 'lock', 'unlock', 'get', 'get-or-empty', 'get-tree', 'check-index', 'check-session', 'check-not-exists', 'delete', 'delete-tree',
  'delete-cas',
] as const;
export type TxnKvVerb = (typeof txnKvVerbs)[number];
/** The verbs that only read: a transaction of these alone needs no log entry. */
export const txnKvReadVerbs: ReadonlySet<TxnKvVerb> = new Set(['get', 'get-or-empty', 'get-tree', 'check-index', 'check-session', 'check-not-exists']);

/**
 * One KV operation of a transaction, every field present: `value` as in kv.set (base64, null for none),
 * `flags` and `index` (cas, delete-cas, check-index) as decimal uint64 text, `session` "" for none.
 */
export interface TxnKvOp { verb: TxnKvVerb; key: string; value: string | null; flags: string; index: string; session: string }
/** KV operations applied in order as one entry, all or none (see src/state/apply/txn.ts). */
export interface TxnKv { t: 'txn.kv'; ops: TxnKvOp[] }

/** A node-level check as registered through the catalog (service checks are registered by check.register or service.register). */
export interface CatalogCheck {
  checkId: string;
  name: string;
  status: 'passing' | 'warning' | 'critical';
  notes: string;
  output: string;
}

/**
 * Registers or updates a node of the catalog and upserts its node-level checks (the agent registers
 * its own node with the gossip check at boot). A check entering critical invalidates bound sessions.
 */
export interface CatalogRegister {
  t: 'catalog.register';
  node: string;
  id: string;
  address: string;
  meta: Record<string, string>;
  /** The node's tagged addresses (command level 5); absent when the registration gives none. */
  taggedAddresses?: Record<string, string>;
  checks: CatalogCheck[];
  /**
   * A rename by node ID (Consul's; command level 5): the node that holds `id` under another name, as the
   * proposer saw it (and checked its caller may write), is removed with its services, checks and
   * sessions. Apply refuses the command if another node holds the ID by then. Without it, apply checks no
   * ID (the front end refuses an ID another node holds).
   */
  replaces?: string;
}

/** Removes one check of a node (checkId given) or the whole node with its checks and sessions. */
export interface CatalogDeregister { t: 'catalog.deregister'; node: string; checkId?: string }

/** A check as registered (by the agent API, a service definition or the config file), defaults applied. */
export interface CheckRegistration {
  checkId: string;
  name: string;
  notes: string;
  /** Initial status (used only when the check is new; a re-registration keeps the current one). */
  status: CheckStatus;
  /** Initial output, e.g. for maintenance checks; usually "". */
  output: string;
  serviceId: string;
  type: CheckKind;
  definition: CheckDefinition;
}

export interface CheckRegister { t: 'check.register'; node: string; check: CheckRegistration }
export interface CheckDeregister { t: 'check.deregister'; node: string; checkId: string }
/**
 * A new result for registration `generation` of a check: `probe` results go through the thresholds;
 * `ttl` (pass/warn/fail/update) and `alias` results set the status directly.
 */
export interface CheckUpdate {
  t: 'check.update';
  node: string;
  checkId: string;
  generation: number;
  via: 'probe' | 'ttl' | 'alias';
  status: CheckStatus;
  output: string;
}
/** Proposed by the TTL check's owner: applies only if no update came since `ttlUpdateIndex`. */
export interface CheckTtlExpire { t: 'check.ttlExpire'; node: string; checkId: string; ttlUpdateIndex: number }

export type ServiceInput = Omit<ServiceInstance, 'node' | 'createIndex' | 'modifyIndex'>;
export interface ServiceRegister {
  t: 'service.register';
  node: string;
  service: ServiceInput;
  checks: CheckRegistration[];
  /** Remove the service's checks that this registration does not list. */
  replaceExistingChecks: boolean;
}
export interface ServiceDeregister { t: 'service.deregister'; node: string; serviceId: string }
/** Proposed by the reaper: applies only if `checkId` is still critical since `criticalSinceMs`. */
export interface ServiceReap { t: 'service.reap'; node: string; serviceId: string; checkId: string; criticalSinceMs: number }

/**
 * Replaces the whole state by a snapshot's (PUT /v1/snapshot): `data` is the state module's snapshot data
 * (src/state/snapshot.ts), checked before it is proposed. See src/state/apply/restore.ts for what it does
 * to indexes, sessions and locks. A snapshot too large for one entry travels out of band instead: the
 * entry names an `attachment` of the log (the snapshot file, stored before the entry is proposed) with
 * its SHA-256, and the runtime loads it into `data` when the entry applies.
 */
export interface StateRestore { t: 'state.restore'; data?: unknown; attachment?: { name: string; sha256: string } }

/** A no-op entry: once it applies, everything committed before it has applied (?consistent). */
export interface Barrier { t: 'barrier' }

export type Command =
  | SessionCreate | SessionDestroy | SessionRenew | SessionExpire
  | KvSet | KvCas | KvAcquire | KvRelease | KvDelete | KvDeleteCas | KvDeleteTree | TxnKv
  | CatalogRegister | CatalogDeregister | Barrier
  | CheckRegister | CheckDeregister | CheckUpdate | CheckTtlExpire
  | ServiceRegister | ServiceDeregister | ServiceReap
  | StateRestore;

export type CommandTag = Command['t'];
