// Goal: one behavioural contract (src/ports/log.ts) that every ReplicatedLog passes: the twin, the WAL, later JetStream.
import { afterEach, beforeEach, describe, expect, it } from 'vitest';
import type { Command } from '../../src/domain/commands.ts';
import { ManualClock, type Clock } from '../../src/ports/clock.ts';
import type { LogEntry, Proposal, ReplicatedLog } from '../../src/ports/log.ts';

/** Bounds a test may set; every log built here takes them as options of the same name. */
export interface LogLimits {
  /** Most entries waiting for the next commit; an append that would pass it fails with code LOG_OVERLOADED. */
  queuedEntriesMax?: number;
}

export interface LogFactory {
  /** A fresh, unopened instance over the factory's storage; `clock` if the test needs to steer time. */
  open(clock?: Clock, limits?: LogLimits): ReplicatedLog;
  /** Removes the storage. */
  cleanup(): Promise<void>;
}

/** A clock a test can set anywhere, backwards included, to check that atMs never decreases. */
class SetClock extends ManualClock {
  private at: number;
  constructor(at: number) {
    super(at);
    this.at = at;
  }
  set(ms: number): void {
    this.at = ms;
  }
  override nowMs(): number {
    return this.at;
  }
}

const kv = (key: string): Command => ({ t: 'kv.set', key, value: 'dg==', flags: '0' });
const proposal = (n: number): Proposal => ({ pid: `n1-${n}`, cmd: kv(`k${n}`) });
const proposals = (from: number, count: number): Proposal[] =>
  Array.from({ length: count }, (_, k) => proposal(from + k));

/** Subscribes and collects everything delivered, checking the stream stays consecutive. */
export function collect(log: ReplicatedLog, afterIndex = 0): LogEntry[] {
  const got: LogEntry[] = [];
  log.subscribe(afterIndex, (batch) => {
    for (const e of batch) {
      expect(e.index).toBe((got.at(-1)?.index ?? afterIndex) + 1);
      got.push(e);
    }
  });
  return got;
}

const indexes = (entries: readonly LogEntry[]): number[] => entries.map((e) => e.index);
const range = (from: number, to: number): number[] => Array.from({ length: to - from + 1 }, (_, k) => from + k);

type Started = { log: ReplicatedLog; snapshot: Awaited<ReturnType<ReplicatedLog['open']>> };

/** What every group of the contract uses: open a log over the test's storage (closed after the test). */
interface Harness {
  start(clock?: Clock, limits?: LogLimits): Promise<Started>;
  /** A log over the test's storage, not opened. */
  unopenedLog(): ReplicatedLog;
}

export function logCompliance(name: string, makeFactory: () => LogFactory): void {
  describe(`${name} satisfies the ReplicatedLog contract`, () => {
    const harness = useHarness(makeFactory);
    orderContract(harness);
    restartContract(harness);
    refusalContract(harness);
  });
}

/** A fresh factory (storage) per test; every log opened on it is closed after the test, then the storage removed. */
function useHarness(makeFactory: () => LogFactory): Harness {
  let factory: LogFactory;
  const instances: ReplicatedLog[] = [];
  beforeEach(() => {
    factory = makeFactory();
  });
  afterEach(async () => {
    for (const log of instances.splice(0)) await log.close().catch(() => undefined);
    await factory.cleanup();
  });
  const unopenedLog = (clock?: Clock, limits?: LogLimits): ReplicatedLog => {
    const log = factory.open(clock, limits);
    instances.push(log);
    return log;
  };
  return {
    unopenedLog: () => unopenedLog(),
    start: async (clock, limits) => {
      const log = unopenedLog(clock, limits);
      return { log, snapshot: await log.open() };
    },
  };
}

/** Indexes, delivery order and entry times. */
function orderContract({ start }: Harness): void {
  it('numbers entries consecutively from 1 and reports lastIndex', async () => {
    const { log, snapshot } = await start();
    expect(snapshot).toBeUndefined();
    expect(log.lastIndex()).toBe(0);
    const got = collect(log);
    await log.append(proposals(1, 3));
    await log.append(proposals(4, 2));
    expect(indexes(got)).toEqual(range(1, 5));
    expect(got.map((e) => e.pid)).toEqual(proposals(1, 5).map((p) => p.pid));
    expect(got[2]!.cmd).toEqual(kv('k3'));
    expect(log.lastIndex()).toBe(5);
    await log.append([]);
    expect(log.lastIndex()).toBe(5);
  });

  it('calls the listener with an append\'s entries before the append resolves', async () => {
    const { log } = await start();
    const got = collect(log);
    const done = log.append(proposals(1, 2)).then(() => indexes(got));
    expect(await done).toEqual([1, 2]);
  });

  it('delivers each entry of many concurrent appends once, in order, each append contiguous', async () => {
    const { log } = await start();
    const got = collect(log);
    const appends = Array.from({ length: 300 }, (_, k) => proposals(k * 10, 1 + (k % 3)));
    await Promise.all(appends.map((ps) => log.append(ps)));
    const total = appends.reduce((sum, ps) => sum + ps.length, 0);
    expect(indexes(got)).toEqual(range(1, total));
    const position = new Map(got.map((e) => [e.pid, e.index]));
    expect(position.size).toBe(total);
    for (const ps of appends) {
      const at = ps.map((p) => position.get(p.pid)!);
      expect(at).toEqual(range(at[0]!, at[0]! + ps.length - 1));
    }
  });

  it('stamps atMs that never decreases, even when the clock steps back or across a restart', async () => {
    const clock = new SetClock(5_000);
    const { log } = await start(clock);
    const got = collect(log);
    await log.append(proposals(1, 2));
    clock.set(1_000);
    await log.append(proposals(3, 1));
    clock.set(9_000);
    await log.append(proposals(4, 1));
    await log.close();
    clock.set(2_000);
    const { log: again } = await start(clock);
    const replayed = collect(again);
    await again.append(proposals(5, 1));
    const times = replayed.map((e) => e.atMs);
    expect(times).toEqual(got.map((e) => e.atMs).concat(times.slice(4)));
    for (const [k, t] of times.entries()) {
      expect(Number.isFinite(t)).toBe(true);
      if (k > 0) expect(t).toBeGreaterThanOrEqual(times[k - 1]!);
    }
  });
}

/** What a reopened log holds: replay, afterIndex, snapshots, appends pending at close. */
function restartContract({ start }: Harness): void {
  it('replays everything appended before close on reopen', async () => {
    const { log } = await start();
    const live = collect(log);
    await log.append(proposals(1, 4));
    await log.append(proposals(5, 3));
    await log.close();
    const { log: again, snapshot } = await start();
    expect(snapshot).toBeUndefined();
    expect(again.lastIndex()).toBe(7);
    expect(collect(again)).toEqual(live);
  });

  it('skips entries up to afterIndex when subscribing', async () => {
    const { log } = await start();
    await log.append(proposals(1, 6));
    const got = collect(log, 4);
    expect(indexes(got)).toEqual([5, 6]);
    await log.append(proposals(7, 1));
    expect(indexes(got)).toEqual([5, 6, 7]);
  });

  it('returns the snapshot on reopen, replays only what follows it, and continues the index', async () => {
    const { log } = await start();
    await log.append(proposals(1, 10));
    await log.saveSnapshot({ index: 6, data: { applied: 6, keys: ['k1', 'k6'] } });
    await log.append(proposals(11, 2));
    await log.close();
    const { log: again, snapshot } = await start();
    expect(snapshot).toEqual({ index: 6, data: { applied: 6, keys: ['k1', 'k6'] } });
    const got = collect(again, snapshot!.index);
    expect(indexes(got)).toEqual(range(7, 12));
    await again.append(proposals(13, 1));
    expect(again.lastIndex()).toBe(13);
    expect(got.at(-1)).toMatchObject({ index: 13, pid: 'n1-13' });
  });

  it('reports its indexes in status(): last, compaction point and snapshot, consistent with lastIndex', async () => {
    const { log } = await start();
    if (log.status === undefined) return;
    collect(log);
    await log.append(proposals(1, 10));
    expect(log.status()).toMatchObject({ lastIndex: 10, snapshotIndex: 0, firstIndex: 1 });
    await log.saveSnapshot({ index: 6, data: null });
    const after = log.status();
    expect(after).toMatchObject({ lastIndex: 10, snapshotIndex: 6 });
    // Entries may be dropped up to the snapshot, never past it.
    expect(after.firstIndex ?? 1).toBeGreaterThanOrEqual(1);
    expect(after.firstIndex ?? 1).toBeLessThanOrEqual(7);
  });

  it('commits appends still pending when close is called', async () => {
    const { log } = await start();
    const pending = [log.append(proposals(1, 2)), log.append(proposals(3, 1))];
    await log.close();
    await expect(Promise.all(pending)).resolves.toBeDefined();
    const { log: again } = await start();
    expect(indexes(collect(again))).toEqual([1, 2, 3]);
  });
}

/** Appends and snapshots the log refuses: before open, after close, past its bounds, past its end. */
function refusalContract({ start, unopenedLog }: Harness): void {
  it('rejects append before open and after close', async () => {
    const unopened = unopenedLog();
    await expect(unopened.append(proposals(1, 1))).rejects.toThrow();
    const { log } = await start();
    await log.close();
    await expect(log.append(proposals(1, 1))).rejects.toThrow(/closed/);
  });

  it('rejects at once, with code LOG_OVERLOADED, an append that would overfill the queue, then takes appends again', async () => {
    const { log } = await start(undefined, { queuedEntriesMax: 5 });
    const got = collect(log);
    const settled: string[] = [];
    const track = (name: string, p: Promise<void>): Promise<void> =>
      p.then(() => void settled.push(`${name} ok`), (err: unknown) => {
        settled.push(`${name} failed`);
        throw err;
      });
    // Same tick: all of these wait for the first commit together.
    const first = track('first', log.append(proposals(1, 3)));
    const second = track('second', log.append(proposals(4, 2)));
    const third = track('third', log.append(proposals(6, 1)));
    const err: unknown = await third.catch((e: unknown) => e);
    expect(err).toBeInstanceOf(Error);
    expect((err as { code?: unknown }).code).toBe('LOG_OVERLOADED');
    expect((err as Error).message).toMatch(/overloaded/);
    await Promise.all([first, second]);
    expect(settled).toEqual(['third failed', 'first ok', 'second ok']);
    expect(indexes(got)).toEqual(range(1, 5));
    // Not a failed log: once the queue drained, appends are taken again.
    await log.append(proposals(6, 1));
    expect(log.lastIndex()).toBe(6);
    expect(got.at(-1)?.pid).toBe('n1-6');
  });

  it('refuses, as not retryable, an append larger than the queue could ever hold', async () => {
    const { log } = await start(undefined, { queuedEntriesMax: 5 });
    const err: unknown = await log.append(proposals(1, 6)).catch((e: unknown) => e);
    expect(err).toBeInstanceOf(RangeError);
    expect((err as Error).message).toMatch(/queuedEntriesMax/);
    expect((err as { code?: unknown }).code).toBeUndefined();
    await log.append(proposals(1, 5));
    expect(log.lastIndex()).toBe(5);
  });

  it('refuses a snapshot or a subscription past lastIndex', async () => {
    const { log } = await start();
    await log.append(proposals(1, 2));
    await expect(log.saveSnapshot({ index: 3, data: null })).rejects.toThrow(/lastIndex/);
    expect(() => log.subscribe(3, () => undefined)).toThrow(/lastIndex/);
  });
}
