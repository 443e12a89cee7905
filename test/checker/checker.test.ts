// Goal: the history checker says "valid" for linearizable histories (with concurrency, lost answers and
// refused ops), "invalid" with a witness for the classic anomalies (stale read, lost write, two lock
// holders, foreign release, cas from a value never held), and catches tokens going backwards at a fenced
// resource; its history recorder round-trips. Generated histories and the budget: generated.test.ts.
import { describe, expect, test } from 'vitest';
import { casRegister, checkFencing, checkLinearizable, HistoryRecorder, makeMutex, mutex, mutualExclusion, ProtectedResource, type Op } from './index.ts';
import { acq, budget, cas, check, expectInvalid, expectValid, inv, lost, ok, r, refused, rel, w } from './ops.ts';

describe('CAS register: good histories', () => {
  test('sequential: write, read, cas true and false, delete', () => {
    expectValid([
      r('a', null, 0, 1), w('a', 'x', 2, 3), r('b', 'x', 4, 5), cas('a', 'x', 'y', true, 6, 7),
      cas('b', 'x', 'z', false, 8, 9), r('b', 'y', 10, 11), ok('a', 'delete', null, true, 12, 13), r('a', null, 14, 15),
      cas('a', null, 'q', true, 16, 17), r('b', 'q', 18, 19),
    ], casRegister);
  });

  test('concurrent writes and reads may take any order inside their intervals', () => {
    // w(a) [0,10] ‖ w(b) [1,11] ‖ read b [2,12]; then a read of a: order b, read, a.
    expectValid([w('p', 'a', 0, 10), w('q', 'b', 1, 11), r('s', 'b', 2, 12), r('s', 'a', 13, 14)], casRegister);
  });

  test('intervals are closed: a read invoked when a write returns may see the old value', () => {
    expectValid([w('p', 'a', 0, 10), r('q', null, 10, 12)], casRegister);
  });

  test('an unknown write may have taken effect, late, or never', () => {
    expectValid([w('p', 'a', 0, 1), lost('q', 'write', 'b', 2), r('s', 'b', 20, 21)], casRegister);
    expectValid([w('p', 'a', 0, 1), lost('q', 'write', 'b', 2), r('s', 'a', 20, 21)], casRegister);
    expectValid([w('p', 'a', 0, 1), lost('q', 'write', 'b', 2), r('s', 'a', 20, 21), r('s', 'b', 30, 31)], casRegister);
  });

  test('an unknown cas applies only from its `from` value', () => {
    expectValid([w('p', 'a', 0, 1), lost('q', 'cas', { from: 'a', to: 'b' }, 2), r('s', 'b', 5, 6)], casRegister);
    const read = r('s', 'b', 5, 6);
    expectInvalid([w('p', 'a', 0, 1), lost('q', 'cas', { from: 'z', to: 'b' }, 2), read], casRegister, read);
  });

  test('failed ops are dropped: they never took effect', () => {
    expectValid([w('p', 'a', 0, 1), refused('q', 'write', 'b', 2, 3), r('s', 'a', 4, 5)], casRegister);
    const read = r('s', 'b', 4, 5);
    expectInvalid([w('p', 'a', 0, 1), refused('q', 'write', 'b', 2, 3), read], casRegister, read);
  });

  test('keys are independent', () => {
    expectValid([
      ok('p', 'write', 'a', true, 0, 1, 'k1'), ok('p', 'write', 'b', true, 2, 3, 'k2'),
      ok('q', 'read', null, 'a', 4, 5, 'k1'), ok('q', 'read', null, 'b', 4, 5, 'k2'),
    ], casRegister);
  });
});

describe('CAS register: bad histories are found with a witness', () => {
  test('a stale read: an old value after a later write completed', () => {
    const stale = r('s', 'a', 4, 5);
    expectInvalid([w('p', 'a', 0, 1), w('q', 'b', 2, 3), stale], casRegister, stale);
  });

  test('a lost write: an acknowledged write that no later read sees', () => {
    const read = r('q', null, 2, 3);
    expectInvalid([w('p', 'a', 0, 1), read], casRegister, read);
    const second = cas('q', null, 'b', true, 2, 3);
    expectInvalid([cas('p', null, 'a', true, 0, 1), second], casRegister, second);
  });

  test('a cas true from a value the register did not hold', () => {
    const bad = cas('q', 'b', 'c', true, 2, 3);
    expectInvalid([w('p', 'a', 0, 1), bad], casRegister, bad);
  });

  test('a cas false while the register held its `from` value', () => {
    const bad = cas('q', 'a', 'c', false, 2, 3);
    expectInvalid([w('p', 'a', 0, 1), bad], casRegister, bad);
  });

  test('the witness is small and the reason names the stuck op', () => {
    const ops: Op[] = [];
    for (let i = 0; i < 200; i++) ops.push(w('p', `v${i}`, 4 * i, 4 * i + 1), r('q', `v${i}`, 4 * i + 2, 4 * i + 3));
    const stale = r('q', 'v10', 900, 901);
    ops.push(stale);
    const rep = check(ops, casRegister);
    const v = rep.keys[0];
    if (v?.valid !== false) throw new Error('expected invalid');
    expect(v.witness.length).toBeLessThanOrEqual(12);
    expect(v.witness.map((op) => op.id)).toContain(stale.id);
    expect(v.reason).toContain(`#${stale.id}`);
  });
});

describe('mutex', () => {
  test('good: acquire, re-acquire, release, contention, foreign release false', () => {
    expectValid([
      acq('s1', true, 0, 1), acq('s1', true, 2, 3), acq('s2', false, 4, 5), rel('s2', false, 6, 7),
      rel('s1', true, 8, 9), rel('s1', false, 10, 11), acq('s2', true, 12, 13), rel('s2', true, 14, 15),
    ], mutex);
  });

  test('good: concurrent acquires, one wins', () => {
    expectValid([acq('s1', false, 0, 10), acq('s2', true, 1, 11), acq('s3', false, 2, 12), rel('s2', true, 13, 14)], mutex);
  });

  test('good: invalidation frees the lock and ends the session', () => {
    expectValid([
      acq('s1', true, 0, 1), inv('s1', 2, 3), acq('s2', true, 4, 5), acq('s1', false, 6, 7), rel('s1', false, 8, 9),
      ok('r', 'holder', null, 's2', 10, 11),
    ], mutex);
  });

  test('good: an unknown invalidation (TTL expiry at an unseen time) and an unknown acquire that took effect', () => {
    expectValid([acq('s1', true, 0, 1), lost('reaper', 'invalidate', 's1', 2), acq('s2', true, 5, 6)], mutex);
    expectValid([lost('s1', 'acquire', 's1', 0), acq('s2', false, 5, 6), rel('s1', true, 7, 8), acq('s2', true, 9, 10)], mutex);
  });

  test('bad: two holders at once (second acquire true, first never released nor invalidated)', () => {
    const second = acq('s2', true, 2, 3);
    expectInvalid([acq('s1', true, 0, 1), second], mutex, second);
    expect(mutualExclusion([acq('s1', true, 0, 1), second]).valid).toBe(false);
  });

  test('bad: a release true by a non-holder', () => {
    const bad = rel('s2', true, 2, 3);
    expectInvalid([acq('s1', true, 0, 1), bad], mutex, bad);
  });

  test('bad: an ended session acquires again', () => {
    const bad = acq('s1', true, 4, 5);
    expectInvalid([acq('s1', true, 0, 1), inv('s1', 2, 3), bad], mutex, bad);
  });

  test('lock-delay: a free lock may refuse acquires after an invalidation, never after a release', () => {
    const afterInvalidation = [acq('s1', true, 0, 1), inv('s1', 2, 3), acq('s2', false, 4, 5), acq('s2', true, 6, 7)];
    expect(check(afterInvalidation, mutex).valid).toBe(false);
    expectValid(afterInvalidation, makeMutex({ lockDelay: true }));
    const refusedAfterRelease = acq('s3', false, 10, 11);
    expectInvalid([...afterInvalidation, rel('s2', true, 8, 9), refusedAfterRelease], makeMutex({ lockDelay: true }), refusedAfterRelease);
  });

  test('mutualExclusion: definite overlaps only; invalidated sessions are left out', () => {
    const twoHolders = [acq('s1', true, 0, 1), acq('s2', true, 2, 3), rel('s1', true, 4, 5), rel('s2', true, 6, 7)];
    const rep = mutualExclusion(twoHolders);
    expect(rep.overlaps).toHaveLength(1);
    expect([rep.overlaps[0]?.a.session, rep.overlaps[0]?.b.session]).toEqual(['s1', 's2']);
    expect(mutualExclusion([acq('s1', true, 0, 1), rel('s1', true, 2, 3), acq('s2', true, 4, 5)]).valid).toBe(true);
    expect(mutualExclusion([acq('s1', true, 0, 1), inv('s1', 2, 3), acq('s2', true, 4, 5)]).valid).toBe(true);
  });
});

describe('fencing', () => {
  test('increasing tokens are valid; repeating one holder\'s token is fine', () => {
    const res = new ProtectedResource(true);
    for (const [h, t] of [['a', 3], ['a', 3], ['b', 7], ['c', 9]] as const) expect(res.write(h, 'k', t)).toBe(true);
    expect(checkFencing(res.writes())).toMatchObject({ valid: true, writes: 4, rejected: 0, violations: [] });
  });

  test('a lower token accepted by an unfenced resource is a violation; the fenced one rejects it', () => {
    const unfenced = new ProtectedResource(false);
    unfenced.write('a', 'k', 5);
    unfenced.write('b', 'k', 8);
    expect(unfenced.write('a', 'k', 5)).toBe(true); // the paused old holder wakes up
    const bad = checkFencing(unfenced.writes());
    expect(bad.valid).toBe(false);
    expect(bad.violations).toHaveLength(1);
    expect(bad.violations[0]).toMatchObject({ key: 'k', before: { holder: 'b', token: 8 }, after: { holder: 'a', token: 5 } });

    const fenced = new ProtectedResource(true);
    fenced.write('a', 'k', 5);
    fenced.write('b', 'k', 8);
    expect(fenced.write('a', 'k', 5)).toBe(false);
    expect(fenced.write('a', 'other', 5)).toBe(true); // per key
    expect(checkFencing(fenced.writes())).toMatchObject({ valid: true, writes: 4, rejected: 1, violations: [] });
  });

  test('one token accepted from two holders is reported', () => {
    const res = new ProtectedResource(true);
    res.write('a', 'k', 5);
    res.write('b', 'k', 5);
    const rep = checkFencing(res.writes());
    expect(rep.valid).toBe(false);
    expect(rep.sharedTokens).toHaveLength(1);
  });
});

describe('HistoryRecorder', () => {
  test('records, counts open ops as unknown, and round-trips through JSON to the same verdict', () => {
    let now = 0;
    const rec = new HistoryRecorder(() => now++);
    const w1 = rec.invoke('c1', 'k', 'write', 'a');
    w1.ok(true);
    const r1 = rec.invoke('c2', 'k', 'read', null);
    r1.ok('a');
    rec.invoke('c3', 'k', 'write', 'b').unknown();
    rec.invoke('c4', 'k', 'write', 'c').fail();
    rec.invoke('c5', 'k', 'cas', { from: 'a', to: 'd' }); // never settled
    expect(() => w1.ok(true)).toThrow(/settled twice/);
    const ops = rec.ops();
    expect(ops.map((op) => op.outcome)).toEqual(['ok', 'ok', 'unknown', 'fail', 'unknown']);
    expect(ops[2]?.returnMs).toBeUndefined();
    expect(ops[3]?.returnMs).toBeDefined();

    const again = HistoryRecorder.fromJSON(JSON.parse(JSON.stringify(rec)));
    expect(again.ops()).toEqual(ops);
    const verdict = (x: Op[]) => { const { elapsedMs: _, ...rest } = checkLinearizable(x, casRegister, budget); return rest; };
    expect(verdict(again.ops())).toEqual(verdict(ops));
    expect(verdict(ops).valid).toBe(true);
    expect(() => HistoryRecorder.fromJSON({ ops: 'nope' })).toThrow(/not a history/);
  });

  test('malformed histories are refused', () => {
    expect(() => check([w('p', 'a', 5, 4)], casRegister)).toThrow(/before callMs/);
    const a = w('p', 'a', 0, 1);
    expect(() => check([a, { ...a }], casRegister)).toThrow(/duplicate id/);
    expect(() => check([ok('p', 'frobnicate', null, true, 0, 1)], casRegister)).toThrow(/unknown operation/);
  });
});
