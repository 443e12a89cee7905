// Goal: the state table of the pure apply — state.restore replaces the whole state by a snapshot's at the
// restore entry's index: every record's ModifyIndex and the table indexes move to it, tombstones fold into
// the floor there, sessions restart their TTL from the entry's time and keep their locks, and the effects
// wake every key of the old and the new state, cancel the old sessions' timers and arm the new ones.
import { describe, expect, test } from 'vitest';
import { apply, toSnapshotData, type Effect } from '../../src/state/index.ts';
import { acquire, runTable, session, set, stateOf, t0, type Case } from './apply-table.ts';

const source = stateOf([set('a', 'eA=='), session('s1', { ttl: '10s', ttlMs: 10_000 }), acquire('a', 's1')]);
const data = toSnapshotData(source);
const catalogOfN1: Effect[] = [{ t: 'check', node: 'n1', checkId: 'gossipHealth', serviceId: '' }, { t: 'node', node: 'n1' }];

const restoreCases: Case[] = [
  {
    name: 'a snapshot replaces the state at the restore entry\'s index',
    given: [set('old'), { at: t0, cmd: { t: 'kv.delete', key: 'old' } }, set('other')],
    when: { t: 'state.restore', data },
    at: t0 + 5_000,
    result: { ok: true },
    effects: [
      { t: 'sessions' }, { t: 'catalog' }, { t: 'kv', key: 'other' }, { t: 'kv', key: 'a' },
      { t: 'session', id: 's1' }, { t: 'ttl.arm', id: 's1', renewIndex: 5, ttlMs: 10_000 },
      ...catalogOfN1, ...catalogOfN1,
    ],
    then: (s) => {
      expect([s.index, s.kvIndex, s.sessionsIndex, s.catalogIndex, s.tombstoneFloor]).toEqual([5, 5, 5, 5, 5]);
      expect([...s.kv.keys()]).toEqual(['a']);
      expect(s.kv.get('a')).toMatchObject({ value: null, session: 's1', lockIndex: 1, createIndex: 2, modifyIndex: 5 });
      expect(s.tombstones.size).toBe(0);
      expect(s.sessions.get('s1')).toMatchObject({ createIndex: 3, modifyIndex: 5, renewIndex: 5, renewedAtMs: t0 + 5_000 });
      expect([...s.locksBySession.get('s1')!]).toEqual(['a']);
      expect(s.checkOf('n1', 'gossipHealth')).toMatchObject({ modifyIndex: 5, ttlUpdateIndex: 5 });
      // The snapshot's own records are left as they were (the entry may be shared by several nodes).
      expect(data.sessions[0]).toMatchObject({ modifyIndex: 3, renewIndex: 3 });
    },
  },
  {
    name: 'the old state\'s sessions lose their timers',
    given: [session('s0', { ttl: '10s', ttlMs: 10_000 })],
    when: { t: 'state.restore', data },
    result: { ok: true },
    effects: [
      { t: 'sessions' }, { t: 'catalog' }, { t: 'kv', key: 'a' }, { t: 'ttl.cancel', id: 's0' }, { t: 'session', id: 's0' },
      { t: 'session', id: 's1' }, { t: 'ttl.arm', id: 's1', renewIndex: 3, ttlMs: 10_000 }, ...catalogOfN1, ...catalogOfN1,
    ],
    then: (s) => {
      expect([...s.sessions.keys()]).toEqual(['s1']);
      expect(s.sessions.get('s1')).toMatchObject({ createIndex: 3, modifyIndex: 3 });
      expect(s.kv.get('a')).toMatchObject({ createIndex: 2, modifyIndex: 3 });
    },
  },
  {
    name: 'a CreateIndex above the restore\'s (a longer log\'s snapshot) comes down to it',
    when: { t: 'state.restore', data },
    result: { ok: true },
    effects: [
      { t: 'sessions' }, { t: 'catalog' }, { t: 'kv', key: 'a' },
      { t: 'session', id: 's1' }, { t: 'ttl.arm', id: 's1', renewIndex: 2, ttlMs: 10_000 }, ...catalogOfN1, ...catalogOfN1,
    ],
    then: (s) => {
      expect(s.sessions.get('s1')).toMatchObject({ createIndex: 2, modifyIndex: 2 });
      expect(s.kv.get('a')).toMatchObject({ createIndex: 2, modifyIndex: 2 });
    },
  },
];

/** The source's snapshot as a log an hour ahead would hold it, with lock delays `leftMs` from its time on `a` and `b`. */
const hourAhead = (leftA: number, leftB: number) => {
  const atMs = data.atMs + 3_600_000;
  return { ...data, atMs, lockDelays: [['a', atMs + leftA], ['b', atMs + leftB]] as [string, number][] };
};

restoreCases.push({
  name: 'times are re-based to the restore entry\'s: a file\'s time ahead is not taken, its lock delays keep what was left (at most 60 s)',
  given: [set('old')],
  when: { t: 'state.restore', data: hourAhead(4_000, 3_600_000) },
  at: t0 + 5_000,
  result: { ok: true },
  effects: [
    { t: 'sessions' }, { t: 'catalog' }, { t: 'kv', key: 'old' }, { t: 'kv', key: 'a' },
    { t: 'session', id: 's1' }, { t: 'ttl.arm', id: 's1', renewIndex: 3, ttlMs: 10_000 }, ...catalogOfN1, ...catalogOfN1,
  ],
  then: (s) => {
    expect(s.atMs).toBe(t0 + 5_000);
    expect([...s.lockDelays]).toEqual([['a', t0 + 5_000 + 4_000], ['b', t0 + 5_000 + 60_000]]);
    expect(s.sessions.get('s1')).toMatchObject({ renewedAtMs: t0 + 5_000 });
    // The next entry, stamped by this log a second later, is a second later for the state too.
    apply(s, { index: s.index + 1, atMs: t0 + 6_000, pid: 'p', cmd: set('after') });
    expect(s.atMs).toBe(t0 + 6_000);
  },
});

runTable('state table', { 'state.restore': restoreCases });

describe('state.restore of data it cannot read', () => {
  test('an unknown snapshot format version stops the node (the route checks it before proposing)', () => {
    const s = stateOf();
    expect(() => apply(s, { index: 2, atMs: t0, pid: 'p', cmd: { t: 'state.restore', data: { ...data, version: 99 } } })).toThrow(/unsupported format version 99/);
  });
});
