/**
 * `PUT /v1/txn` (Consul's transactions, KV operations only): the operations apply in order as one log
 * entry, all or none (src/state/apply/txn.ts). Before anything is proposed each operation is vetted:
 * a known verb, a key, and with authentication the key's rule (read for get and the checks, write for
 * writes, write on the whole subtree for delete-tree) and, for lock and unlock, the session's owner;
 * refusals are reported as failed operations ("Permission denied" at its OpIndex) and nothing applies.
 * A transaction of reads only is answered from local state (after a barrier with `?consistent`); get-tree
 * results hold only keys the caller may read. Answers: 200 `{"Results":[{"KV":entry}...],"Errors":null}`,
 * a failure 409 `{"Results":null,"Errors":[{"OpIndex","What"}...]}` (consul) or code 1025 (seed).
 * The answer's size is estimated before anything is read or proposed (a get-tree repeats its prefix once
 * per operation): one longer than any answer the agent renders fails at the operation that passes it, and
 * a large one takes the budget of large answers then, or is refused 503 (large-answers.ts).
 */
import { allowed, allowedPrefix, type Access } from '../../auth/index.ts';
import { txnKvReadVerbs, txnKvVerbs, type TxnKvOp, type TxnKvVerb } from '../../domain/commands.ts';
import { RegistryError } from '../../domain/errors.ts';
import { txnWhat, type TxnOpError } from '../../domain/errors-kv.ts';
import type { KvEntry } from '../../domain/types.ts';
import { readTxn, type Result } from '../../state/index.ts';
import type { ApiContext } from '../api.ts';
import { checkJsonType, checkUtf8 } from '../body.ts';
import { checkDatacenter, parseQueryOptions, queryOptionParameters } from '../query.ts';
import { answerBudgetOf, answerCharsMax, streamedBytesMin } from '../large-answers.ts';
import type { Reply } from '../reply.ts';
import { readableUnder, type Request } from '../request.ts';
import type { Route } from '../router.ts';
import { requireSessionUse } from '../session-access.ts';
import { txnOperations, type BodyOp } from '../txn-body.ts';
import { renderEntry } from './kv.ts';

const verbs: ReadonlySet<string> = new Set(txnKvVerbs);
const isVerb = (verb: string): verb is TxnKvVerb => verbs.has(verb);

/** The rule an operation needs on its key (get-tree: none, its results are filtered instead). */
function accessOf(verb: TxnKvVerb): Access | undefined {
  if (verb === 'get-tree') return undefined;
  return txnKvReadVerbs.has(verb) ? 'read' : 'write';
}

/** Why the operation may not run, or undefined when it may. */
async function vet(req: Request, api: ApiContext, op: BodyOp): Promise<string | undefined> {
  if (!isVerb(op.verb)) return txnWhat.unknownVerb(op.verb);
  if (op.key === '' && op.verb !== 'delete-tree') return txnWhat.keyMissingInOp();
  const identity = req.identity;
  if (identity === undefined) return undefined;
  const access = accessOf(op.verb);
  const need = { resource: 'key' as const, name: op.key, access: access ?? 'read' };
  if (access !== undefined && !(op.verb === 'delete-tree' ? allowedPrefix(identity, need) : allowed(identity, need))) return txnWhat.permissionDenied();
  if ((op.verb === 'lock' || op.verb === 'unlock') && op.session !== '') {
    try {
      await requireSessionUse(req, api, op.session);
    } catch (err) {
      if (err instanceof RegistryError && err.kind === 'insufficientPermission') return txnWhat.permissionDenied();
      throw err;
    }
  }
  return undefined;
}

type Readable = ((key: string) => boolean) | undefined;

/**
 * Characters of one result beside its key, value and session: `{"KV":{...}}` and a comma, the field
 * names, the widest numbers (three indexes of up to 16 digits, uint64 Flags of up to 20) and `null`.
 */
const resultFieldChars = 150;
/** What JSON.stringify may write as an escape: a quote, a backslash, a control character, a lone surrogate. */
const escapedChars = /["\\\p{Cc}\p{Cs}]/u;

const jsonChars = (text: string): number => (escapedChars.test(text) ? JSON.stringify(text).length : text.length + 2);

const sessionChars = (session: string | undefined): number => (session === undefined || session === '' ? 0 : ',"Session":'.length + jsonChars(session));

/** The most characters a result renders to (kv.ts renderEntry, in `{"KV":...}`): never fewer than it does. */
function resultChars(key: string, value: string | null, session: string | undefined): number {
  return resultFieldChars + jsonChars(key) + (value?.length ?? 0) + sessionChars(session);
}

/**
 * The most characters the transaction's answer renders to, from the state before it applies: each result
 * as its entry stands, a get-tree as every readable entry under its prefix, and everything the earlier
 * operations write added to each read after them (what they write may show in it). `pastAt`: the first
 * operation by which the answer would be longer than any answer the agent renders (answerCharsMax); the
 * estimate stops there.
 */
function answerSize(state: ApiContext['runtime']['state'], ops: readonly TxnKvOp[], readable: Readable): { chars: number; pastAt?: number } {
  const trees = new Map<string, number>();
  const treeChars = (prefix: string): number => {
    let chars = trees.get(prefix);
    if (chars === undefined) {
      chars = 0;
      for (const e of state.kvList(prefix)) if (readable === undefined || readable(e.key)) chars += resultChars(e.key, e.value, e.session);
      trees.set(prefix, chars);
    }
    return chars;
  };
  let chars = 30;
  let written = 0;
  for (const [opIndex, op] of ops.entries()) {
    const stored = op.verb === 'get-tree' ? undefined : state.kvGet(op.key);
    if (op.verb === 'get-tree') chars += treeChars(op.key) + written;
    else if (op.verb === 'get' || op.verb === 'get-or-empty') chars += resultChars(op.key, stored?.value ?? null, stored?.session) + written;
    else if (!op.verb.startsWith('delete') && op.verb !== 'check-not-exists') chars += resultChars(op.key, null, stored?.session) + sessionChars(op.session);
    if (!txnKvReadVerbs.has(op.verb)) written += resultChars(op.key, op.value, op.session);
    if (chars > answerCharsMax) return { chars, pastAt: opIndex };
  }
  return { chars };
}

/** Why an operation fails whose results would make the answer longer than any the agent renders. */
const answerTooLong = (chars: number): string =>
  `results too large: the answer would take about ${chars} bytes by this operation, more than one answer holds (${answerCharsMax}); split the reads over several transactions`;

function failedAnswer(errors: readonly TxnOpError[]): Reply {
  const json = `{"Results":null,"Errors":[${errors.map((e) => `{"OpIndex":${e.opIndex},"What":${JSON.stringify(e.what)}}`).join(',')}]}`;
  return { t: 'conflict', json, failure: new RegistryError('txnFailed', { errors: [...errors] }) };
}

/**
 * `index` is the write's, or for reads the state's. A caller that may not read every key is not given the
 * state's index for reads, which moves with writes it cannot see: its index is the newest change among
 * the entries it is shown, as a filtered KV list counts only the keys it may read. `reserved`: bytes of the
 * budget of large answers taken for this answer, carried to the exchange, which gives them back.
 */
function answer(result: Result, readable: Readable, index: number | 'reads', api: ApiContext, reserved: Reserved): Reply {
  if (!result.ok) {
    reserved.release();
    return failedAnswer(result.errors ?? []);
  }
  const shown = (result.results ?? []).filter((e: KvEntry) => readable === undefined || readable(e.key));
  const state = api.runtime.state;
  const answered = index !== 'reads' ? index
    : readable === undefined ? state.index
    : state.kvVisibleIndex(shown.reduce((max, e) => Math.max(max, e.modifyIndex), 0));
  const json = `{"Results":[${shown.map((e) => `{"KV":${renderEntry(e)}}`).join(',')}],"Errors":null}`;
  if (reserved.bytes === 0) return { t: 'json', json, index: { index: answered } };
  return { t: 'json', json, index: { index: answered }, reservedBytes: reserved.bytes };
}

/** Bytes taken from the budget of large answers for a transaction's answer, given back unless the answer carries them. */
interface Reserved {
  bytes: number;
  release(): void;
}

/**
 * Takes the budget of large answers for an answer of about `chars`, before the transaction is read or
 * proposed: past the budget it is refused (503, nothing applied), as a KV prefix read is.
 */
function reserve(req: Request, chars: number): Reserved {
  const budget = answerBudgetOf(req);
  if (budget === undefined || chars < streamedBytesMin) return { bytes: 0, release: () => {} };
  if (!budget.take(chars)) throw new RegistryError('answersBusy');
  const reserved = { bytes: chars, release: () => { budget.release(reserved.bytes); reserved.bytes = 0; } };
  return reserved;
}

async function txn(req: Request, api: ApiContext): Promise<Reply> {
  checkDatacenter(req, api);
  if (req.jsonTypeRequired === true && req.body.length > 0) checkJsonType(req.headers.get('content-type'));
  checkUtf8(req);
  const bodyOps = txnOperations(req.body);
  const errors: TxnOpError[] = [];
  for (const [opIndex, op] of bodyOps.entries()) {
    const what = await vet(req, api, op);
    if (what !== undefined) errors.push({ opIndex, what });
  }
  if (errors.length > 0) return failedAnswer(errors);
  const ops = bodyOps as TxnKvOp[];
  const reads = ops.every((op) => txnKvReadVerbs.has(op.verb));
  // Reads only: from this node's state, as other reads (a barrier first with ?consistent).
  if (reads && parseQueryOptions(req, api).consistent) await api.runtime.barrier();
  const readable = readableUnder(req, 'key', '');
  // The answer's size is known about before anything is read or proposed: too long a one is refused then.
  const size = answerSize(api.runtime.state, ops, readable);
  if (size.pastAt !== undefined) return failedAnswer([{ opIndex: size.pastAt, what: answerTooLong(size.chars) }]);
  const reserved = reserve(req, size.chars);
  try {
    if (reads) return answer(readTxn(api.runtime.state, ops), readable, 'reads', api, reserved);
    const result = await api.runtime.propose({ t: 'txn.kv', ops });
    return answer(result, readable, result.ok ? result.index ?? api.runtime.state.index : api.runtime.state.index, api, reserved);
  } catch (err) {
    reserved.release();
    throw err;
  }
}

export const txnRoutes: Route<ApiContext>[] = [
  { path: '/v1/txn', prefix: false, methods: { PUT: txn }, query: queryOptionParameters },
];
