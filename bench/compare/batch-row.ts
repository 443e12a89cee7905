/**
 * bench:compare's `txn` rows: each client owns `batch` distinct keys and loops — lock them all in one
 * request, unlock them all in one request — through the driver's BatchLocks (Roster: `PUT /v1/txn`;
 * etcd: one Txn each way). A pair is still one key locked and unlocked, so pairs/s reads as in the other
 * rows; a lock step is one key's lock or unlock (two per pair). Latency is one round: the lock request's
 * start to the unlock's answer. Same window, warm-up, error rules and starvation count as bench/measure.ts.
 */
import { performance } from 'node:perf_hooks';
import type { BatchLocks, LockDriver } from '../peers/driver.ts';
import {
  errorsInARowMax, newTally, noteAcquired, noteError, notePair, pairsCapPerClient, summarize,
  type ClientTally, type RowOptions, type RowResult, type Window,
} from '../measure.ts';

/** A txn row's result: RowResult's figures, with `batch` keys per request. */
export type BatchRowResult = Omit<RowResult, 'scenario'> & { scenario: 'txn'; batch: number };

export function batchKeys(prefix: string, client: number, batch: number): string[] {
  return Array.from({ length: batch }, (_, i) => `${prefix}/txn/${client}/${i}`);
}

/** One client: lock its keys in one request, unlock them in one, again; a refusal is an error (no one else uses them). */
async function clientLoop(b: BatchLocks, name: string, client: number, keys: readonly string[], w: Window, t: ClientTally): Promise<void> {
  let inARow = 0;
  for (let round = 0; ; round++) {
    if (round >= pairsCapPerClient) { t.capped = true; return; }
    const start = performance.now();
    if (start >= w.until || inARow >= errorsInARowMax || w.stopped()) return;
    try {
      if (!(await b.acquireAll(client, keys))) throw new Error('refused on keys no other client uses');
      noteAcquired(t, w, performance.now(), keys.length);
      await b.releaseAll(client, keys);
    } catch (err) {
      noteError(t, `${name} txn ${keys[0]}…`, err);
      inARow++;
      continue;
    }
    inARow = 0;
    notePair(t, w, start, performance.now(), keys.length);
  }
}

/** One txn row: setup (a session or lease per client), warm-up + window, teardown in any case. */
export async function runBatchRow(d: LockDriver, clients: number, batch: number, o: Omit<RowOptions, 'sharedLatencyFrom'>): Promise<BatchRowResult> {
  const b = d.batch;
  if (b === undefined) throw new Error(`${d.name} has no batch form`);
  if (batch > b.max) throw new Error(`${d.name} takes at most ${b.max} keys per request, not ${batch}`);
  const keys = Array.from({ length: clients }, (_, c) => batchKeys(o.keyPrefix, c, batch));
  let tallies: ClientTally[];
  let w: Window;
  try {
    await d.setup(keys.map((k) => k[0]!), 'distinct');
    const from = performance.now() + o.warmupMs;
    w = { from, until: from + o.durationS * 1000, stopped: o.stopped ?? (() => false) };
    o.onWindow?.(w.from, w.until);
    tallies = keys.map(() => newTally(o.durationS));
    await Promise.all(keys.map((k, c) => clientLoop(b, d.name, c, k, w, tallies[c]!)));
  } finally {
    await d.teardown();
  }
  // No contention on a client's own keys: contendedPerS stays 0, as the tallies have no refusals.
  return { ...summarize(clients, tallies, w), scenario: 'txn', batch };
}
