// Goal: the sessions table of the pure apply, command by command — session.create, destroy, renew and
// expire — each case a given state, one entry, and the result, effects and state change apply must give
// (spec/registry.md "Session"; consul-compat.md §1), every failure of each command included.
import { expect } from 'vitest';
import type { Session } from '../../src/domain/types.ts';
import { acquire, b64, node, session, t0, runTable, type Case, type Table } from './apply-table.ts';

/** The record session.create stores for `session(id, over)` applied at `index`. */
function stored(id: string, index: number, over: Partial<Session> = {}): Session {
  const { t: _t, ...fields } = session(id);
  return { ...fields, createIndex: index, modifyIndex: index, renewIndex: index, renewedAtMs: t0, ...over };
}

const critical = { checkId: 'c1', name: 'c1', status: 'critical' as const, notes: '', output: '' };
const withTtl = { ttl: '10s', ttlMs: 10_000 };

const create: Case[] = [
  {
    name: 'creates a session bound to the node check; no TTL, no timer',
    when: session('s1'),
    result: { ok: true, session: stored('s1', 2) },
    effects: [{ t: 'sessions' }, { t: 'session', id: 's1' }],
    then: (s) => {
      expect(s.sessions.get('s1')).toEqual(stored('s1', 2));
      expect(s.sessionsIndex).toBe(2);
    },
  },
  {
    name: 'a TTL arms the timer from the create entry',
    when: session('s1', withTtl),
    result: { ok: true, session: stored('s1', 2, withTtl) },
    effects: [{ t: 'sessions' }, { t: 'session', id: 's1' }, { t: 'ttl.arm', id: 's1', renewIndex: 2, ttlMs: 10_000 }],
  },
  {
    name: 'the owner the proposer set is kept',
    when: session('s1', { owner: 'alice' }),
    result: { ok: true, session: stored('s1', 2, { owner: 'alice' }) },
    effects: [{ t: 'sessions' }, { t: 'session', id: 's1' }],
    then: (s) => expect(s.sessions.get('s1')?.owner).toBe('alice'),
  },
  {
    name: 'unknown-node: the node is not in the catalog',
    when: session('s1', { node: 'nx' }),
    result: { ok: false, reason: 'unknown-node', detail: 'nx' },
    effects: [],
  },
  {
    name: 'session-exists: a repeated id (a retried proposal) does not reset the live session',
    given: [session('s1', withTtl)],
    when: session('s1'),
    at: 5_000,
    result: { ok: false, reason: 'session-exists', detail: 's1' },
    effects: [],
    then: (s) => expect(s.sessions.get('s1')?.renewIndex).toBe(2),
  },
  {
    name: 'unknown-check: a bound node check that does not exist',
    when: session('s1', { nodeChecks: ['gossipHealth', 'nope'] }),
    result: { ok: false, reason: 'unknown-check', detail: 'nope' },
    effects: [],
  },
  {
    name: 'unknown-check: bound service checks and legacy Checks are checked too',
    when: session('s1', { nodeChecks: [], serviceChecks: [{ ID: 'svc', Namespace: '' }], checks: ['legacy'] }),
    result: { ok: false, reason: 'unknown-check', detail: 'svc' },
    effects: [],
  },
  {
    name: 'check-critical: a bound check that is critical',
    given: [node('n1', [critical])],
    when: session('s1', { nodeChecks: ['c1'] }),
    result: { ok: false, reason: 'check-critical', detail: 'c1' },
    effects: [],
  },
];

const destroy: Case[] = [
  {
    name: 'invalidates the session; Behavior release frees its locks, keeping the keys',
    given: [session('s1'), acquire('k', 's1', b64('v'))],
    when: { t: 'session.destroy', id: 's1' },
    result: { ok: true },
    effects: [{ t: 'kv', key: 'k' }, { t: 'sessions' }, { t: 'session', id: 's1' }, { t: 'ttl.cancel', id: 's1' }],
    then: (s) => {
      expect(s.sessions.has('s1')).toBe(false);
      expect(s.kv.get('k')).toMatchObject({ session: undefined, lockIndex: 1, value: b64('v'), modifyIndex: 4 });
      expect(s.locksBySession.has('s1')).toBe(false);
      expect(s.lockDelays.size).toBe(0);
    },
  },
  {
    name: 'Behavior delete removes the keys it held, leaving tombstones',
    given: [session('s1', { behavior: 'delete' }), acquire('a', 's1'), acquire('b', 's1')],
    when: { t: 'session.destroy', id: 's1' },
    result: { ok: true },
    effects: [{ t: 'kv', key: 'a' }, { t: 'kv', key: 'b' }, { t: 'sessions' }, { t: 'session', id: 's1' }, { t: 'ttl.cancel', id: 's1' }],
    then: (s) => {
      expect(s.kv.size).toBe(0);
      expect([...s.tombstones]).toEqual([['a', 5], ['b', 5]]);
    },
  },
  {
    name: 'the lock delay is armed from the entry time on the keys it held',
    given: [session('s1', { lockDelayNs: 5e9 }), acquire('k', 's1')],
    when: { t: 'session.destroy', id: 's1' },
    at: 2_000,
    result: { ok: true },
    effects: [{ t: 'kv', key: 'k' }, { t: 'sessions' }, { t: 'session', id: 's1' }, { t: 'ttl.cancel', id: 's1' }],
    then: (s) => expect(s.lockDelays.get('k')).toBe(7_000),
  },
  {
    name: 'a session that does not exist: nothing to do, not a failure',
    when: { t: 'session.destroy', id: 'ghost' },
    result: { ok: true },
    effects: [],
  },
];

const renew: Case[] = [
  {
    name: 'restarts the TTL from the renew entry; ModifyIndex stays',
    given: [session('s1', withTtl)],
    when: { t: 'session.renew', id: 's1' },
    at: 4_000,
    result: { ok: true, session: stored('s1', 2, { ...withTtl, renewIndex: 3, renewedAtMs: 4_000 }) },
    effects: [{ t: 'ttl.arm', id: 's1', renewIndex: 3, ttlMs: 10_000 }],
    then: (s) => expect(s.sessionsIndex).toBe(2),
  },
  {
    name: 'a session without TTL: nothing to restart',
    given: [session('s1')],
    when: { t: 'session.renew', id: 's1' },
    result: { ok: true, session: stored('s1', 2) },
    effects: [],
  },
  {
    name: 'session-not-found',
    when: { t: 'session.renew', id: 'ghost' },
    result: { ok: false, reason: 'session-not-found' },
    effects: [],
  },
];

const expire: Case[] = [
  {
    name: 'the TTL passed since the renew the timer saw: invalidated',
    given: [session('s1', withTtl)],
    when: { t: 'session.expire', id: 's1', renewIndex: 2 },
    at: 11_000,
    result: { ok: true },
    effects: [{ t: 'sessions' }, { t: 'session', id: 's1' }, { t: 'ttl.cancel', id: 's1' }],
    then: (s) => expect(s.sessions.has('s1')).toBe(false),
  },
  {
    name: 'stale: renewed since the timer was armed',
    given: [session('s1', withTtl), { t: 'session.renew', id: 's1' }],
    when: { t: 'session.expire', id: 's1', renewIndex: 2 },
    at: 50_000,
    result: { ok: false, reason: 'stale' },
    effects: [],
  },
  {
    name: 'stale: never earlier than the TTL in entry time',
    given: [session('s1', withTtl)],
    when: { t: 'session.expire', id: 's1', renewIndex: 2 },
    at: 10_999,
    result: { ok: false, reason: 'stale' },
    effects: [],
  },
  {
    name: 'stale: the session is gone',
    when: { t: 'session.expire', id: 'ghost', renewIndex: 2 },
    result: { ok: false, reason: 'stale' },
    effects: [],
  },
];

runTable('apply: sessions', {
  'session.create': create,
  'session.destroy': destroy,
  'session.renew': renew,
  'session.expire': expire,
} satisfies Table<'session'>);
