// Goal: rendezvous ownership — every node computes the same owner, load spreads over members, and when
// a member fails only the actors it owned move (the survivors' timers stay where they are).
import { describe, expect, test } from 'vitest';
import { ownerOf } from '../../src/runtime/ownership.ts';

const actors = Array.from({ length: 3000 }, (_, i) => `session:${i}`);

describe('ownerOf', () => {
  test('the same members in any order give the same owner', () => {
    for (const a of actors.slice(0, 200)) expect(ownerOf(a, ['n1', 'n2', 'n3'])).toBe(ownerOf(a, ['n3', 'n1', 'n2']));
  });

  test('nobody alive: no owner; one alive: it owns everything', () => {
    expect(ownerOf('x', [])).toBeUndefined();
    expect(actors.every((a) => ownerOf(a, ['solo']) === 'solo')).toBe(true);
  });

  test('actors spread over the members', () => {
    const counts = new Map<string, number>();
    for (const a of actors) counts.set(ownerOf(a, ['n1', 'n2', 'n3'])!, (counts.get(ownerOf(a, ['n1', 'n2', 'n3'])!) ?? 0) + 1);
    for (const n of ['n1', 'n2', 'n3']) expect(counts.get(n)).toBeGreaterThan(actors.length / 3 * 0.8);
  });

  test('when a member fails only its actors move, to the survivors', () => {
    for (const a of actors) {
      const before = ownerOf(a, ['n1', 'n2', 'n3'])!;
      const after = ownerOf(a, ['n1', 'n3'])!;
      if (before !== 'n2') expect(after).toBe(before);
      else expect(['n1', 'n3']).toContain(after);
    }
  });
});
