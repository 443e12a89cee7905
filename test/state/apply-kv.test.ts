// Goal: the KV table of the pure apply, command by command — kv.set, cas, acquire, release, delete,
// deleteCas and deleteTree — each case a given state, one entry, and the result, effects and state
// change apply must give (spec/registry.md "Lock on a key"; consul-compat.md KV), every failure included.
import { expect } from 'vitest';
import { acquire, b64, session, set, runTable, type Case, type Table } from './apply-table.ts';

const v1 = b64('one');
const v2 = b64('two');
const kv = (key: string) => ({ t: 'kv' as const, key });

const setCases: Case[] = [
  {
    name: 'creates the key at this index',
    when: set('k', v1, '42'),
    result: { ok: true },
    effects: [kv('k')],
    then: (s) => {
      expect(s.kv.get('k')).toEqual({ key: 'k', value: v1, flags: '42', session: undefined, lockIndex: 0, createIndex: 2, modifyIndex: 2 });
      expect(s.kvIndex).toBe(2);
    },
  },
  {
    name: 'an identical write changes nothing and keeps ModifyIndex',
    given: [set('k', v1)],
    when: set('k', v1),
    result: { ok: true },
    effects: [],
    then: (s) => expect(s.kv.get('k')?.modifyIndex).toBe(2),
  },
  {
    name: 'an overwrite keeps CreateIndex and the lock',
    given: [session('s1'), acquire('k', 's1', v1)],
    when: set('k', v2),
    result: { ok: true },
    effects: [kv('k')],
    then: (s) => expect(s.kv.get('k')).toMatchObject({ value: v2, session: 's1', lockIndex: 1, createIndex: 3, modifyIndex: 4 }),
  },
  {
    name: 'a key written after its delete loses its tombstone',
    given: [set('k', v1), { t: 'kv.delete', key: 'k' }],
    when: set('k', v2),
    result: { ok: true },
    effects: [kv('k')],
    then: (s) => expect(s.tombstones.has('k')).toBe(false),
  },
];

const casCases: Case[] = [
  {
    name: 'cas 0 creates a key that does not exist',
    when: { t: 'kv.cas', key: 'k', value: v1, flags: '0', cas: '0' },
    result: { ok: true },
    effects: [kv('k')],
  },
  {
    name: 'cas-mismatch: cas 0 and the key exists',
    given: [set('k', v1)],
    when: { t: 'kv.cas', key: 'k', value: v2, flags: '0', cas: '0' },
    result: { ok: false, reason: 'cas-mismatch' },
    effects: [],
  },
  {
    name: 'the ModifyIndex given: written',
    given: [set('k', v1)],
    when: { t: 'kv.cas', key: 'k', value: v2, flags: '0', cas: '2' },
    result: { ok: true },
    effects: [kv('k')],
    then: (s) => expect(s.kv.get('k')).toMatchObject({ value: v2, modifyIndex: 3 }),
  },
  {
    name: 'cas-mismatch: another index',
    given: [set('k', v1), set('k', v2)],
    when: { t: 'kv.cas', key: 'k', value: v1, flags: '0', cas: '2' },
    result: { ok: false, reason: 'cas-mismatch' },
    effects: [],
  },
];

const acquireCases: Case[] = [
  {
    name: 'unlocked | acquire: locked, LockIndex increases, Session set',
    given: [session('s1')],
    when: acquire('k', 's1', v1),
    result: { ok: true },
    effects: [kv('k')],
    then: (s) => {
      expect(s.kv.get('k')).toEqual({ key: 'k', value: v1, flags: '0', session: 's1', lockIndex: 1, createIndex: 3, modifyIndex: 3 });
      expect([...s.locksBySession.get('s1')!]).toEqual(['k']);
    },
  },
  {
    name: 'locked | acquire with the holding session and the same value: nothing changes',
    given: [session('s1'), acquire('k', 's1', v1)],
    when: acquire('k', 's1', v1),
    result: { ok: true },
    effects: [],
  },
  {
    name: 'locked | acquire with the holding session: Value updated, LockIndex unchanged',
    given: [session('s1'), acquire('k', 's1', v1)],
    when: acquire('k', 's1', v2),
    result: { ok: true },
    effects: [kv('k')],
    then: (s) => expect(s.kv.get('k')).toMatchObject({ value: v2, session: 's1', lockIndex: 1, modifyIndex: 4 }),
  },
  {
    name: 'invalid-session: the session does not exist',
    when: acquire('k', 'ghost'),
    result: { ok: false, reason: 'invalid-session', detail: 'ghost' },
    effects: [],
  },
  {
    name: 'held-by-other: locked by another session',
    given: [session('s1'), session('s2'), acquire('k', 's1')],
    when: acquire('k', 's2'),
    result: { ok: false, reason: 'held-by-other' },
    effects: [],
  },
  {
    name: 'lock-delay: inside the delay of an invalidated holder, whoever asks',
    given: [session('s1', { lockDelayNs: 5e9 }), session('s2'), acquire('k', 's1'), { at: 2_000, cmd: { t: 'session.destroy', id: 's1' } }],
    when: acquire('k', 's2'),
    at: 6_999,
    result: { ok: false, reason: 'lock-delay' },
    effects: [],
  },
  {
    name: 'once the delay has run out in entry time the acquire succeeds',
    given: [session('s1', { lockDelayNs: 5e9 }), session('s2'), acquire('k', 's1'), { at: 2_000, cmd: { t: 'session.destroy', id: 's1' } }],
    when: acquire('k', 's2'),
    at: 7_000,
    result: { ok: true },
    effects: [kv('k')],
    then: (s) => {
      expect(s.kv.get('k')).toMatchObject({ session: 's2', lockIndex: 2 });
      expect(s.lockDelays.has('k')).toBe(false);
    },
  },
];

const releaseCases: Case[] = [
  {
    name: 'locked | release with the holder: unlocked, LockIndex kept, Value and Flags replaced',
    given: [session('s1'), acquire('k', 's1', v1)],
    when: { t: 'kv.release', key: 'k', value: v2, flags: '7', session: 's1' },
    result: { ok: true },
    effects: [kv('k')],
    then: (s) => {
      expect(s.kv.get('k')).toEqual({ key: 'k', value: v2, flags: '7', session: undefined, lockIndex: 1, createIndex: 3, modifyIndex: 4 });
      expect(s.locksBySession.get('s1')?.size ?? 0).toBe(0);
    },
  },
  {
    name: 'not-locked: the key does not exist',
    given: [session('s1')],
    when: { t: 'kv.release', key: 'k', value: null, flags: '0', session: 's1' },
    result: { ok: false, reason: 'not-locked' },
    effects: [],
  },
  {
    name: 'not-locked: the key exists and nobody holds it',
    given: [session('s1'), set('k', v1)],
    when: { t: 'kv.release', key: 'k', value: null, flags: '0', session: 's1' },
    result: { ok: false, reason: 'not-locked' },
    effects: [],
  },
  {
    name: 'not-holder: another session holds it',
    given: [session('s1'), session('s2'), acquire('k', 's1')],
    when: { t: 'kv.release', key: 'k', value: null, flags: '0', session: 's2' },
    result: { ok: false, reason: 'not-holder' },
    effects: [],
  },
];

const deleteCases: Case[] = [
  {
    name: 'removes the key and leaves a tombstone at this index',
    given: [set('k', v1)],
    when: { t: 'kv.delete', key: 'k' },
    result: { ok: true },
    effects: [kv('k')],
    then: (s) => {
      expect(s.kv.has('k')).toBe(false);
      expect(s.kvOrder.has('k')).toBe(false);
      expect(s.tombstones.get('k')).toBe(3);
      expect(s.kvIndex).toBe(3);
    },
  },
  {
    name: 'a held key: removed from the locks of its session too',
    given: [session('s1'), acquire('k', 's1')],
    when: { t: 'kv.delete', key: 'k' },
    result: { ok: true },
    effects: [kv('k')],
    then: (s) => expect(s.locksBySession.get('s1')?.has('k')).toBe(false),
  },
  {
    name: 'a key that does not exist: nothing changes',
    when: { t: 'kv.delete', key: 'k' },
    result: { ok: true },
    effects: [],
  },
];

const deleteCasCases: Case[] = [
  {
    name: 'the ModifyIndex given: deleted',
    given: [set('k', v1)],
    when: { t: 'kv.deleteCas', key: 'k', cas: '2' },
    result: { ok: true },
    effects: [kv('k')],
    then: (s) => expect(s.kv.has('k')).toBe(false),
  },
  {
    name: 'cas-mismatch: another index',
    given: [set('k', v1)],
    when: { t: 'kv.deleteCas', key: 'k', cas: '1' },
    result: { ok: false, reason: 'cas-mismatch' },
    effects: [],
  },
  {
    name: 'a key that does not exist: nothing to delete, not a failure',
    when: { t: 'kv.deleteCas', key: 'k', cas: '5' },
    result: { ok: true },
    effects: [],
  },
];

const deleteTreeCases: Case[] = [
  {
    name: 'removes every key under the prefix, in key order, and no other',
    given: [set('a/b'), set('a'), set('ab'), set('b')],
    when: { t: 'kv.deleteTree', prefix: 'a' },
    result: { ok: true },
    effects: [kv('a'), kv('a/b'), kv('ab')],
    then: (s) => expect([...s.kv.keys()]).toEqual(['b']),
  },
  {
    name: 'nothing under the prefix: nothing changes',
    given: [set('b')],
    when: { t: 'kv.deleteTree', prefix: 'a' },
    result: { ok: true },
    effects: [],
  },
];

runTable('apply: kv', {
  'kv.set': setCases,
  'kv.cas': casCases,
  'kv.acquire': acquireCases,
  'kv.release': releaseCases,
  'kv.delete': deleteCases,
  'kv.deleteCas': deleteCasCases,
  'kv.deleteTree': deleteTreeCases,
} satisfies Table<'kv'>);
