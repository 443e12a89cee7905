// Goal: the history checker of issue 9 says "valid" for linearizable histories (with concurrency, lost
// answers and refused ops), "invalid" with a witness for the classic anomalies (stale read, lost write,
// two lock holders, foreign release, cas from a value never held), "unknown" when its budget runs out,
// and catches tokens going backwards at a fenced resource. Generated histories come from a seeded
// simulation (the seed is printed; set CHECKER_SEED to replay one).
import { describe, expect, test } from 'vitest';
import {
  casRegister, checkFencing, checkLinearizable, HistoryRecorder, makeMutex, mutex, mutualExclusion,
  ProtectedResource, type Model, type Op, type Report,
} from './index.ts';
import { lockObject, mulberry32, registerObject, simulate } from './sim.ts';

const budget = { budgetMs: 10_000 };
let nextId = 0;

/** An ok op on key `k` unless given: answered at `ret` with `output`. */
function ok(process: string, f: string, input: unknown, output: unknown, call: number, ret: number, key = 'k'): Op {
  return { id: nextId++, process, key, f, input, output, outcome: 'ok', callMs: call, returnMs: ret };
}
function lost(process: string, f: string, input: unknown, call: number, key = 'k'): Op {
  return { id: nextId++, process, key, f, input, outcome: 'unknown', callMs: call };
}
function refused(process: string, f: string, input: unknown, call: number, ret: number, key = 'k'): Op {
  return { id: nextId++, process, key, f, input, outcome: 'fail', callMs: call, returnMs: ret };
}
const w = (p: string, v: string, call: number, ret: number) => ok(p, 'write', v, true, call, ret);
const r = (p: string, v: string | null, call: number, ret: number) => ok(p, 'read', null, v, call, ret);
const cas = (p: string, from: string | null, to: string, out: boolean, call: number, ret: number) => ok(p, 'cas', { from, to }, out, call, ret);
const acq = (s: string, out: boolean, call: number, ret: number) => ok(s, 'acquire', s, out, call, ret);
const rel = (s: string, out: boolean, call: number, ret: number) => ok(s, 'release', s, out, call, ret);
const inv = (s: string, call: number, ret: number) => ok('reaper', 'invalidate', s, true, call, ret);

function check(ops: Op[], model: Model<unknown>): Report {
  return checkLinearizable(ops, model, budget);
}
function expectValid(ops: Op[], model: Model<unknown>): void {
  const rep = check(ops, model);
  expect(rep.keys.filter((k) => k.valid !== true)).toEqual([]);
  expect(rep.valid).toBe(true);
}
/** Invalid, and the witness contains the op that cannot be placed. */
function expectInvalid(ops: Op[], model: Model<unknown>, culprit: Op): void {
  const rep = check(ops, model);
  expect(rep.valid).toBe(false);
  const v = rep.keys[0];
  if (v?.valid !== false) throw new Error(`expected an invalid key, got ${JSON.stringify(v)}`);
  expect(v.witness.map((op) => op.id)).toContain(culprit.id);
  expect(v.witness.length).toBeLessThanOrEqual(20);
  expect(v.reason).toMatch(/not linearizable/);
}

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

describe('generated histories (seeded simulation)', () => {
  const baseSeed = Number(process.env.CHECKER_SEED ?? Math.floor(Math.random() * 2 ** 31));
  const runs = 6;
  console.log(`checker property tests: CHECKER_SEED=${baseSeed} (runs ${runs})`);

  test('register: linearizable by construction → valid; one read made stale or impossible → invalid', () => {
    for (let k = 0; k < runs; k++) {
      const seed = baseSeed + k;
      const rng = mulberry32(seed);
      const ops = simulate(rng, registerObject(), { processes: 6, opsPerProcess: 120, keys: ['a', 'b', 'c'] });
      const rep = check(ops, casRegister);
      expect(rep.valid, `seed ${seed}: ${JSON.stringify(rep.keys.filter((v) => v.valid !== true))}`).toBe(true);
      const mutated = mutateRegister(ops, rng);
      const bad = check(mutated.ops, casRegister);
      expect(bad.valid, `seed ${seed}: mutation ${mutated.what}`).toBe(false);
      expect(bad.keys.find((v) => v.valid === false)?.key).toBe(mutated.key);
    }
  });

  test('mutex: linearizable by construction → valid; an acquire false made true while another surely held → invalid', () => {
    for (let k = 0; k < runs; k++) {
      const seed = baseSeed + 1000 + k;
      const rng = mulberry32(seed);
      const ops = simulate(rng, lockObject(), { processes: 6, opsPerProcess: 120, keys: ['l1', 'l2'] });
      const rep = check(ops, mutex);
      expect(rep.valid, `seed ${seed}: ${JSON.stringify(rep.keys.filter((v) => v.valid !== true))}`).toBe(true);
      expect(mutualExclusion(ops).valid, `seed ${seed}`).toBe(true);
      const mutated = mutateMutex(ops, rng);
      const bad = check(mutated.ops, mutex);
      expect(bad.valid, `seed ${seed}: mutation ${mutated.what}`).toBe(false);
      expect(bad.keys.find((v) => v.valid === false)?.key).toBe(mutated.key);
    }
  });

  test('micro-benchmark (prints, asserts no time): 5,000-op register and 3,000-op mutex histories on one key', () => {
    const rng = mulberry32(baseSeed);
    const reg = simulate(rng, registerObject(), { processes: 6, opsPerProcess: 834, keys: ['k'], unknownRate: 0.008 });
    const regRep = check(reg, casRegister);
    const lock = simulate(rng, lockObject(), { processes: 6, opsPerProcess: 500, keys: ['k'], unknownRate: 0.01 });
    const lockRep = check(lock, mutex);
    console.log(`checker bench: register ${regRep.ops} ops (${regRep.unknownOps} unknown) ${regRep.elapsedMs.toFixed(0)} ms; `
      + `mutex ${lockRep.ops} ops (${lockRep.unknownOps} unknown) ${lockRep.elapsedMs.toFixed(0)} ms`);
    expect(regRep.valid).toBe(true);
    expect(lockRep.valid).toBe(true);
  });
});

interface Mutation { ops: Op[]; key: string; what: string }

const copy = (ops: Op[]) => ops.map((op) => ({ ...op }));
const shuffled = <T>(xs: T[], rng: () => number): T[] => xs.map((x) => [rng(), x] as const).sort((a, b) => a[0] - b[0]).map(([, x]) => x);
const writes = (op: Op): string | null | undefined =>
  op.outcome !== 'ok' ? undefined
    : op.f === 'write' ? (op.input as string)
      : op.f === 'delete' ? null
        : op.f === 'cas' && op.output === true ? (op.input as { to: string }).to : undefined;

/**
 * A stale read that cannot be explained: the read returns v written by W1, but W2 wrote something else
 * after W1 returned and before the read began (values are unique). Falls back to a value never written.
 */
function mutateRegister(ops: Op[], rng: () => number): Mutation {
  const out = copy(ops);
  const reads = shuffled(out.filter((op) => op.f === 'read' && op.outcome === 'ok'), rng);
  for (const read of reads) {
    for (const w2 of out) {
      if (w2.key !== read.key || writes(w2) === undefined || (w2.returnMs as number) >= read.callMs) continue;
      const w1 = out.find((x) => x.key === read.key && typeof writes(x) === 'string' && (x.returnMs as number) < w2.callMs && writes(x) !== read.output);
      if (w1 === undefined) continue;
      read.output = writes(w1);
      return { ops: out, key: read.key, what: `read #${read.id} returns stale ${String(read.output)} (written by #${w1.id}, overwritten by #${w2.id})` };
    }
  }
  const read = reads[0] as Op;
  read.output = 'never-written';
  return { ops: out, key: read.key, what: `read #${read.id} returns a value never written` };
}

/**
 * An acquire false by s turned true while another session t surely held the lock: t's ok acquire true
 * returned before it began and no other op of t on the key (not refused) was invoked before it ended.
 * Falls back to a holder read naming a session that never existed.
 */
function mutateMutex(ops: Op[], rng: () => number): Mutation {
  const out = copy(ops);
  const refusedAcquires = shuffled(out.filter((op) => op.f === 'acquire' && op.outcome === 'ok' && op.output === false), rng);
  for (const q of refusedAcquires) {
    const end = q.returnMs as number;
    const holder = out.find((a) => a.key === q.key && a.f === 'acquire' && a.outcome === 'ok' && a.output === true
      && a.input !== q.input && (a.returnMs as number) < q.callMs
      && out.every((x) => x === a || x.key !== a.key || x.input !== a.input || x.outcome === 'fail'
        || (x.outcome === 'ok' && (x.returnMs as number) < a.callMs) || x.callMs > end));
    if (holder === undefined) continue;
    q.output = true;
    return { ops: out, key: q.key, what: `acquire #${q.id} by ${String(q.input)} true while #${holder.id} held` };
  }
  const read = out.find((op) => op.f === 'holder' && op.outcome === 'ok') as Op;
  read.output = 'nobody';
  return { ops: out, key: read.key, what: `holder read #${read.id} names a session that never existed` };
}

describe('budget', () => {
  test('a pathological history with a 1 ms budget is unknown, and so is the report (later keys unchecked)', () => {
    const ops: Op[] = [];
    for (let i = 0; i < 24; i++) ops.push(w(`p${i}`, `v${i}`, 0, 100));
    ops.push(r('q', 'never', 0, 100), ok('p', 'write', 'x', true, 200, 201, 'other'));
    const rep = checkLinearizable(ops, casRegister, { budgetMs: 1 });
    expect(rep.valid).toBe('unknown');
    expect(rep.keys.map((k) => k.valid)).toEqual(['unknown', 'unknown']);
    const first = rep.keys[0];
    expect(first?.valid === 'unknown' && first.reason).toMatch(/budget of 1 ms exhausted/);
  });

  test('an invalid key wins over a later unknown one', () => {
    const ops: Op[] = [ok('p', 'write', 'a', true, 0, 1, 'bad'), ok('q', 'read', null, 'z', 2, 3, 'bad')];
    for (let i = 0; i < 24; i++) ops.push(ok(`p${i}`, 'write', `v${i}`, true, 0, 100, 'slow'));
    ops.push(ok('q', 'read', null, 'never', 0, 100, 'slow'));
    const rep = checkLinearizable(ops, casRegister, { budgetMs: 1 });
    expect(rep.valid).toBe(false);
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

describe('agreement with a brute-force search on small random histories', () => {
  /** Tries every order of the ok ops and every subset and order of the unknown ops that respects real time. */
  function bruteForce<S>(ops: Op[], model: Model<S>): boolean {
    const live = ops.filter((op) => op.outcome !== 'fail');
    const go = (left: Op[], s: S): boolean => {
      if (!left.some((op) => op.outcome === 'ok')) return true;
      return left.some((op) => {
        const mustPrecede = left.some((p) => p.outcome === 'ok' && (p.returnMs as number) < op.callMs);
        if (mustPrecede) return false;
        const next = model.step(s, op);
        return next !== undefined && go(left.filter((x) => x !== op), next);
      });
    };
    return go(live, model.init());
  }

  function randomHistory(rng: () => number, gen: (rng: () => number) => { f: string; input: unknown; output: unknown }): Op[] {
    const n = 1 + Math.floor(rng() * 7);
    return Array.from({ length: n }, (_, id) => {
      const { f, input, output } = gen(rng);
      const callMs = Math.floor(rng() * 8);
      const returnMs = callMs + Math.floor(rng() * 4);
      const x = rng();
      const outcome = x < 0.15 ? 'unknown' : x < 0.22 ? 'fail' : 'ok';
      const op: Op = { id, process: `p${id}`, key: 'k', f, input, outcome, callMs };
      if (outcome !== 'unknown') op.returnMs = returnMs;
      if (outcome === 'ok') op.output = output;
      return op;
    });
  }

  const pick = <T>(rng: () => number, xs: readonly T[]): T => xs[Math.floor(rng() * xs.length)] as T;
  const values = [null, 'a', 'b'] as const;
  const registerOp = (rng: () => number) => {
    const f = pick(rng, ['read', 'write', 'cas', 'delete']);
    if (f === 'read') return { f, input: null, output: pick(rng, values) };
    if (f === 'write') return { f, input: pick(rng, ['a', 'b', 'c', 'd']), output: true }; // c, d: never read
    if (f === 'delete') return { f, input: null, output: true };
    return { f, input: { from: pick(rng, values), to: pick(rng, ['a', 'b', 'c']) }, output: rng() < 0.5 };
  };
  const sessions = ['s1', 's2', 's3'];
  const mutexOp = (rng: () => number) => {
    const f = pick(rng, ['acquire', 'acquire', 'release', 'invalidate', 'holder']);
    if (f === 'holder') return { f, input: null, output: pick(rng, [null, ...sessions]) };
    return { f, input: pick(rng, sessions), output: rng() < 0.5 };
  };

  test.each([
    ['cas register', casRegister as Model<unknown>, registerOp],
    ['mutex', mutex as Model<unknown>, mutexOp],
    ['mutex with lock-delay', makeMutex({ lockDelay: true }) as Model<unknown>, mutexOp],
  ] as const)('%s', (_name, model, gen) => {
    const seed = Number(process.env.CHECKER_SEED ?? 7);
    const rng = mulberry32(seed);
    let invalid = 0;
    for (let k = 0; k < 3000; k++) {
      const ops = randomHistory(rng, gen);
      const expected = bruteForce(ops, model);
      const got = checkLinearizable(ops, model, budget).valid;
      if (got !== expected) throw new Error(`seed ${seed} case ${k}: checker ${String(got)}, brute force ${expected}: ${JSON.stringify(ops)}`);
      if (!expected) invalid++;
    }
    expect(invalid).toBeGreaterThan(300); // both verdicts are exercised
  });
});
