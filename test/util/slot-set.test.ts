// Goal: SlotSet holds what a Set would through any mix of adds and deletes (a member knows its slot, a
// removal moves the last member into it), and its lists are copies the set's later changes do not touch.
import fc from 'fast-check';
import { expect, test } from 'vitest';
import { SlotSet } from '../../src/util/slot-set.ts';

interface Member { name: number; slot: number }

test('adds, deletes and has agree with a Set, whatever the order', () => {
  fc.assert(fc.property(fc.array(fc.tuple(fc.boolean(), fc.nat({ max: 30 })), { maxLength: 300 }), (ops) => {
    const members: Member[] = Array.from({ length: 31 }, (_, name) => ({ name, slot: -1 }));
    const set = new SlotSet<Member>();
    const model = new Set<Member>();
    for (const [adding, k] of ops) {
      const m = members[k]!;
      if (adding) {
        set.add(m);
        model.add(m);
      } else {
        expect(set.delete(m)).toBe(model.delete(m));
        expect(m.slot).toBe(-1);
      }
      expect(set.size).toBe(model.size);
      for (const x of members) expect(set.has(x)).toBe(model.has(x));
      expect(new Set(set.list())).toEqual(model);
    }
  }), { numRuns: 300 });
});

test('a member of one set is not taken for a member of another; a list is not changed by later deletes', () => {
  const a = new SlotSet<Member>();
  const b = new SlotSet<Member>();
  const x = { name: 1, slot: -1 };
  const y = { name: 2, slot: -1 };
  a.add(x);
  b.add(y);
  expect(b.has(x)).toBe(false);
  expect(b.delete(x)).toBe(false);
  expect(a.has(x)).toBe(true);
  const listed = b.list();
  b.delete(y);
  expect(listed).toEqual([y]);
  const into: Member[] = [x];
  a.copyInto(into);
  expect(into).toEqual([x, x]);
});
