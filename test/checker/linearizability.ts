/**
 * Linearizability checker: Wing & Gong's search with Lowe's memoisation, per key.
 *
 * What it promises. `valid: true` for a key means there is a total order of the key's ops that
 * (1) contains every 'ok' op and any subset of the 'unknown' ops, (2) respects real time: an op that
 * returned before another was invoked comes first (intervals are CLOSED: an op returning at t and another
 * invoked at t are concurrent and may go either way), an unknown op goes anywhere after its call, and
 * (3) is legal for the model with the recorded outputs. `valid: false` means no such order exists; the
 * witness shows where the search got stuck. 'fail' ops are dropped before searching.
 * `valid: 'unknown'` means the budget ran out: a caller must treat it as a failed run.
 *
 * What it does not promise. It checks each key alone (P-compositionality: right for objects that are
 * independent, as KV keys and locks are; multi-key transactions are out of scope). It checks only what the
 * history shows: an answer the client never recorded is an unknown op. Times come from one process's
 * clock; a skewed clock makes it wrong in either direction.
 *
 * The search (Wing & Gong, with Lowe's memoisation). Calls and returns of the ok ops form a doubly linked
 * list ordered by time (a call before a return at equal times). At each configuration the search tries, in
 * list order, every ok op invoked before the earliest pending return (the ops that may go next); a legal one
 * is lifted out of the list and pushed on a stack. Reaching a return means its op was not placed in time:
 * backtrack. Only when every ok candidate fails does it try the unknown ops invoked by then (each at most
 * once; first those after which the stuck op is legal; one per model `effectKey`, as such ops are
 * interchangeable; never one that would not change the state, as leaving it out is the same). A failed
 * configuration (ok set, model state, unknown ops used) is remembered, and one is skipped when a failed one
 * had the same ok set and state and used a SUBSET of its unknown ops (it had every option this one has).
 * A model may narrow itself to the history (`forHistory`): the register merges values nobody observed.
 * Cost grows with the unknown ops that matter (their effect is observed); budget exhaustion says 'unknown'.
 */
import { formatOp, type Op } from './history.ts';
import { KeySearch, type KeyVerdict } from './key-search.ts';
import type { Model } from './models.ts';

export { formatOp };
export type { KeyVerdict };

export interface CheckOptions {
  /** Wall-clock budget for the whole history (all keys), in ms. Exhaustion makes the report 'unknown'. */
  budgetMs: number;
  /**
   * Remembered failed configurations, across keys, before giving up as 'unknown' (bounds memory).
   * @default 2_000_000
   */
  memoEntriesMax?: number;
}

export interface Report {
  valid: boolean | 'unknown';
  keys: KeyVerdict[];
  ops: number;
  unknownOps: number;
  failOps: number;
  elapsedMs: number;
}

const memoEntriesMaxDefault = 2_000_000;

/**
 * Checks `ops` key by key against `model`. `valid` is true only when every key is; false when any key is;
 * otherwise 'unknown' (the budget ran out: keys after that one are reported 'unknown', not checked).
 * Throws on a malformed history (duplicate id, ok op without a return, return before call).
 */
export function checkLinearizable<S>(ops: Op[], model: Model<S>, o: CheckOptions): Report {
  const startMs = performance.now();
  validate(ops);
  const byKey = new Map<string, Op[]>();
  for (const op of ops) {
    const list = byKey.get(op.key);
    if (list === undefined) byKey.set(op.key, [op]); else list.push(op);
  }
  const limits = { deadlineMs: startMs + o.budgetMs, budgetMs: o.budgetMs, memoLeft: o.memoEntriesMax ?? memoEntriesMaxDefault };
  const keys: KeyVerdict[] = [];
  let stopped = false;
  for (const [key, keyOps] of byKey) {
    if (stopped) {
      keys.push({ key, valid: 'unknown', ops: keyOps.length, reason: 'not checked: the budget ran out on an earlier key' });
      continue;
    }
    const verdict = new KeySearch(key, keyOps, model, limits).run();
    keys.push(verdict);
    if (verdict.valid === 'unknown') stopped = true;
  }
  const valid = keys.some((k) => k.valid === false) ? false : keys.every((k) => k.valid === true) ? true : 'unknown';
  return {
    valid, keys, ops: ops.length,
    unknownOps: ops.filter((op) => op.outcome === 'unknown').length,
    failOps: ops.filter((op) => op.outcome === 'fail').length,
    elapsedMs: performance.now() - startMs,
  };
}

function validate(ops: Op[]): void {
  const ids = new Set<number>();
  for (const op of ops) {
    const bad = (what: string): never => { throw new Error(`checker: malformed op ${formatOpSafe(op)}: ${what}`); };
    if (ids.has(op.id)) bad('duplicate id');
    ids.add(op.id);
    if (!Number.isFinite(op.callMs)) bad('callMs is not a finite number');
    if (op.outcome === 'ok') {
      if (op.returnMs === undefined || !Number.isFinite(op.returnMs)) bad('an ok op needs a finite returnMs');
      if ((op.returnMs as number) < op.callMs) bad('returnMs is before callMs');
    } else if (op.outcome !== 'fail' && op.outcome !== 'unknown') {
      bad(`outcome ${JSON.stringify(op.outcome)}`);
    }
  }
}

function formatOpSafe(op: Op): string {
  try { return formatOp(op); } catch { return `#${String(op.id)}`; }
}
