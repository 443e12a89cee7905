/**
 * A direct mutual-exclusion check, cheaper and blunter than the linearizability search: two live sessions
 * must never DEFINITELY hold one lock at the same time.
 *
 * A session definitely holds a key from the return of an ok, true acquire (it took effect by then) until
 * the call of its next release (any outcome: a release cannot take effect before it is sent), or forever
 * if it never releases. Sessions with any invalidate op (not 'fail') are left out: an invalidation frees
 * the lock at a time the history does not show. So this finds overlaps the search also finds, with a
 * simpler explanation, and never a false alarm; it is not a substitute for the search.
 */
import type { Op } from './history.ts';

export interface HoldingInterval { key: string; session: string; fromMs: number; toMs: number; acquire: Op; release?: Op }

export interface MutualExclusionReport {
  valid: boolean;
  intervals: HoldingInterval[];
  overlaps: { key: string; a: HoldingInterval; b: HoldingInterval }[];
}

export function mutualExclusion(ops: Op[]): MutualExclusionReport {
  const invalidated = new Set(ops.filter((op) => op.f === 'invalidate' && op.outcome !== 'fail').map((op) => String(op.input)));
  const intervals = ops
    .filter((op) => op.f === 'acquire' && op.outcome === 'ok' && op.output === true && !invalidated.has(String(op.input)))
    .map((acquire) => holding(acquire, ops))
    .filter((h): h is HoldingInterval => h !== undefined);
  const overlaps: MutualExclusionReport['overlaps'] = [];
  const byKey = new Map<string, HoldingInterval[]>();
  for (const h of intervals) byKey.set(h.key, [...(byKey.get(h.key) ?? []), h]);
  for (const [key, list] of byKey) {
    list.sort((x, y) => x.fromMs - y.fromMs);
    for (let i = 0; i < list.length; i++) {
      const a = list[i] as HoldingInterval;
      for (let k = i + 1; k < list.length && (list[k] as HoldingInterval).fromMs < a.toMs; k++) {
        const b = list[k] as HoldingInterval;
        if (b.session !== a.session) overlaps.push({ key, a, b });
      }
    }
  }
  return { valid: overlaps.length === 0, intervals, overlaps };
}

/** From the acquire's return to the call of the session's first release on that key invoked after it. */
function holding(acquire: Op, ops: Op[]): HoldingInterval | undefined {
  const fromMs = acquire.returnMs as number;
  const release = ops
    .filter((op) => op.f === 'release' && op.key === acquire.key && op.input === acquire.input && op.outcome !== 'fail' && op.callMs >= acquire.callMs)
    .sort((x, y) => x.callMs - y.callMs)[0];
  const toMs = release === undefined ? Infinity : release.callMs;
  if (toMs <= fromMs) return undefined; // released before it was surely held: no definite interval
  const h: HoldingInterval = { key: acquire.key, session: String(acquire.input), fromMs, toMs, acquire };
  if (release !== undefined) h.release = release;
  return h;
}
