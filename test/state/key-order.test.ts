// Goal: KV keys are ordered by their UTF-8 bytes, as Consul orders them, and the sorted key index
// answers prefix reads exactly as a scan of every key would, through creates, overwrites and deletes.
import fc from 'fast-check';
import { describe, expect, test } from 'vitest';
import { apply, compareKeys, RegistryState } from '../../src/state/index.ts';
import type { Command } from '../../src/domain/commands.ts';

const sign = (n: number) => Math.sign(n);

describe('compareKeys', () => {
  test('agrees with comparing the UTF-8 bytes, for any text (astral characters included)', () => {
    fc.assert(fc.property(fc.string({ unit: 'grapheme' }), fc.string({ unit: 'grapheme' }), (a, b) => {
      expect(sign(compareKeys(a, b))).toBe(sign(Buffer.compare(Buffer.from(a), Buffer.from(b))));
    }), { numRuns: 20_000 });
  });

  test('the cases where UTF-16 order differs from byte order', () => {
    // U+FF61 (EF BD A1) sorts before U+1F600 (F0 9F 98 80) in bytes, after it in UTF-16 units.
    expect(compareKeys('\uff61', '\u{1f600}')).toBeLessThan(0);
    expect(compareKeys('\u{1f600}', '\uff61')).toBeGreaterThan(0);
    expect(compareKeys('a', 'ab')).toBeLessThan(0);
    expect(compareKeys('same', 'same')).toBe(0);
  });
});

describe('the sorted key index', () => {
  const key = fc.constantFrom('a', 'a/', 'a/b', 'a/b/c', 'a/c', 'ab', 'b', 'b/x', '\uff61', '\u{1f600}', 'a/\u{1f600}');
  const op = fc.oneof(
    fc.record({ t: fc.constant('kv.set' as const), key, value: fc.constant(null), flags: fc.constant('0') }),
    fc.record({ t: fc.constant('kv.delete' as const), key }),
    fc.record({ t: fc.constant('kv.deleteTree' as const), prefix: fc.constantFrom('', 'a', 'a/', 'b') }),
  );

  test('prefix reads equal a filtered, byte-sorted scan of every key after any sequence of writes', () => {
    fc.assert(fc.property(fc.array(op, { maxLength: 40 }), fc.constantFrom('', 'a', 'a/', 'a/b', 'b', 'c'), (ops, prefix) => {
      const s = new RegistryState();
      ops.forEach((cmd, k) => apply(s, { index: k + 1, atMs: 1_000 + k, pid: `p${k}`, cmd: cmd as Command }));
      const scanned = [...s.kv.keys()].filter((k) => k.startsWith(prefix)).sort((x, y) => Buffer.compare(Buffer.from(x), Buffer.from(y)));
      expect(s.kvList(prefix).map((e) => e.key)).toEqual(scanned);
      expect(s.kvKeys(prefix, '')).toEqual(scanned);
      expect(s.kvOrder.size).toBe(s.kv.size);
    }), { numRuns: 2_000 });
  });
});
