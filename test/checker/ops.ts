/** Hand-written histories for the checker's tests: ops built in one line each, and the verdicts expected. */
import { expect } from 'vitest';
import { checkLinearizable, type Model, type Op, type Report } from './index.ts';

export const budget = { budgetMs: 10_000 };
let nextId = 0;

/** An ok op on key `k` unless given: answered at `ret` with `output`. */
export function ok(process: string, f: string, input: unknown, output: unknown, call: number, ret: number, key = 'k'): Op {
  return { id: nextId++, process, key, f, input, output, outcome: 'ok', callMs: call, returnMs: ret };
}
export function lost(process: string, f: string, input: unknown, call: number, key = 'k'): Op {
  return { id: nextId++, process, key, f, input, outcome: 'unknown', callMs: call };
}
export function refused(process: string, f: string, input: unknown, call: number, ret: number, key = 'k'): Op {
  return { id: nextId++, process, key, f, input, outcome: 'fail', callMs: call, returnMs: ret };
}
export const w = (p: string, v: string, call: number, ret: number) => ok(p, 'write', v, true, call, ret);
export const r = (p: string, v: string | null, call: number, ret: number) => ok(p, 'read', null, v, call, ret);
export const cas = (p: string, from: string | null, to: string, out: boolean, call: number, ret: number) => ok(p, 'cas', { from, to }, out, call, ret);
export const acq = (s: string, out: boolean, call: number, ret: number) => ok(s, 'acquire', s, out, call, ret);
export const rel = (s: string, out: boolean, call: number, ret: number) => ok(s, 'release', s, out, call, ret);
export const inv = (s: string, call: number, ret: number) => ok('reaper', 'invalidate', s, true, call, ret);

export function check(ops: Op[], model: Model<unknown>): Report {
  return checkLinearizable(ops, model, budget);
}
export function expectValid(ops: Op[], model: Model<unknown>): void {
  const rep = check(ops, model);
  expect(rep.keys.filter((k) => k.valid !== true)).toEqual([]);
  expect(rep.valid).toBe(true);
}
/** Invalid, and the witness contains the op that cannot be placed. */
export function expectInvalid(ops: Op[], model: Model<unknown>, culprit: Op): void {
  const rep = check(ops, model);
  expect(rep.valid).toBe(false);
  const v = rep.keys[0];
  if (v?.valid !== false) throw new Error(`expected an invalid key, got ${JSON.stringify(v)}`);
  expect(v.witness.map((op) => op.id)).toContain(culprit.id);
  expect(v.witness.length).toBeLessThanOrEqual(20);
  expect(v.reason).toMatch(/not linearizable/);
}
