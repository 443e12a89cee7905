// Goal: the checks table of the pure apply, command by command — check.register, deregister, update
// and ttlExpire — each case a given state, one entry, and the result, effects and state change apply must
// give (spec/registry.md health checks; consul-compat.md §4), every failure of each command included.
import { expect } from 'vitest';
import type { CheckRegister, CheckUpdate } from '../../src/domain/commands.ts';
import type { CheckDefinition, CheckStatus } from '../../src/domain/types.ts';
import { passiveDefinition } from '../../src/state/index.ts';
import { acquire, registration, service, session, t0, runTable, type Case, type Table } from './apply-table.ts';

const ttlDefinition: CheckDefinition = { ...passiveDefinition, ttlMs: 10_000 };

function register(checkId: string, over: Parameters<typeof registration>[1] = {}): CheckRegister {
  return { t: 'check.register', node: 'n1', check: registration(checkId, over) };
}

function update(checkId: string, generation: number, via: CheckUpdate['via'], status: CheckStatus, output = ''): CheckUpdate {
  return { t: 'check.update', node: 'n1', checkId, generation, via, status, output };
}

const touched = (checkId: string, serviceId = '') => [{ t: 'catalog' as const }, { t: 'check' as const, node: 'n1', checkId, serviceId }];
const invalidated = (id: string) => [{ t: 'sessions' as const }, { t: 'session' as const, id }, { t: 'ttl.cancel' as const, id }];

const registerCases: Case[] = [
  {
    name: 'a node check: a new generation, counters at their thresholds',
    when: register('c1', { definition: { ...passiveDefinition, successBeforePassing: 3, failuresBeforeWarning: 1, failuresBeforeCritical: 2 } }),
    result: { ok: true },
    effects: touched('c1'),
    then: (s) => {
      expect(s.checkOf('n1', 'c1')).toMatchObject({
        status: 'passing', source: 'agent', generation: 2, successCounter: 3, failuresCounter: 2, ttlUpdateIndex: 2,
        createIndex: 2, modifyIndex: 2, serviceName: '', criticalSinceMs: 0,
      });
      expect(s.catalogIndex).toBe(2);
    },
  },
  {
    name: 'a service check carries the service name and tags',
    given: [{ t: 'service.register', node: 'n1', service: service('web', { tags: ['v1'] }), checks: [], replaceExistingChecks: false }],
    when: register('svc', { serviceId: 'web' }),
    result: { ok: true },
    // The service's index moves with its check (state/apply/service-index.ts).
    effects: [...touched('svc', 'web'), { t: 'serviceIndex', name: 'web' }],
    then: (s) => expect(s.checkOf('n1', 'svc')).toMatchObject({ serviceId: 'web', serviceName: 'web', serviceTags: ['v1'] }),
  },
  {
    name: 'a re-registration keeps status and output (anti-flap) but starts a new generation',
    given: [register('c1'), { at: 2_000, cmd: update('c1', 2, 'ttl', 'critical', 'down') }],
    when: register('c1', { name: 'renamed' }),
    at: 3_000,
    result: { ok: true },
    effects: touched('c1'),
    then: (s) => expect(s.checkOf('n1', 'c1')).toMatchObject({
      name: 'renamed', status: 'critical', output: 'down', generation: 4, createIndex: 2, modifyIndex: 4, criticalSinceMs: 2_000,
    }),
  },
  {
    name: 'unknown-node',
    when: { t: 'check.register', node: 'nx', check: registration('c1') },
    result: { ok: false, reason: 'unknown-node', detail: 'nx' },
    effects: [],
  },
  {
    name: 'unknown-service: a service check for a service the node does not have',
    when: register('svc', { serviceId: 'web' }),
    result: { ok: false, reason: 'unknown-service', detail: 'web' },
    effects: [],
  },
];

const deregisterCases: Case[] = [
  {
    name: 'removes the check and invalidates the sessions bound to it, their locks handled by Behavior',
    given: [register('c1'), session('s1', { nodeChecks: ['gossipHealth', 'c1'] }), acquire('k', 's1')],
    when: { t: 'check.deregister', node: 'n1', checkId: 'c1' },
    result: { ok: true },
    effects: [...touched('c1'), { t: 'kv', key: 'k' }, ...invalidated('s1')],
    then: (s) => {
      expect(s.checkOf('n1', 'c1')).toBeUndefined();
      expect(s.sessions.size).toBe(0);
      expect(s.kv.get('k')?.session).toBeUndefined();
    },
  },
  {
    name: 'sessions bound to other checks stay',
    given: [register('c1'), register('c2'), session('s1', { nodeChecks: ['c2'] })],
    when: { t: 'check.deregister', node: 'n1', checkId: 'c1' },
    result: { ok: true },
    effects: touched('c1'),
    then: (s) => expect(s.sessions.has('s1')).toBe(true),
  },
  {
    name: 'unknown-check',
    when: { t: 'check.deregister', node: 'n1', checkId: 'nope' },
    result: { ok: false, reason: 'unknown-check', detail: 'nope' },
    effects: [],
  },
];

const updateCases: Case[] = [
  {
    name: 'a probe result without thresholds sets status and output at once',
    given: [register('c1')],
    when: update('c1', 2, 'probe', 'critical', 'boom'),
    at: 4_000,
    result: { ok: true },
    effects: touched('c1'),
    then: (s) => expect(s.checkOf('n1', 'c1')).toMatchObject({ status: 'critical', output: 'boom', modifyIndex: 3, criticalSinceMs: 4_000 }),
  },
  {
    name: 'below success_before_passing the counter moves and the status does not: stored, no effects',
    given: [register('c1', { definition: { ...passiveDefinition, successBeforePassing: 2 } }), update('c1', 2, 'probe', 'critical')],
    when: update('c1', 2, 'probe', 'passing', 'up'),
    result: { ok: true },
    effects: [],
    then: (s) => expect(s.checkOf('n1', 'c1')).toMatchObject({ status: 'critical', output: '', successCounter: 1, modifyIndex: 3 }),
  },
  {
    name: 'a result that changes nothing: no effects',
    given: [register('c1')],
    when: update('c1', 2, 'probe', 'passing'),
    result: { ok: true },
    effects: [],
    then: (s) => expect(s.checkOf('n1', 'c1')?.modifyIndex).toBe(2),
  },
  {
    name: 'a TTL update sets the status directly and restarts the TTL',
    given: [register('c1', { definition: ttlDefinition })],
    when: update('c1', 2, 'ttl', 'warning', 'slow'),
    result: { ok: true },
    effects: touched('c1'),
    then: (s) => expect(s.checkOf('n1', 'c1')).toMatchObject({ status: 'warning', output: 'slow', ttlUpdateIndex: 3 }),
  },
  {
    name: 'a TTL update that changes nothing visible still restarts the TTL: the runner is told, the catalog is not',
    given: [register('c1', { definition: ttlDefinition })],
    when: update('c1', 2, 'ttl', 'passing'),
    result: { ok: true },
    effects: [{ t: 'check', node: 'n1', checkId: 'c1', serviceId: '' }],
    then: (s) => expect(s.checkOf('n1', 'c1')).toMatchObject({ ttlUpdateIndex: 3, modifyIndex: 2 }),
  },
  {
    name: 'an alias result sets the status without restarting the TTL',
    given: [register('c1', { type: 'alias' })],
    when: update('c1', 2, 'alias', 'warning'),
    result: { ok: true },
    effects: touched('c1'),
    then: (s) => expect(s.checkOf('n1', 'c1')).toMatchObject({ status: 'warning', ttlUpdateIndex: 2 }),
  },
  {
    name: 'turning critical invalidates the sessions bound to the check',
    given: [register('c1'), session('s1', { nodeChecks: ['c1'] })],
    when: update('c1', 2, 'ttl', 'critical'),
    result: { ok: true },
    effects: [...touched('c1'), ...invalidated('s1')],
    then: (s) => expect(s.sessions.size).toBe(0),
  },
  {
    name: 'unknown-check',
    when: update('nope', 2, 'probe', 'passing'),
    result: { ok: false, reason: 'unknown-check', detail: 'nope' },
    effects: [],
  },
  {
    name: 'stale: a result for an older registration of the check',
    given: [register('c1'), register('c1')],
    when: update('c1', 2, 'probe', 'critical'),
    result: { ok: false, reason: 'stale' },
    effects: [],
  },
];

const ttlExpireCases: Case[] = [
  {
    name: 'no update since the timer was armed: critical, "TTL expired"',
    given: [register('c1', { definition: ttlDefinition })],
    when: { t: 'check.ttlExpire', node: 'n1', checkId: 'c1', ttlUpdateIndex: 2 },
    at: 12_000,
    result: { ok: true },
    effects: touched('c1'),
    then: (s) => expect(s.checkOf('n1', 'c1')).toMatchObject({ status: 'critical', output: 'TTL expired', criticalSinceMs: 12_000 }),
  },
  {
    name: 'the last output is kept after the TTL text',
    given: [register('c1', { definition: ttlDefinition }), update('c1', 2, 'ttl', 'passing', 'fine')],
    when: { t: 'check.ttlExpire', node: 'n1', checkId: 'c1', ttlUpdateIndex: 3 },
    result: { ok: true },
    effects: touched('c1'),
    then: (s) => expect(s.checkOf('n1', 'c1')?.output).toBe('TTL expired (last output before timeout follows): fine'),
  },
  {
    name: 'stale: updated since the timer was armed',
    given: [register('c1', { definition: ttlDefinition }), update('c1', 2, 'ttl', 'passing')],
    when: { t: 'check.ttlExpire', node: 'n1', checkId: 'c1', ttlUpdateIndex: 2 },
    result: { ok: false, reason: 'stale' },
    effects: [],
  },
  {
    name: 'stale: a check without a TTL does not lapse',
    given: [register('c1')],
    when: { t: 'check.ttlExpire', node: 'n1', checkId: 'c1', ttlUpdateIndex: 2 },
    at: t0 * 100,
    result: { ok: false, reason: 'stale' },
    effects: [],
  },
  {
    name: 'unknown-check',
    when: { t: 'check.ttlExpire', node: 'n1', checkId: 'nope', ttlUpdateIndex: 1 },
    result: { ok: false, reason: 'unknown-check', detail: 'nope' },
    effects: [],
  },
];

runTable('apply: checks', {
  'check.register': registerCases,
  'check.deregister': deregisterCases,
  'check.update': updateCases,
  'check.ttlExpire': ttlExpireCases,
} satisfies Table<'check'>);
