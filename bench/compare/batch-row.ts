/**
 * bench:compare's `txn` rows: each client owns `batch` distinct keys and loops — lock them all in one
 * request, unlock them all in one request — through the driver's BatchLocks (Roster: `PUT /v1/txn`;
 * etcd: one Txn each way). A pair is still one key locked and unlocked, so pairs/s reads as in the other
 * rows; a lock step is one key's lock or unlock (two per pair). Latency is one round: the lock request's
 * start to the unlock's answer. Same window, warm-up, error rules and starvation count as bench/measure.ts.
 */
import { performance } from 'node:perf_hooks';
import type { BatchLocks, LockDriver } from '../peers/driver.ts';
import { percentile } from '../server.ts';
import type { RowOptions, RowResult } from '../measure.ts';

/** Caps per client and row, so a loop ends even if the clock check never trips. */
const roundsCapPerClient = 1_000_000;
/** Errors in a row after which a client gives up. */
const errorsInARowMax = 20;

/** A txn row's result: RowResult's figures, with `batch` keys per request. */
export type BatchRowResult = Omit<RowResult, 'scenario'> & { scenario: 'txn'; batch: number };

export function batchKeys(prefix: string, client: number, batch: number): string[] {
  return Array.from({ length: batch }, (_, i) => `${prefix}/txn/${client}/${i}`);
}

interface Tally { samples: number[]; pairs: number; perSecond: number[]; errors: number; firstError?: string; capped: boolean }

interface Window { from: number; until: number; stopped: () => boolean }

async function clientLoop(b: BatchLocks, name: string, client: number, keys: readonly string[], w: Window, t: Tally): Promise<void> {
  let inARow = 0;
  for (let round = 0; ; round++) {
    if (round >= roundsCapPerClient) { t.capped = true; return; }
    const start = performance.now();
    if (start >= w.until || inARow >= errorsInARowMax || w.stopped()) return;
    try {
      if (!(await b.acquireAll(client, keys))) throw new Error('refused on keys no other client uses');
      const acquiredAt = performance.now();
      if (acquiredAt >= w.from && acquiredAt < w.until) {
        const second = Math.floor((acquiredAt - w.from) / 1000);
        if (second < t.perSecond.length) t.perSecond[second]! += keys.length;
      }
      await b.releaseAll(client, keys);
    } catch (err) {
      t.errors++;
      t.firstError ??= `${name} txn ${keys[0]}…: ${err instanceof Error ? err.message : String(err)}`;
      inARow++;
      continue;
    }
    inARow = 0;
    const end = performance.now();
    if (start >= w.from) t.samples.push(end - start);
    if (end >= w.from && end <= w.until) t.pairs += keys.length;
  }
}

/** One txn row: setup (a session or lease per client), warm-up + window, teardown in any case. */
export async function runBatchRow(d: LockDriver, clients: number, batch: number, o: Omit<RowOptions, 'sharedLatencyFrom'>): Promise<BatchRowResult> {
  const b = d.batch;
  if (b === undefined) throw new Error(`${d.name} has no batch form`);
  if (batch > b.max) throw new Error(`${d.name} takes at most ${b.max} keys per request, not ${batch}`);
  const keys = Array.from({ length: clients }, (_, c) => batchKeys(o.keyPrefix, c, batch));
  let tallies: Tally[];
  let w: Window;
  try {
    await d.setup(keys.map((k) => k[0]!), 'distinct');
    const from = performance.now() + o.warmupMs;
    w = { from, until: from + o.durationS * 1000, stopped: o.stopped ?? (() => false) };
    o.onWindow?.(w.from, w.until);
    tallies = keys.map(() => ({ samples: [], pairs: 0, perSecond: new Array<number>(Math.max(1, Math.floor(o.durationS))).fill(0), errors: 0, capped: false }));
    await Promise.all(keys.map((k, c) => clientLoop(b, d.name, c, k, w, tallies[c]!)));
  } finally {
    await d.teardown();
  }
  const all = Float64Array.from(tallies.flatMap((t) => t.samples)).sort();
  const seconds = (w.until - w.from) / 1000;
  const whole = Math.floor(seconds);
  return {
    scenario: 'txn', clients, batch,
    pairsPerS: tallies.reduce((n, t) => n + t.pairs, 0) / seconds,
    p50Ms: percentile(all, 50), p99Ms: percentile(all, 99),
    contendedPerS: 0,
    minAcquiresPerS: whole >= 1
      ? Math.min(...tallies.map((t) => Math.min(...t.perSecond.slice(0, whole))))
      : Math.min(...tallies.map((t) => t.perSecond[0]! / seconds)),
    samples: all.length,
    errors: tallies.reduce((n, t) => n + t.errors, 0),
    firstError: tallies.find((t) => t.firstError !== undefined)?.firstError,
    capped: tallies.some((t) => t.capped),
  };
}
