// Goal: the transaction command of the pure apply (txn.kv, Consul's /v1/txn KV operations): operations run in
// order and see the earlier ones' writes; all apply or none (a failure leaves state and every index as they
// were, and yields no effects); every failing operation is reported with Consul's text; locks follow the
// lock machine (LockIndex, re-lock by the holder, lock delay); written entries carry the entry's index.
import fc from 'fast-check';
import { describe, expect, test } from 'vitest';
import type { Command, TxnKv, TxnKvOp } from '../../src/domain/commands.ts';
import { apply, fromSnapshotData, toSnapshotData, type RegistryState } from '../../src/state/index.ts';
import { acquire, b64, indexOf, runTable, session, set, stateOf, t0, type Case, type Given, type Table } from './apply-table.ts';

const v1 = b64('one');
const v2 = b64('two');
const kv = (key: string) => ({ t: 'kv' as const, key });

function op(verb: TxnKvOp['verb'], key: string, over: Partial<TxnKvOp> = {}): TxnKvOp {
  return { verb, key, value: null, flags: '0', index: '0', session: '', ...over };
}
const txn = (...ops: TxnKvOp[]): TxnKv => ({ t: 'txn.kv', ops });
/** An entry as a result shows it: every field, `value` given (null for writes and checks). */
function entry(key: string, over: Partial<{ value: string | null; flags: string; session: string; lockIndex: number; createIndex: number; modifyIndex: number }>) {
  return { key, value: null, flags: '0', session: undefined, lockIndex: 0, createIndex: 2, modifyIndex: 2, ...over };
}
const failed = (...errors: [number, string][]) => ({ ok: false as const, reason: 'txn-failed' as const, errors: errors.map(([opIndex, what]) => ({ opIndex, what })) });

const writes: Case[] = [
  {
    name: 'set creates the key at this index; its result has no value',
    when: txn(op('set', 'k', { value: v1, flags: '42' })),
    result: { ok: true, results: [entry('k', { flags: '42' })] },
    effects: [kv('k')],
    then: (s) => {
      expect(s.kv.get('k')).toEqual(entry('k', { value: v1, flags: '42' }));
      expect(s.kvIndex).toBe(2);
    },
  },
  {
    name: 'operations see earlier ones: set, get, check-index and cas at this index, then get-tree',
    given: [set('a/0', v2)],
    when: txn(op('set', 'a/1', { value: v1 }), op('get', 'a/1'), op('check-index', 'a/1', { index: '3' }), op('cas', 'a/1', { value: v2, index: '3' }), op('get-tree', 'a/')),
    result: {
      ok: true,
      results: [
        entry('a/1', { createIndex: 3, modifyIndex: 3 }), entry('a/1', { value: v1, createIndex: 3, modifyIndex: 3 }),
        entry('a/1', { createIndex: 3, modifyIndex: 3 }), entry('a/1', { createIndex: 3, modifyIndex: 3 }),
        entry('a/0', { value: v2 }), entry('a/1', { value: v2, createIndex: 3, modifyIndex: 3 }),
      ],
    },
    effects: [kv('a/1')],
  },
  {
    name: 'every written entry carries this index, each key once in the effects (in first-touch order)',
    given: [set('x', v1), set('y', v1)],
    when: txn(op('set', 'y', { value: v2 }), op('set', 'x', { value: v2 }), op('set', 'y', { value: v1 }), op('delete', 'z')),
    result: { ok: true, results: [entry('y', { createIndex: 3, modifyIndex: 4 }), entry('x', { modifyIndex: 4 }), entry('y', { createIndex: 3, modifyIndex: 4 })] },
    effects: [kv('y'), kv('x')],
    then: (s) => {
      expect(s.kv.get('x')).toMatchObject({ value: v2, modifyIndex: 4 });
      expect(s.kv.get('y')).toMatchObject({ value: v1, modifyIndex: 4 });
    },
  },
  {
    name: 'get-or-empty answers an existing key with its value, a missing one with the operation\'s own fields',
    given: [set('k', v1)],
    when: txn(op('get-or-empty', 'k'), op('get-or-empty', 'none', { flags: '5', index: '9' })),
    result: { ok: true, results: [entry('k', { value: v1 }), entry('none', { flags: '5', createIndex: 0, modifyIndex: 9 })] },
    effects: [],
  },
  {
    name: 'an identical set changes nothing and keeps ModifyIndex',
    given: [set('k', v1)],
    when: txn(op('set', 'k', { value: v1 })),
    result: { ok: true, results: [entry('k', {})] },
    effects: [],
  },
  {
    name: 'cas 0 creates an absent key; delete-cas of an absent key succeeds; deletes leave tombstones at this index',
    given: [set('gone', v1)],
    when: txn(op('cas', 'k', { value: v1, index: '0' }), op('delete-cas', 'none', { index: '9' }), op('delete-cas', 'gone', { index: '2' })),
    result: { ok: true, results: [entry('k', { createIndex: 3, modifyIndex: 3 })] },
    effects: [kv('k'), kv('gone')],
    then: (s) => {
      expect(s.kv.has('gone')).toBe(false);
      expect(s.tombstones.get('gone')).toBe(3);
    },
  },
  {
    name: 'delete-tree removes what earlier operations wrote under the prefix too, and no other key',
    given: [set('a/1'), set('ab')],
    when: txn(op('set', 'a/2'), op('delete-tree', 'a/'), op('get-tree', 'a'), op('check-not-exists', 'a/2')),
    result: { ok: true, results: [entry('a/2', { createIndex: 4, modifyIndex: 4 }), entry('ab', { createIndex: 3, modifyIndex: 3 })] },
    effects: [kv('a/1')],
    then: (s) => expect([...s.kv.keys()]).toEqual(['ab']),
  },
  {
    name: 'a key deleted then set again is one write at this index',
    given: [set('k', v1)],
    when: txn(op('delete', 'k'), op('check-not-exists', 'k'), op('set', 'k', { value: v2 })),
    result: { ok: true, results: [entry('k', { createIndex: 3, modifyIndex: 3 })] },
    effects: [kv('k')],
    then: (s) => expect(s.tombstones.has('k')).toBe(false),
  },
];

const locks: Case[] = [
  {
    name: 'lock takes a free key: Session set, LockIndex 1, the locks by session updated',
    given: [session('s1')],
    when: txn(op('lock', 'k', { session: 's1', value: v1 }), op('check-session', 'k', { session: 's1' })),
    result: { ok: true, results: [entry('k', { session: 's1', lockIndex: 1, createIndex: 3, modifyIndex: 3 }), entry('k', { session: 's1', lockIndex: 1, createIndex: 3, modifyIndex: 3 })] },
    effects: [kv('k')],
    then: (s) => expect([...s.locksBySession.get('s1')!]).toEqual(['k']),
  },
  {
    name: 're-lock by the holder keeps LockIndex; unlock then lock again in one transaction counts one more',
    given: [session('s1'), acquire('k', 's1', v1), acquire('j', 's1')],
    when: txn(op('lock', 'k', { session: 's1', value: v1 }), op('unlock', 'j', { session: 's1', value: v2 }), op('lock', 'j', { session: 's1' })),
    result: {
      ok: true,
      results: [
        entry('k', { session: 's1', lockIndex: 1, createIndex: 3, modifyIndex: 3 }), entry('j', { lockIndex: 1, createIndex: 4, modifyIndex: 5 }),
        entry('j', { session: 's1', lockIndex: 2, createIndex: 4, modifyIndex: 5 }),
      ],
    },
    effects: [kv('j')],
  },
  {
    name: 'unlock clears the session and takes the operation\'s value; set on a locked key keeps the lock',
    given: [session('s1'), acquire('k', 's1', v1), acquire('j', 's1')],
    when: txn(op('unlock', 'k', { session: 's1', value: v2, flags: '7' }), op('set', 'j', { value: v2 })),
    result: { ok: true, results: [entry('k', { flags: '7', lockIndex: 1, createIndex: 3, modifyIndex: 5 }), entry('j', { session: 's1', lockIndex: 1, createIndex: 4, modifyIndex: 5 })] },
    effects: [kv('k'), kv('j')],
    then: (s) => {
      expect(s.kv.get('k')).toMatchObject({ value: v2, session: undefined });
      expect([...s.locksBySession.get('s1')!]).toEqual(['j']);
    },
  },
  {
    name: 'once the lock delay has run out in entry time, lock succeeds',
    given: [session('s1', { lockDelayNs: 5e9 }), session('s2'), acquire('k', 's1'), { at: 2_000, cmd: { t: 'session.destroy', id: 's1' } }],
    when: txn(op('lock', 'k', { session: 's2' })),
    at: 7_000,
    result: { ok: true, results: [entry('k', { session: 's2', lockIndex: 2, createIndex: 4, modifyIndex: 6 })] },
    effects: [kv('k')],
  },
];

/** Every failure: nothing applies (the harness checks the snapshot is unchanged and there are no effects). */
const failures: Case[] = [
  {
    name: 'txn-failed: a failing operation after writes applies none of them, and later ones still run',
    given: [set('a', v1)],
    when: txn(op('set', 'a', { value: v2 }), op('delete', 'b'), op('cas', 'c', { index: '5' }), op('set', 'c', { value: v1 }), op('get', 'x')),
    result: failed([2, 'failed to set key "c", index is stale'], [4, 'key "x" doesn\'t exist']),
    effects: [],
    then: (s) => {
      expect(s.kv.get('a')).toMatchObject({ value: v1, modifyIndex: 2 });
      expect([s.kvIndex, s.kv.has('c'), s.kvKeyIndex('a'), s.kvPrefixIndex('')]).toEqual([2, false, 2, 2]);
    },
  },
  {
    name: 'a failed operation changes nothing for later ones: a failed cas leaves the key absent',
    when: txn(op('cas', 'k', { value: v1, index: '3' }), op('check-not-exists', 'k'), op('get', 'k')),
    result: failed([0, 'failed to set key "k", index is stale'], [2, 'key "k" doesn\'t exist']),
    effects: [],
  },
  {
    name: 'the check texts: check-index, check-session, check-not-exists',
    given: [session('s1'), set('k', v1), acquire('l', 's1')],
    when: txn(
      op('check-index', 'none', { index: '1' }), op('check-index', 'k', { index: '2' }), op('check-session', 'none', { session: 's1' }),
      op('check-session', 'k', { session: 's1' }), op('check-session', 'l', { session: 'other' }), op('check-not-exists', 'k'),
    ),
    result: failed(
      [0, 'failed to check index, key "none" doesn\'t exist'], [1, 'failed index check for key "k", current modify index 3 != 2'],
      [2, 'failed to check session, key "none" doesn\'t exist'], [3, 'failed session check for key "k", current session "" != "s1"'],
      [4, 'failed session check for key "l", current session "s1" != "other"'], [5, 'key "k" exists'],
    ),
    effects: [],
  },
  {
    name: 'the write texts: cas, delete-cas, lock, unlock',
    given: [session('s1'), session('s2'), acquire('held', 's1'), set('k', v1)],
    when: txn(
      op('cas', 'k', { index: '0' }), op('delete-cas', 'k', { index: '4' }), op('lock', 'held', { session: 's2' }), op('lock', 'k'),
      op('lock', 'k', { session: 'nope' }), op('unlock', 'held', { session: 's2' }), op('unlock', 'none', { session: 's1' }), op('unlock', 'k', { session: 's1' }),
      op('unlock', 'held'),
    ),
    result: failed(
      [0, 'failed to set key "k", index is stale'], [1, 'failed to delete key "k", index is stale'], [2, 'failed to lock key "held", lock is already held'],
      [3, 'missing session'], [4, 'invalid session "nope"'], [5, 'failed to unlock key "held", lock isn\'t held, or is held by another session'],
      [6, 'failed to unlock key "none", lock isn\'t held, or is held by another session'],
      [7, 'failed to unlock key "k", lock isn\'t held, or is held by another session'], [8, 'missing session'],
    ),
    effects: [],
  },
  {
    name: 'lock inside the lock delay of an invalidated holder fails, whoever asks; an earlier unlock in the same transaction is undone',
    given: [session('s1', { lockDelayNs: 5e9 }), session('s2'), acquire('k', 's1'), acquire('j', 's2'), { at: 2_000, cmd: { t: 'session.destroy', id: 's1' } }],
    when: txn(op('unlock', 'j', { session: 's2' }), op('lock', 'k', { session: 's2' })),
    at: 6_999,
    result: failed([1, 'failed to lock key "k" due to lock delay']),
    effects: [],
    then: (s) => expect(s.kv.get('j')?.session).toBe('s2'),
  },
  {
    name: 'an unknown verb (a log written by a newer node) is an error of its operation',
    given: [set('k', v1)],
    when: txn(op('set', 'k', { value: v2 }), { ...op('get', 'k'), verb: 'get-or-else' as TxnKvOp['verb'] }),
    result: failed([1, 'unknown KV verb "get-or-else"']),
    effects: [],
  },
];

runTable('apply: txn', {
  'txn.kv': [...writes, ...locks, ...failures],
} satisfies Table<'txn'>);

/** The plain command an operation stands for (reads: none); a successful transaction ends where these would. */
function plain(o: TxnKvOp): Command | undefined {
  switch (o.verb) {
    case 'set': return { t: 'kv.set', key: o.key, value: o.value, flags: o.flags };
    case 'lock': return { t: 'kv.acquire', key: o.key, value: o.value, flags: o.flags, session: o.session };
    case 'unlock': return { t: 'kv.release', key: o.key, value: o.value, flags: o.flags, session: o.session };
    case 'delete': return { t: 'kv.delete', key: o.key };
    case 'delete-tree': return { t: 'kv.deleteTree', prefix: o.key };
    default: return undefined;
  }
}

/** What a client sees of the KV table, indexes aside, and the derived indexes checked against a rebuild. */
function view(s: RegistryState) {
  const rebuilt = fromSnapshotData(JSON.parse(JSON.stringify(toSnapshotData(s))));
  const locks = (r: RegistryState) => [...r.locksBySession].filter(([, keys]) => keys.size > 0).map(([id, keys]) => `${id}:${[...keys].sort().join(',')}`).sort();
  expect(locks(s)).toEqual(locks(rebuilt));
  expect(s.kvList('').map((e) => e.key)).toEqual([...s.kv.keys()].sort());
  return s.kvList('').map((e) => [e.key, e.value, e.flags, e.session, e.lockIndex]);
}

describe('transactions against the plain commands (random operations)', () => {
  const given: Given[] = [session('s1'), session('s2'), set('a', v1), acquire('b', 's1'), set('a/x', v2)];
  const key = fc.constantFrom('a', 'a/x', 'a/y', 'b', 'c');
  const txnOp = fc.record({
    verb: fc.constantFrom('set', 'lock', 'unlock', 'delete', 'delete-tree', 'get', 'get-tree', 'check-session', 'check-not-exists') as fc.Arbitrary<TxnKvOp['verb']>,
    key, value: fc.constantFrom(null, v1, v2), flags: fc.constantFrom('0', '1'), index: fc.constant('0'), session: fc.constantFrom('', 's1', 's2'),
  });

  test('a success ends where the plain commands in order end; a failure changes nothing', () => {
    fc.assert(fc.property(fc.array(txnOp, { minLength: 1, maxLength: 8 }), (ops) => {
      const state = stateOf(given);
      const before = toSnapshotData(state);
      const applied = apply(state, { index: indexOf({ given }), atMs: t0, pid: 'txn', cmd: txn(...ops) });
      if (!applied.result.ok) {
        expect(applied.effects).toEqual([]);
        expect({ ...toSnapshotData(state), index: before.index, atMs: before.atMs }).toEqual(before);
        return;
      }
      const model = stateOf(given);
      let index = indexOf({ given });
      for (const cmd of ops.map(plain)) {
        if (cmd === undefined) continue;
        const r = apply(model, { index: index++, atMs: t0, pid: `p${index}`, cmd });
        expect(r.result.ok, JSON.stringify(cmd)).toBe(true);
      }
      expect(view(state)).toEqual(view(model));
      // At most one wake-up per key, however many operations touched it.
      const changed = applied.effects.map((e) => (e.t === 'kv' ? e.key : ''));
      expect(new Set(changed).size).toBe(changed.length);
    }), { numRuns: 2_000 });
  });
});
