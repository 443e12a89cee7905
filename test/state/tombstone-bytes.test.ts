// Goal: deleted keys are remembered for index reporting within a bound of count and of bytes: deleting
// many long keys folds the oldest tombstones into the floor once their keys pass the byte bound, so long
// key names cannot grow the state (and its snapshot) without limit; the size estimate counts them.
import { expect, test } from 'vitest';
import { tombstoneBytesMax } from '../../src/domain/limits.ts';
import { apply, stateBytes, RegistryState } from '../../src/state/index.ts';
import { set, t0 } from './apply-table.ts';

test('tombstones of long keys stay within the byte bound; the oldest fold into the floor', () => {
  const state = new RegistryState();
  const long = (i: number) => `${'k'.repeat(60_000)}/${i}`;
  let index = 0;
  const run = (cmd: Parameters<typeof apply>[1]['cmd']) => apply(state, { index: ++index, atMs: t0, pid: `p${index}`, cmd });
  const keys = Math.ceil((2 * tombstoneBytesMax) / 60_000);
  for (let i = 0; i < keys; i++) {
    run(set(long(i), 'v'));
    run({ t: 'kv.delete', key: long(i) });
  }
  expect(state.kv.size).toBe(0);
  expect(state.tombstones.bytes).toBeLessThanOrEqual(tombstoneBytesMax);
  expect(state.tombstones.size).toBeLessThan(keys);
  expect(state.tombstones.size).toBeGreaterThan(0);
  expect(state.tombstoneFloor).toBeGreaterThan(0);
  // The newest deletion is remembered; the estimate counts what is kept.
  expect(state.tombstones.has(long(keys - 1))).toBe(true);
  expect(stateBytes(state)).toBeGreaterThanOrEqual(state.tombstones.bytes);
  expect(stateBytes(state)).toBeLessThan(tombstoneBytesMax + 1_000_000);
});
