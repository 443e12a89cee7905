// Goal: the catalog table of the pure apply, command by command — catalog.register and deregister,
// service.register, deregister and reap — each case a given state, one entry, and the result, effects and
// state change apply must give (consul-compat.md catalog and §4 Reaper), every failure included.
import { expect } from 'vitest';
import type { CheckRegistration, ServiceRegister } from '../../src/domain/commands.ts';
import { passiveDefinition, type Effect } from '../../src/state/index.ts';
import { gossip, node, registration, service, session, runTable, type Case, type Table } from './apply-table.ts';

function registerService(id: string, checks: CheckRegistration[] = [], over: Partial<ServiceRegister> = {}): ServiceRegister {
  return { t: 'service.register', node: 'n1', service: service(id), checks, replaceExistingChecks: false, ...over };
}

const checkOf = (node: string, checkId: string, serviceId = ''): Effect => ({ t: 'check', node, checkId, serviceId });
const invalidated = (id: string): Effect[] => [{ t: 'sessions' }, { t: 'session', id }, { t: 'ttl.cancel', id }];
/** A service name's index moved (state/apply/service-index.ts). */
const indexed = (name: string): Effect => ({ t: 'serviceIndex', name });
const reapable = registration('svc', { definition: { ...passiveDefinition, deregisterCriticalServiceAfterMs: 60_000 } });

const registerCases: Case[] = [
  {
    name: 'a new node with its node checks',
    when: node('n2'),
    result: { ok: true },
    effects: [{ t: 'catalog' }, { t: 'node', node: 'n2' }, { t: 'catalog' }, checkOf('n2', 'gossipHealth')],
    then: (s) => {
      expect(s.nodes.get('n2')).toEqual({ id: 'id-n2', node: 'n2', address: '10.0.0.1', meta: {}, createIndex: 2, modifyIndex: 2 });
      expect(s.checkOf('n2', 'gossipHealth')).toMatchObject({ source: 'catalog', status: 'passing', type: '' });
    },
  },
  {
    name: 'the same registration again changes nothing',
    when: node('n1'),
    result: { ok: true },
    effects: [],
  },
  {
    name: 'a changed address: ModifyIndex moves, CreateIndex stays',
    when: node('n1', [gossip], '10.0.0.2'),
    result: { ok: true },
    effects: [{ t: 'catalog' }, { t: 'node', node: 'n1' }],
    then: (s) => expect(s.nodes.get('n1')).toMatchObject({ address: '10.0.0.2', createIndex: 1, modifyIndex: 2 }),
  },
  {
    name: 'a node check turning critical invalidates the sessions bound to it',
    given: [session('s1')],
    when: node('n1', [{ ...gossip, status: 'critical', output: 'unreachable' }]),
    result: { ok: true },
    effects: [{ t: 'catalog' }, checkOf('n1', 'gossipHealth'), ...invalidated('s1')],
    then: (s) => {
      expect(s.checkOf('n1', 'gossipHealth')).toMatchObject({ status: 'critical', output: 'unreachable', modifyIndex: 3 });
      expect(s.sessions.size).toBe(0);
    },
  },
  {
    name: 'without replaces apply checks no ID, as older releases do (the front end refuses a held one)',
    when: { ...node('n2', []), id: 'ID-N1' },
    result: { ok: true },
    effects: [{ t: 'catalog' }, { t: 'node', node: 'n2' }],
    then: (s) => expect([...s.nodes.values()].map((n) => n.id)).toEqual(['id-n1', 'ID-N1']),
  },
  {
    name: 'node-id-taken: a rename whose replaced node is not the one holding the ID',
    given: [node('n3')],
    when: { ...node('n2'), id: 'id-n1', replaces: 'n3' },
    result: { ok: false, reason: 'node-id-taken', detail: 'n1' },
    effects: [],
    then: (s) => expect([...s.nodes.keys()]).toEqual(['n1', 'n3']),
  },
  {
    name: 'a rename: the node holding the ID, named as replaced, goes with its services, checks and sessions',
    given: [session('s1'), registerService('web', [registration('svc')])],
    when: { ...node('n2'), id: 'id-n1', replaces: 'n1' },
    result: { ok: true },
    effects: [
      ...invalidated('s1'), { t: 'service', node: 'n1', serviceId: 'web' }, indexed('web'),
      checkOf('n1', 'gossipHealth'), checkOf('n1', 'svc', 'web'), { t: 'catalog' }, { t: 'node', node: 'n1' },
      { t: 'catalog' }, { t: 'node', node: 'n2' }, { t: 'catalog' }, checkOf('n2', 'gossipHealth'),
    ],
    then: (s) => {
      expect([...s.nodes.values()].map((n) => [n.node, n.id, n.createIndex])).toEqual([['n2', 'id-n1', 4]]);
      expect([s.services.size, s.sessions.size, s.checks.size]).toEqual([0, 0, 1]);
    },
  },
  {
    name: 'a rename whose replaced node is gone by then registers the node',
    given: [{ t: 'catalog.deregister', node: 'n1' }],
    when: { ...node('n2', []), id: 'id-n1', replaces: 'n1' },
    result: { ok: true },
    effects: [{ t: 'catalog' }, { t: 'node', node: 'n2' }],
    then: (s) => expect([...s.nodes.keys()]).toEqual(['n2']),
  },
  {
    name: 'a node re-registered with the ID it has stays, even when another node holds the same ID',
    given: [{ ...node('n2'), id: 'id-n1', replaces: 'n1' }, node('n1')],
    when: { ...node('n2'), id: 'id-n1', address: '10.0.0.9' },
    result: { ok: true },
    effects: [{ t: 'catalog' }, { t: 'node', node: 'n2' }],
    then: (s) => expect(s.nodes.get('n2')).toMatchObject({ id: 'id-n1', address: '10.0.0.9' }),
  },
];

const deregisterCases: Case[] = [
  {
    name: 'the whole node: its sessions invalidated, its services and checks removed',
    given: [session('s1'), registerService('web', [registration('svc')])],
    when: { t: 'catalog.deregister', node: 'n1' },
    result: { ok: true },
    effects: [
      ...invalidated('s1'), { t: 'service', node: 'n1', serviceId: 'web' }, indexed('web'),
      checkOf('n1', 'gossipHealth'), checkOf('n1', 'svc', 'web'), { t: 'catalog' }, { t: 'node', node: 'n1' },
    ],
    then: (s) => {
      expect([s.nodes.size, s.services.size, s.checks.size, s.sessions.size]).toEqual([0, 0, 0, 0]);
      expect(s.catalogIndex).toBe(4);
    },
  },
  {
    name: 'one check of the node: removed, the sessions bound to it invalidated, the node kept',
    given: [session('s1')],
    when: { t: 'catalog.deregister', node: 'n1', checkId: 'gossipHealth' },
    result: { ok: true },
    effects: [{ t: 'catalog' }, checkOf('n1', 'gossipHealth'), ...invalidated('s1')],
    then: (s) => expect(s.nodes.has('n1')).toBe(true),
  },
  {
    name: 'unknown-node',
    when: { t: 'catalog.deregister', node: 'nx' },
    result: { ok: false, reason: 'unknown-node', detail: 'nx' },
    effects: [],
  },
  {
    name: 'unknown-check: the check given is not on the node',
    when: { t: 'catalog.deregister', node: 'n1', checkId: 'nope' },
    result: { ok: false, reason: 'unknown-check', detail: 'nope' },
    effects: [],
  },
];

const serviceRegisterCases: Case[] = [
  {
    name: 'a new service instance on the node',
    when: registerService('web'),
    result: { ok: true },
    effects: [{ t: 'catalog' }, { t: 'service', node: 'n1', serviceId: 'web' }, indexed('web')],
    then: (s) => expect(s.services.get(s.serviceKey('n1', 'web'))).toEqual({ ...service('web'), node: 'n1', createIndex: 2, modifyIndex: 2 }),
  },
  {
    name: 'its checks are registered as checks of the service',
    when: registerService('web', [registration('svc')]),
    result: { ok: true },
    effects: [{ t: 'catalog' }, { t: 'service', node: 'n1', serviceId: 'web' }, indexed('web'), { t: 'catalog' }, checkOf('n1', 'svc', 'web'), indexed('web')],
    then: (s) => expect(s.checkOf('n1', 'svc')).toMatchObject({ serviceId: 'web', serviceName: 'web', source: 'agent' }),
  },
  {
    name: 'replaceExistingChecks removes the checks it does not list; CreateIndex stays',
    given: [registerService('web', [registration('a'), registration('b')])],
    when: registerService('web', [registration('a')], { replaceExistingChecks: true }),
    result: { ok: true },
    effects: [
      { t: 'catalog' }, { t: 'service', node: 'n1', serviceId: 'web' }, indexed('web'),
      { t: 'catalog' }, checkOf('n1', 'b', 'web'), indexed('web'), { t: 'catalog' }, checkOf('n1', 'a', 'web'), indexed('web'),
    ],
    then: (s) => {
      expect(s.checksOfService('n1', 'web').map((c) => c.checkId)).toEqual(['a']);
      expect(s.services.get(s.serviceKey('n1', 'web'))?.createIndex).toBe(2);
    },
  },
  {
    name: 'checks not re-registered keep in step with the service name and tags',
    given: [registerService('web', [registration('a')])],
    when: { ...registerService('web'), service: service('web', { tags: ['v2'] }) },
    result: { ok: true },
    effects: [{ t: 'catalog' }, { t: 'service', node: 'n1', serviceId: 'web' }, indexed('web'), checkOf('n1', 'a', 'web')],
    then: (s) => expect(s.checkOf('n1', 'a')).toMatchObject({ serviceTags: ['v2'], modifyIndex: 3 }),
  },
  {
    name: 'unknown-node',
    when: registerService('web', [], { node: 'nx' }),
    result: { ok: false, reason: 'unknown-node', detail: 'nx' },
    effects: [],
  },
];

const serviceDeregisterCases: Case[] = [
  {
    name: 'removes the service and its checks, invalidating the sessions bound to them',
    given: [registerService('web', [registration('svc')]), session('s1', { nodeChecks: [], serviceChecks: [{ ID: 'svc', Namespace: '' }] })],
    when: { t: 'service.deregister', node: 'n1', serviceId: 'web' },
    result: { ok: true },
    effects: [{ t: 'catalog' }, checkOf('n1', 'svc', 'web'), ...invalidated('s1'), { t: 'catalog' }, { t: 'service', node: 'n1', serviceId: 'web' }, indexed('web')],
    then: (s) => expect([s.services.size, s.checksOfService('n1', 'web').length, s.sessions.size]).toEqual([0, 0, 0]),
  },
  {
    name: 'unknown-service',
    when: { t: 'service.deregister', node: 'n1', serviceId: 'web' },
    result: { ok: false, reason: 'unknown-service', detail: 'web' },
    effects: [],
  },
];

const criticalWeb = [registerService('web', [reapable]), { t: 'check.update', node: 'n1', checkId: 'svc', generation: 2, via: 'ttl', status: 'critical', output: '' } as const];
const reap = (criticalSinceMs: number, serviceId = 'web', checkId = 'svc') => ({ t: 'service.reap', node: 'n1', serviceId, checkId, criticalSinceMs } as const);

const reapCases: Case[] = [
  {
    name: 'critical longer than DeregisterCriticalServiceAfter: the service is deregistered',
    given: criticalWeb,
    when: reap(1_000),
    at: 61_000,
    result: { ok: true },
    effects: [{ t: 'catalog' }, checkOf('n1', 'svc', 'web'), { t: 'catalog' }, { t: 'service', node: 'n1', serviceId: 'web' }, indexed('web')],
    then: (s) => expect(s.services.size).toBe(0),
  },
  {
    name: 'stale: not critical long enough yet',
    given: criticalWeb,
    when: reap(1_000),
    at: 60_999,
    result: { ok: false, reason: 'stale' },
    effects: [],
  },
  {
    name: 'stale: the check recovered and went critical again since',
    given: criticalWeb,
    when: reap(500),
    at: 99_000,
    result: { ok: false, reason: 'stale' },
    effects: [],
  },
  {
    name: 'stale: the check is gone or belongs to another service',
    given: criticalWeb,
    when: reap(1_000, 'db'),
    at: 99_000,
    result: { ok: false, reason: 'stale' },
    effects: [],
  },
  {
    name: 'unknown-service: a node check with the setting has no service to remove',
    given: [{ t: 'check.register', node: 'n1', check: { ...reapable, checkId: 'c1', status: 'critical' } }],
    when: reap(1_000, '', 'c1'),
    at: 61_000,
    result: { ok: false, reason: 'unknown-service', detail: '' },
    effects: [],
  },
];

runTable('apply: catalog', {
  'catalog.register': registerCases,
  'catalog.deregister': deregisterCases,
  'service.register': serviceRegisterCases,
  'service.deregister': serviceDeregisterCases,
  'service.reap': reapCases,
} satisfies Table<'catalog' | 'service'>);
