// Goal: a transaction's get-tree over more keys than a function call takes arguments (about 125,000 here)
// applies like any other: its results are gathered one by one, never spread into one call, which would
// throw inside the pure apply — on every node and on every replay of the entry.
import { expect, test } from 'vitest';
import { apply, RegistryState } from '../../src/state/index.ts';
import { set, t0 } from './apply-table.ts';

test('a write transaction with a get-tree of 200,000 keys applies and returns them all', () => {
  const state = new RegistryState();
  let index = 0;
  const run = (cmd: Parameters<typeof apply>[1]['cmd']) => apply(state, { index: ++index, atMs: t0, pid: `p${index}`, cmd });
  const keys = 200_000;
  for (let i = 0; i < keys; i++) run(set(`t/${i}`));
  const { result } = run({ t: 'txn.kv', ops: [{ verb: 'set', key: 'x', value: null, flags: '0', index: '0', session: '' }, { verb: 'get-tree', key: 't/', value: null, flags: '0', index: '0', session: '' }] });
  expect(result).toMatchObject({ ok: true });
  expect(result.ok && result.results).toHaveLength(keys + 1);
});
