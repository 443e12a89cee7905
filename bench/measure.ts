/**
 * The measuring loop every lock bench shares: N clients, each a sequential loop of acquire + release
 * through a LockDriver, over a warm-up and a measured window; pairs/s, nearest-rank p50/p99 of every
 * pair, refused tries per second, errors, and the fewest acquires any client got in any whole second of
 * the window (the starvation check). bench/README.md says how each number is read.
 */
import { performance } from 'node:perf_hooks';
import type { LockDriver, Scenario } from './peers/driver.ts';
import { percentile } from './server.ts';

export type { Scenario };

/** Hard caps per client and row, so a loop ends even if the clock check never trips. */
export const pairsCapPerClient = 1_000_000;
const attemptsCapPerClient = 5_000_000;
/** Errors in a row after which a client gives up: a broken server should not be hammered for the whole run. */
export const errorsInARowMax = 20;

export interface RowOptions {
  durationS: number;
  /** Time before the window whose pairs are not counted. */
  warmupMs: number;
  /**
   * Where a shared-key pair's latency starts: at the lock call, so waiting for the holder counts
   * (`lock`), or at the request that won, so time spent losing does not (`winning-try`, bench:locks).
   */
  sharedLatencyFrom: 'lock' | 'winning-try';
  /** Keys are `<prefix>/<client>` (distinct) or `<prefix>/shared`. */
  keyPrefix: string;
  /** Polled before every pair: true ends the row early (an interrupted run). @default never */
  stopped?: () => boolean;
  /** Told the measured window (performance.now() times) once the setup is done and it is fixed. */
  onWindow?: (from: number, until: number) => void;
}

export interface RowResult {
  scenario: Scenario;
  clients: number;
  pairsPerS: number;
  p50Ms: number;
  p99Ms: number;
  /** Refused tries (or recipe waits) completing inside the window, per second. */
  contendedPerS: number;
  /** Fewest acquires one client completed in one whole second of the window (per second if the window is shorter). */
  minAcquiresPerS: number;
  samples: number;
  errors: number;
  firstError: string | undefined;
  capped: boolean;
}

export interface Window {
  from: number;
  /** No new pair or attempt starts after this. */
  until: number;
  stopped: () => boolean;
}

export interface ClientTally {
  samples: number[];
  pairsInWindow: number;
  refusedInWindow: number;
  /** Acquires per whole second of the window (index = second). */
  perSecond: number[];
  errors: number;
  firstError: string | undefined;
  capped: boolean;
}

export function newTally(seconds: number): ClientTally {
  return { samples: [], pairsInWindow: 0, refusedInWindow: 0, perSecond: new Array<number>(Math.max(1, Math.floor(seconds))).fill(0),
    errors: 0, firstError: undefined, capped: false };
}

const message = (err: unknown) => (err instanceof Error ? err.message : String(err));

export function noteError(t: ClientTally, what: string, err: unknown): void {
  t.errors += 1;
  t.firstError ??= `${what}: ${message(err)}`;
}

/** `keys` acquired at `at` (a batch row takes several in one request). */
export function noteAcquired(t: ClientTally, w: Window, at: number, keys = 1): void {
  if (at < w.from || at >= w.until) return;
  const second = Math.floor((at - w.from) / 1000);
  if (second < t.perSecond.length) t.perSecond[second]! += keys;
}

/** One round from `start` to `end`: its latency, and `keys` pairs if it ended in the window. */
export function notePair(t: ClientTally, w: Window, start: number, end: number, keys = 1): void {
  if (start >= w.from) t.samples.push(end - start);
  if (end >= w.from && end <= w.until) t.pairsInWindow += keys;
}

/** Distinct keys: try, release, again; a refusal on the client's own key is an error. */
async function distinctLoop(d: LockDriver, client: number, key: string, w: Window, t: ClientTally): Promise<void> {
  let inARow = 0;
  for (let i = 0; ; i++) {
    if (i >= pairsCapPerClient) { t.capped = true; return; }
    const start = performance.now();
    if (start >= w.until || inARow >= errorsInARowMax || w.stopped()) return;
    try {
      if (!(await d.tryAcquire(client, key))) throw new Error('refused on a key no other client uses');
      noteAcquired(t, w, performance.now());
      await d.release(client, key);
    } catch (err) {
      noteError(t, `${d.name} ${key}`, err);
      inARow++;
      continue;
    }
    inARow = 0;
    notePair(t, w, start, performance.now());
  }
}

/** One shared key: lock by the driver's recipe, release, again. */
async function sharedLoop(d: LockDriver, client: number, key: string, w: Window, t: ClientTally, from: RowOptions['sharedLatencyFrom']): Promise<void> {
  let inARow = 0;
  let attempts = 0;
  for (let pairs = 0; ; pairs++) {
    if (pairs >= pairsCapPerClient || attempts >= attemptsCapPerClient) { t.capped = true; return; }
    const start = performance.now();
    if (start >= w.until || inARow >= errorsInARowMax || w.stopped()) return;
    try {
      const got = await d.lock(client, key, w.until, () => {
        attempts++;
        const at = performance.now();
        if (at >= w.from && at <= w.until) t.refusedInWindow++;
      });
      attempts++;
      const acquiredAt = performance.now();
      if (!got.held) return;
      noteAcquired(t, w, acquiredAt);
      await d.release(client, key);
      inARow = 0;
      notePair(t, w, from === 'lock' ? start : got.wonTryAt, performance.now());
    } catch (err) {
      noteError(t, `${d.name} ${key}`, err);
      inARow++;
    }
  }
}

export function keysFor(scenario: Scenario, clients: number, prefix: string): string[] {
  return Array.from({ length: clients }, (_, c) => (scenario === 'distinct' ? `${prefix}/${c}` : `${prefix}/shared`));
}

/** One row: setup, warm-up + window, teardown (also when setup or the loops fail). */
export async function runRow(d: LockDriver, scenario: Scenario, clients: number, o: RowOptions): Promise<RowResult> {
  const keys = keysFor(scenario, clients, o.keyPrefix);
  let tallies: ClientTally[];
  let w: Window;
  try {
    await d.setup(keys, scenario);
    const from = performance.now() + o.warmupMs;
    w = { from, until: from + o.durationS * 1000, stopped: o.stopped ?? (() => false) };
    o.onWindow?.(w.from, w.until);
    tallies = keys.map(() => newTally(o.durationS));
    await Promise.all(keys.map((key, c) => (scenario === 'distinct'
      ? distinctLoop(d, c, key, w, tallies[c]!)
      : sharedLoop(d, c, key, w, tallies[c]!, o.sharedLatencyFrom))));
  } finally {
    await d.teardown();
  }
  return { scenario, ...summarize(clients, tallies, w) };
}

/** A row's figures from its clients' tallies over window `w`. */
export function summarize(clients: number, tallies: ClientTally[], w: Window): Omit<RowResult, 'scenario'> {
  const all = new Float64Array(tallies.reduce((n, t) => n + t.samples.length, 0));
  let at = 0;
  for (const t of tallies) { all.set(t.samples, at); at += t.samples.length; }
  all.sort();
  const seconds = (w.until - w.from) / 1000;
  const wholeSeconds = Math.floor(seconds);
  const minPerSecond = wholeSeconds >= 1
    ? Math.min(...tallies.map((t) => Math.min(...t.perSecond.slice(0, wholeSeconds))))
    : Math.min(...tallies.map((t) => t.perSecond[0]! / seconds));
  return {
    clients,
    pairsPerS: tallies.reduce((n, t) => n + t.pairsInWindow, 0) / seconds,
    p50Ms: percentile(all, 50), p99Ms: percentile(all, 99),
    contendedPerS: tallies.reduce((n, t) => n + t.refusedInWindow, 0) / seconds,
    minAcquiresPerS: minPerSecond,
    samples: all.length,
    errors: tallies.reduce((n, t) => n + t.errors, 0),
    firstError: tallies.find((t) => t.firstError !== undefined)?.firstError,
    capped: tallies.some((t) => t.capped),
  };
}
