// Goal: the pieces every log shares, on their own: proposal encoding and its limits, the commit payload
// stamped and parsed back, the argument checks, and the log errors told apart by their guards.
import { describe, expect, it } from 'vitest';
import {
  checkAfterIndex, commitBytesMax, encodeAppend, encodeProposal, parseCommit, positiveIntOption, refusal,
  snapshotRefusal, stampBatch, stampMs, EntryClock,
} from '../../src/log/index.ts';
import {
  damagedError, failedError, isLogDamaged, isLogFailed, isLogOverloaded, isLogUnavailable, overloadedError,
  unavailableError,
} from '../../src/ports/index.ts';
import type { Proposal } from '../../src/ports/log.ts';

const barrier = (pid: string): Proposal => ({ pid, cmd: { t: 'barrier' } } as unknown as Proposal);

describe('commit payload', () => {
  it('stamps a batch with consecutive indexes after the last one and one entry time, parsing back to the same entries', () => {
    const batch = [encodeAppend([barrier('a'), barrier('b')]), encodeAppend([barrier('c')])];
    const { payload, entries } = stampBatch(batch, 41, 1_000);
    expect(payload).toBe('[{"i":42,"t":1000,"p":"a","c":{"t":"barrier"},"v":1},{"i":43,"t":1000,"p":"b","c":{"t":"barrier"},"v":1},'
      + '{"i":44,"t":1000,"p":"c","c":{"t":"barrier"},"v":1}]');
    expect(entries.map((e) => [e.index, e.atMs, e.pid])).toEqual([[42, 1000, 'a'], [43, 1000, 'b'], [44, 1000, 'c']]);
    expect(parseCommit(payload, 42)).toEqual(entries);
  });

  it('delivers each command as a replay from disk would read it back', () => {
    const cmds = [
      { t: 'kv.set', key: 'k', value: 'dmFsdWU=', flags: '0' },
      { t: 'txn.kv', ops: [{ verb: 'set', key: 'a', value: null, flags: '0', index: '0', session: '' }] },
      { t: 'kv.set', key: 'k', value: null, flags: '0', extra: undefined },
      { t: 'catalog.register', node: 'n', meta: { a: undefined, b: '1' }, n: -0, when: new Date(0), big: Number.NaN },
    ];
    const batch = [encodeAppend(cmds.map((cmd, k) => ({ pid: `p${k}`, cmd } as unknown as Proposal)))];
    const { payload, entries } = stampBatch(batch, 0, 5);
    const replayed = parseCommit(payload, 1);
    expect(entries).toStrictEqual(replayed);
    // A command that reads back unchanged is not copied; one that does not is the parsed copy.
    expect(entries[0]!.cmd).toBe(cmds[0]);
    expect(entries[1]!.cmd).toBe(cmds[1]);
    expect(Object.keys(entries[2]!.cmd)).toEqual(['t', 'key', 'value', 'flags']);
    expect(entries[3]!.cmd).toStrictEqual({ t: 'catalog.register', node: 'n', meta: { b: '1' }, n: 0, when: '1970-01-01T00:00:00.000Z', big: null });
  });

  it('refuses a command whose JSON is not an object', () => {
    const odd = { pid: 'a', cmd: { t: 'kv.set', toJSON: () => 'text' } } as unknown as Proposal;
    expect(() => encodeProposal(odd, 1000)).toThrow(/cmd must serialise to a JSON object/);
  });

  it.each([
    ['not JSON', '[{', 1, 'bad JSON'],
    ['not an array', '{"i":1}', 1, 'payload is not an array of entries'],
    ['empty', '[]', 1, 'commit without entries'],
    ['an index off the expected one', '[{"i":2,"t":0,"p":"a","c":{}}]', 1, 'index 2, expected 1'],
    ['an entry without a cmd object', '[{"i":1,"t":0,"p":"a","c":3}]', 1, 'entry 0 of the commit: bad cmd'],
  ])('says why a payload that is %s is no commit', (_, payload, first, reason) => {
    expect(parseCommit(payload, first)).toBe(reason);
  });

  it('refuses a proposal above the entry limit and an append above one commit', () => {
    expect(() => encodeProposal(barrier('a'), 10)).toThrow(/above the 10-byte entry limit/);
    expect(() => encodeProposal({ pid: 1 } as unknown as Proposal, 1000)).toThrow(TypeError);
    const big = 'x'.repeat(15 * 1024 * 1024);
    const huge = Array.from({ length: 5 }, (_, k) => ({ pid: `p${k}`, cmd: { t: 'kv.set', key: 'k', value: big, flags: '0' } } as Proposal));
    expect(() => encodeAppend(huge)).toThrow(new RegExp(`above the ${commitBytesMax}-byte commit limit`));
  });

  it('stamps the entry time from the clock, never before the previous entry', () => {
    expect(stampMs(500, 400)).toBe(500);
    expect(stampMs(500, 600)).toBe(600);
    expect(() => stampMs(0, Number.NaN)).toThrow(/not a time/);
  });

  it('goes at half the interval clock\'s rate while the wall clock is behind the entries (set back), until it catches up', () => {
    const t = { wall: 1_000_000, mono: 0 };
    const entryClock = new EntryClock({ nowMs: () => t.wall, monotonicMs: () => t.mono });
    const step = (ms: number) => { t.wall += ms; t.mono += ms; };
    let last = entryClock.stamp(0);
    expect(last).toBe(1_000_000);
    step(1000);
    expect(last = entryClock.stamp(last)).toBe(1_001_000); // in step: the wall clock
    t.wall -= 60_000; // set back a minute
    step(10_000);
    expect(last = entryClock.stamp(last)).toBe(1_006_000); // 10 s later, 5 s on: not stuck at 1,001,000
    for (let k = 0; k < 1000; k++) { step(100); last = entryClock.stamp(last); } // 100 s of commits
    expect(last).toBe(1_056_000); // still ahead of the wall (1,051,000), gaining on it
    step(30_000);
    expect(last = entryClock.stamp(last)).toBe(1_081_000); // the wall clock caught up: in step again
    step(5);
    expect(entryClock.stamp(last)).toBe(1_081_005);
  });

  it('goes one and a half times as fast while the wall clock is ahead (set forward), until it is in step; within a second it follows the wall clock', () => {
    const t = { wall: 2_000_000, mono: 0 };
    const entryClock = new EntryClock({ nowMs: () => t.wall, monotonicMs: () => t.mono });
    let last = entryClock.stamp(0);
    t.wall += 60_000; // set forward a minute
    t.wall += 2000; t.mono += 2000;
    expect(last = entryClock.stamp(last)).toBe(2_003_000); // 2 s later, 3 s on: not a minute
    for (let k = 0; k < 1000; k++) { t.wall += 100; t.mono += 100; last = entryClock.stamp(last); }
    expect(last).toBe(2_153_000); // 100 s more, 150 s on; the wall clock reads 2,162,000
    t.wall += 20_000; t.mono += 20_000;
    expect(last = entryClock.stamp(last)).toBe(2_182_000); // caught up: in step again
    t.wall += 900; // a step under a second is followed as it is
    t.wall += 10; t.mono += 10;
    expect(entryClock.stamp(last)).toBe(2_182_910);
  });

  it('stamps a restarted log\'s first commit at the last entry and goes on from there; a later entry of another node moves it on', () => {
    const t = { wall: 500_000, mono: 7_000 };
    const entryClock = new EntryClock({ nowMs: () => t.wall, monotonicMs: () => t.mono });
    expect(entryClock.stamp(900_000)).toBe(900_000); // the log's last entry is 400 s ahead of the wall clock
    t.wall += 2000; t.mono += 2000;
    expect(entryClock.stamp(900_000)).toBe(901_000);
    t.wall += 2000; t.mono += 2000;
    expect(entryClock.stamp(950_000)).toBe(950_000); // another node's entry at 950,000 came in between: taken as the time now
    const plain = new EntryClock({ nowMs: () => t.wall });
    expect(plain.stamp(900_000)).toBe(900_000);
    expect(plain.stamp(900_000)).toBe(900_000); // without an interval clock: the wall clock alone, as stampMs
  });
});

describe('entry time across the nodes of a cluster', () => {
  /** Nodes on one true clock (wall and interval clock alike), committing to one log whose last entry time is `log`. */
  function nodes(n: number, offsetsMs: readonly number[] = []) {
    const t = { wall: 3_000_000, mono: 0, log: 0 };
    const clocks = Array.from({ length: n }, (_, k) => new EntryClock({ nowMs: () => t.wall + (offsetsMs[k] ?? 0), monotonicMs: () => t.mono }));
    const commit = (k: number): number => (t.log = clocks[k]!.stamp(t.log));
    const pass = (ms: number) => { t.wall += ms; t.mono += ms; };
    return { t, commit, pass };
  }

  it('a node idle while others committed stamps its next commit at the time now, not ahead by its idle time', () => {
    const { t, commit, pass } = nodes(2);
    commit(0); commit(1);
    for (let k = 0; k < 250; k++) { pass(100); commit(0); } // 25 s of the first node's commits; the second idle
    pass(5);
    expect(commit(1)).toBe(t.wall); // in step with the clocks every node shares (it was 12.5 s ahead)
  });

  it('nodes committing in turn keep the log\'s time with their clocks (it never runs ahead of them)', () => {
    const { t, commit, pass } = nodes(3);
    let worstAheadMs = 0;
    for (let k = 0; k < 6_000; k++) {
      pass(1 + ((k * 7919) % 1500)); // irregular gaps, about 750 ms on average: 75 min in all
      commit((k * 31) % 3 === 0 ? 0 : (k % 2) + 1);
      worstAheadMs = Math.max(worstAheadMs, t.log - t.wall);
    }
    expect(worstAheadMs).toBe(0);
  });

  it('with one node\'s clock 3 s ahead, the log\'s time is at most that far ahead of the others\' and does not run away', () => {
    const { t, commit, pass } = nodes(3, [0, 0, 3_000]);
    let worstAheadMs = 0;
    for (let k = 0; k < 6_000; k++) {
      pass(1 + ((k * 7919) % 1500));
      commit((k * 31) % 3 === 0 ? 0 : (k % 2) + 1);
      worstAheadMs = Math.max(worstAheadMs, t.log - t.wall);
    }
    expect(worstAheadMs).toBeLessThanOrEqual(3_000);
  });
});

describe('argument checks', () => {
  it('takes a positive integer option within its bounds, or its default', () => {
    expect(positiveIntOption('L', 'n', undefined, 7)).toBe(7);
    expect(() => positiveIntOption('L', 'n', 0, 7)).toThrow('L: n must be an integer in 1..');
    expect(() => positiveIntOption('L', 'n', 11, 7, 10)).toThrow(/1\.\.10, got 11/);
  });

  it('refuses appends before open and after close, a failure first', () => {
    const failure = new Error('broken');
    expect(refusal('L', 'open', failure)).toBe(failure);
    expect(refusal('L', 'new', undefined)?.message).toMatch(/not open yet/);
    expect(refusal('L', 'closing', undefined)?.message).toMatch(/closed/);
    expect(refusal('L', 'open', undefined)).toBeUndefined();
  });

  it('refuses a subscription or a snapshot past the end, and a snapshot older than the newest', () => {
    expect(() => checkAfterIndex('L', 6, 5)).toThrow(/outside 0\.\.5/);
    expect(() => checkAfterIndex('L', 5, 5)).not.toThrow();
    expect(snapshotRefusal('L', { index: 6, data: null }, 5, 0)?.message).toMatch(/outside 0\.\.5/);
    expect(snapshotRefusal('L', { index: 3, data: null }, 5, 4)?.message).toMatch(/older than the newest snapshot 4/);
    expect(snapshotRefusal('L', { index: 4, data: null }, 5, 4)).toBeUndefined();
  });
});

describe('log errors', () => {
  it('are told apart by their guards, each only its own', () => {
    const errors = [
      overloadedError('L', 3, 2, 4), unavailableError('L', 'disk full'), failedError('L', new Error('EIO')), damagedError('bad frame'),
    ];
    const guards = [isLogOverloaded, isLogUnavailable, isLogFailed, isLogDamaged];
    expect(guards.map((g) => errors.map((e) => g(e)))).toEqual([
      [true, false, false, false], [false, true, false, false], [false, false, true, false], [false, false, false, true],
    ]);
    for (const g of guards) expect([g(new Error('other')), g(undefined), g({ code: 'LOG_FAILED' })]).toEqual([false, false, false]);
  });

  it('carry the words callers show', () => {
    expect(overloadedError('L', 3, 2, 4).message).toBe('L: log is overloaded: 3 entries already wait for the next commit and '
      + '2 more would pass queuedEntriesMax (4); retry later');
    expect(unavailableError('L', 'disk full').message).toBe('L: cannot store writes now: disk full; retry later');
    const cause = new Error('EIO');
    expect(failedError('L', cause)).toMatchObject({ message: 'L failed, no further appends are accepted: EIO', code: 'LOG_FAILED' });
  });
});
