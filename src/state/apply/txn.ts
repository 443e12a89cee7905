/**
 * Transactions (Consul's /v1/txn, KV operations only): the operations of one entry run in order, each
 * seeing what the earlier ones wrote, and apply all or nothing. They are evaluated against an overlay
 * (key → its entry as the transaction left it, or null once deleted) over the state, which stays
 * untouched meanwhile; every failing operation is reported (a failed one changes nothing for those after
 * it). Only when none failed are the overlay's final entries written through writeEntry and deleteKey,
 * so derived indexes, tombstones, the locks by session and the effects stay right, and every written
 * entry carries this entry's index as its ModifyIndex. Locks are decided by the lock machine as a plain
 * acquire and release are, lock delay included (Consul's transactions skip that check).
 */
import { txnWhat, type TxnOpError } from '../../domain/errors-kv.ts';
import { txnKvReadVerbs, type TxnKvOp } from '../../domain/commands.ts';
import type { KvEntry } from '../../domain/types.ts';
import { effectOf, hasEffect } from '../../../machines/index.ts';
import { compareKeys, type RegistryState } from '../registry-state.ts';
import { deleteKey, newEntry, sameValue, stepLock, writeEntry } from './kv.ts';
import { type Ctx, type Handler, type Handlers, type Result } from './types.ts';

/** The transaction's view of the KV table: the state with its own writes and deletes laid over it. */
class Overlay {
  /** Key → the entry as this transaction left it, null once deleted; insertion order is first touch. */
  readonly changed = new Map<string, KvEntry | null>();

  constructor(private readonly state: RegistryState) {}

  get(key: string): KvEntry | undefined {
    const mine = this.changed.get(key);
    return mine === undefined ? this.state.kv.get(key) : mine ?? undefined;
  }

  put(entry: KvEntry): void {
    this.changed.set(entry.key, entry);
  }

  remove(key: string): void {
    if (this.get(key) !== undefined) this.changed.set(key, null);
  }

  /** The entries under `prefix` as the transaction sees them, in key-byte order. */
  list(prefix: string): KvEntry[] {
    const keys = new Set(this.state.kvList(prefix).map((e) => e.key));
    for (const key of this.changed.keys()) if (key.startsWith(prefix)) keys.add(key);
    const out: KvEntry[] = [];
    for (const key of [...keys].sort(compareKeys)) {
      const e = this.get(key);
      if (e !== undefined) out.push(e);
    }
    return out;
  }
}

/** What one operation yields: its results (entries), or why it failed. */
type Outcome = KvEntry[] | string;

/** The entry as a write's or check's result shows it: without its value (Consul blanks it). */
const bare = (e: KvEntry): KvEntry => ({ ...e, value: null });
const copy = (e: KvEntry): KvEntry => ({ ...e });

type Op = (c: Ctx, o: Overlay, op: TxnKvOp) => Outcome;

const set: Op = (c, o, op) => {
  const previous = o.get(op.key);
  // An identical write changes nothing and keeps ModifyIndex, as kv.set does.
  if (previous !== undefined && sameValue(previous, op.value, op.flags)) return [bare(previous)];
  const entry = newEntry(c, op.key, op.value, op.flags, previous);
  o.put(entry);
  return [bare(entry)];
};

const cas: Op = (c, o, op) => {
  const previous = o.get(op.key);
  const matches = op.index === '0' ? previous === undefined : previous !== undefined && String(previous.modifyIndex) === op.index;
  return matches ? set(c, o, op) : txnWhat.casStale(op.key);
};

const lock: Op = (c, o, op) => {
  if (op.session === '') return txnWhat.missingSession();
  if (!c.state.sessions.has(op.session)) return txnWhat.invalidSession(op.session);
  const previous = o.get(op.key);
  const next = stepLock(c, previous, { type: 'acquire', session: op.session, atMs: c.atMs }, op.key);
  const failed = effectOf(next, 'acquireFailed');
  if (failed !== undefined) return failed.params.reason === 'lock-delay' ? txnWhat.lockDelay(op.key) : txnWhat.lockHeld(op.key);
  if (hasEffect(next, 'reacquired') && previous !== undefined && sameValue(previous, op.value, op.flags)) return [bare(previous)];
  const entry = newEntry(c, op.key, op.value, op.flags, previous);
  entry.session = next.context.holder ?? undefined;
  entry.lockIndex = next.context.lockIndex;
  o.put(entry);
  return [bare(entry)];
};

const unlock: Op = (c, o, op) => {
  if (op.session === '') return txnWhat.missingSession();
  const previous = o.get(op.key);
  if (previous === undefined) return txnWhat.notHolder(op.key);
  const next = stepLock(c, previous, { type: 'release', session: op.session, sessionValid: c.state.sessions.has(op.session) });
  if (effectOf(next, 'releaseFailed') !== undefined) return txnWhat.notHolder(op.key);
  // As a release: Value and Flags become the operation's.
  const entry = newEntry(c, op.key, op.value, op.flags, previous);
  entry.session = undefined;
  o.put(entry);
  return [bare(entry)];
};

const checkIndex: Op = (_c, o, op) => {
  const e = o.get(op.key);
  if (e === undefined) return txnWhat.checkIndexMissing(op.key);
  return String(e.modifyIndex) === op.index ? [bare(e)] : txnWhat.checkIndexStale(op.key, e.modifyIndex, op.index);
};

const checkSession: Op = (_c, o, op) => {
  const e = o.get(op.key);
  if (e === undefined) return txnWhat.checkSessionMissing(op.key);
  const current = e.session ?? '';
  return current === op.session ? [bare(e)] : txnWhat.checkSessionStale(op.key, current, op.session);
};

const deleteCas: Op = (_c, o, op) => {
  const e = o.get(op.key);
  // An absent key counts as deleted.
  if (e === undefined) return [];
  if (String(e.modifyIndex) !== op.index) return txnWhat.deleteCasStale(op.key);
  o.remove(op.key);
  return [];
};

const ops: Record<TxnKvOp['verb'], Op> = {
  set, cas, lock, unlock,
  get: (_c, o, op) => {
    const e = o.get(op.key);
    return e === undefined ? txnWhat.keyMissing(op.key) : [copy(e)];
  },
  // A missing key answers the operation's own fields, as Consul does (its Index as ModifyIndex).
  'get-or-empty': (_c, o, op) => {
    const e = o.get(op.key);
    if (e !== undefined) return [copy(e)];
    return [{ key: op.key, value: null, flags: op.flags, session: op.session === '' ? undefined : op.session, lockIndex: 0, createIndex: 0, modifyIndex: Number(op.index) }];
  },
  'get-tree': (_c, o, op) => o.list(op.key).map(copy),
  'check-index': checkIndex,
  'check-session': checkSession,
  'check-not-exists': (_c, o, op) => (o.get(op.key) === undefined ? [] : txnWhat.keyExists(op.key)),
  delete: (_c, o, op) => { o.remove(op.key); return []; },
  'delete-tree': (_c, o, op) => { for (const e of o.list(op.key)) o.remove(e.key); return []; },
  'delete-cas': deleteCas,
};

/** Runs the operations in order against an overlay: what they return, and every one that failed. */
function evaluate(c: Ctx, txnOps: readonly TxnKvOp[]): { overlay: Overlay; results: KvEntry[]; errors: TxnOpError[] } {
  const overlay = new Overlay(c.state);
  const results: KvEntry[] = [];
  const errors: TxnOpError[] = [];
  txnOps.forEach((op, opIndex) => {
    const run = Object.hasOwn(ops, op.verb) ? ops[op.verb] : undefined;
    const outcome = run === undefined ? txnWhat.unknownVerb(String(op.verb)) : run(c, overlay, op);
    if (typeof outcome === 'string') errors.push({ opIndex, what: outcome });
    // One push each: spreading a get-tree of many keys into push's arguments passes the engine's limit.
    else for (const entry of outcome) results.push(entry);
  });
  return { overlay, results, errors };
}

const txnKv: Handler<'txn.kv'> = (c, cmd) => {
  const { overlay, results, errors } = evaluate(c, cmd.ops);
  if (errors.length > 0) return { ok: false, reason: 'txn-failed', errors };
  for (const [key, entry] of overlay.changed) {
    if (entry === null) deleteKey(c, key);
    else writeEntry(c, entry);
  }
  return { ok: true, results };
};

export const txnHandlers: Handlers<'txn.kv'> = { 'txn.kv': txnKv };

/**
 * Answers a transaction of read verbs only (txnKvReadVerbs) from `state`, as its entry would: not through
 * the log, and changing nothing. A write verb among them is a caller's bug.
 */
export function readTxn(state: RegistryState, txnOps: readonly TxnKvOp[]): Result<'txn-failed'> {
  const write = txnOps.find((op) => !txnKvReadVerbs.has(op.verb));
  if (write !== undefined) throw new Error(`readTxn: ${write.verb} is not a read`);
  const { results, errors } = evaluate({ state, index: state.index, atMs: state.atMs, effects: [] }, txnOps);
  return errors.length > 0 ? { ok: false, reason: 'txn-failed', errors } : { ok: true, results };
}
