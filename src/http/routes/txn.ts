/**
 * `PUT /v1/txn` (Consul's transactions, KV operations only): the operations apply in order as one log
 * entry, all or none (src/state/apply/txn.ts). Before anything is proposed each operation is vetted:
 * a known verb, a key, and with authentication the key's rule (read for get and the checks, write for
 * writes, write on the whole subtree for delete-tree) and, for lock and unlock, the session's owner;
 * refusals are reported as failed operations ("Permission denied" at its OpIndex) and nothing applies.
 * A transaction of reads only is answered from local state (after a barrier with `?consistent`); get-tree
 * results hold only keys the caller may read. Answers: 200 `{"Results":[{"KV":entry}...],"Errors":null}`,
 * a failure 409 `{"Results":null,"Errors":[{"OpIndex","What"}...]}` (consul) or code 1025 (seed).
 */
import { allowed, allowedPrefix, type Access } from '../../auth/index.ts';
import { txnKvReadVerbs, txnKvVerbs, type TxnKvOp, type TxnKvVerb } from '../../domain/commands.ts';
import { RegistryError } from '../../domain/errors.ts';
import { txnWhat, type TxnOpError } from '../../domain/errors-kv.ts';
import type { KvEntry } from '../../domain/types.ts';
import { readTxn, type Result } from '../../state/index.ts';
import type { ApiContext } from '../api.ts';
import { checkJsonType } from '../body.ts';
import { checkDatacenter, parseQueryOptions, queryOptionParameters } from '../query.ts';
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

function failedAnswer(errors: readonly TxnOpError[]): Reply {
  const json = `{"Results":null,"Errors":[${errors.map((e) => `{"OpIndex":${e.opIndex},"What":${JSON.stringify(e.what)}}`).join(',')}]}`;
  return { t: 'conflict', json, failure: new RegistryError('txnFailed', { errors: [...errors] }) };
}

/**
 * `index` is the write's, or for reads the state's. A caller that may not read every key is not given the
 * state's index for reads, which moves with writes it cannot see: its index is the newest change among
 * the entries it is shown, as a filtered KV list counts only the keys it may read.
 */
function answer(result: Result, req: Request, index: number | 'reads', api: ApiContext): Reply {
  if (!result.ok) return failedAnswer(result.errors ?? []);
  const readable = readableUnder(req, 'key', '');
  const shown = (result.results ?? []).filter((e: KvEntry) => readable === undefined || readable(e.key));
  const state = api.runtime.state;
  const answered = index !== 'reads' ? index
    : readable === undefined ? state.index
    : state.kvVisibleIndex(shown.reduce((max, e) => Math.max(max, e.modifyIndex), 0));
  return { t: 'json', json: `{"Results":[${shown.map((e) => `{"KV":${renderEntry(e)}}`).join(',')}],"Errors":null}`, index: { index: answered } };
}

async function txn(req: Request, api: ApiContext): Promise<Reply> {
  checkDatacenter(req, api);
  if (req.jsonTypeRequired === true && req.body.length > 0) checkJsonType(req.headers.get('content-type'));
  const bodyOps = txnOperations(req.body);
  const errors: TxnOpError[] = [];
  for (const [opIndex, op] of bodyOps.entries()) {
    const what = await vet(req, api, op);
    if (what !== undefined) errors.push({ opIndex, what });
  }
  if (errors.length > 0) return failedAnswer(errors);
  const ops = bodyOps as TxnKvOp[];
  if (ops.every((op) => txnKvReadVerbs.has(op.verb))) {
    // Reads only: from this node's state, as other reads (a barrier first with ?consistent).
    if (parseQueryOptions(req, api).consistent) await api.runtime.barrier();
    return answer(readTxn(api.runtime.state, ops), req, 'reads', api);
  }
  const result = await api.runtime.propose({ t: 'txn.kv', ops });
  return answer(result, req, result.ok ? result.index ?? api.runtime.state.index : api.runtime.state.index, api);
}

export const txnRoutes: Route<ApiContext>[] = [
  { path: '/v1/txn', prefix: false, methods: { PUT: txn }, query: queryOptionParameters },
];
