// Goal: SeqRing holds what a Map keyed by its numbers would, in the same oldest-first order, through any
// mix of pushes and takes in any order (the ring grows past its first slots, and takes leave holes).
import fc from 'fast-check';
import { expect, test } from 'vitest';
import { SeqRing, seqAt } from '../../src/util/seq-ring.ts';

type Op = { t: 'push'; v: number } | { t: 'take'; pick: number } | { t: 'stale'; back: number } | { t: 'scan'; stopAfter: number };

const op: fc.Arbitrary<Op> = fc.oneof(
  fc.record({ t: fc.constant('push' as const), v: fc.integer() }),
  fc.record({ t: fc.constant('take' as const), pick: fc.nat() }),
  fc.record({ t: fc.constant('stale' as const), back: fc.integer({ min: -3, max: 40 }) }),
  fc.record({ t: fc.constant('scan' as const), stopAfter: fc.nat({ max: 50 }) }),
);

test('pushes, takes, lookups and scans agree with a Map keyed by the numbers handed out', () => {
  fc.assert(fc.property(fc.array(op, { maxLength: 400 }), (ops) => {
    const ring = new SeqRing<{ v: number }>();
    const model = new Map<number, { v: number }>();
    let last = 0;
    for (const o of ops) {
      if (o.t === 'push') {
        const value = { v: o.v };
        const seq = ring.push(value);
        expect(seq).toBe(last + 1);
        last = seq;
        model.set(seq, value);
      } else if (o.t === 'take') {
        const keys = [...model.keys()];
        const seq = keys.length === 0 ? 1 : keys[o.pick % keys.length]!;
        expect(ring.take(seq)).toBe(model.get(seq));
        model.delete(seq);
      } else if (o.t === 'stale') {
        // A number taken already, never handed out, or not a number the ring gives (0, negative).
        const seq = last - o.back;
        expect(ring.get(seq)).toBe(model.get(seq));
        if (!model.has(seq)) expect(ring.take(seq)).toBeUndefined();
      } else {
        const seen: [number, { v: number }][] = [];
        ring.scan((seq, value) => { seen.push([seq, value]); return seen.length < o.stopAfter; });
        expect(seen).toEqual([...model].slice(0, Math.max(1, o.stopAfter)).slice(0, model.size));
      }
      expect(ring.size).toBe(model.size);
    }
  }), { numRuns: 300 });
});

test('a scan may take each value it is given: the scan goes on over the rest, oldest first', () => {
  const ring = new SeqRing<string>();
  for (let i = 0; i < 100; i++) ring.push(`v${i}`);
  for (let seq = 2; seq <= 100; seq += 3) ring.take(seq);
  const order: string[] = [];
  ring.scan((seq, value) => { order.push(value); expect(ring.take(seq)).toBe(value); return true; });
  expect(order.length).toBe(100 - 33);
  expect(order.slice(0, 3)).toEqual(['v0', 'v2', 'v3']);
  expect(ring.size).toBe(0);
  expect(ring.push('next')).toBe(101);
  expect(ring.get(101)).toBe('next');
});

test('one old value kept while thousands pass keeps its place: the ring grows instead of overwriting it', () => {
  const ring = new SeqRing<number>();
  const first = ring.push(-1);
  for (let i = 0; i < 5_000; i++) {
    const seq = ring.push(i);
    if (i % 2 === 0) expect(ring.take(seq)).toBe(i);
  }
  expect(ring.get(first)).toBe(-1);
  expect(ring.size).toBe(2_501);
  const oldest: number[] = [];
  ring.scan((_, v) => { oldest.push(v); return oldest.length < 3; });
  expect(oldest).toEqual([-1, 1, 3]);
});

test('seqAt reads the number after an offset, and 0 for none or anything but digits', () => {
  expect(seqAt('ab12cd34-1027', 9)).toBe(1027);
  expect(seqAt('_INBOX.x.7', 9)).toBe(7);
  expect(seqAt('_INBOX.x.', 9)).toBe(0);
  expect(seqAt('p-12a', 2)).toBe(0);
  expect(seqAt('p--3', 2)).toBe(0);
  expect(seqAt('p-9007199254740991', 2)).toBe(Number.MAX_SAFE_INTEGER);
});
