// Goal: the state's reads by node and by service (checksOfNode, checksOfService, servicesOfNode,
// instancesOf, sessionsOfNode) come from indexes kept beside the tables; whatever sequence of commands
// is applied — registrations, re-registrations under another name, deregistrations, node removal,
// session create and destroy, a restore — each answers exactly what a scan of the whole table answers.
import fc from 'fast-check';
import { describe, expect, test } from 'vitest';
import type { Command } from '../../src/domain/commands.ts';
import { apply, RegistryState, toSnapshotData } from '../../src/state/index.ts';
import { node, service } from './apply-table.ts';
import { catalogCommand as command, ids, names, nodes } from './catalog-commands.ts';

function applyAll(state: RegistryState, cmds: Command[], from = 1): void {
  cmds.forEach((cmd, i) => apply(state, { index: from + i, atMs: 1_000, pid: `p${from + i}`, cmd }));
}

function expectIndexesMatchScans(state: RegistryState): void {
  const checks = [...state.checks.values()];
  const services = [...state.services.values()];
  const sessions = [...state.sessions.values()];
  const sameItems = <T>(got: T[], want: T[]) => expect(new Set(got)).toEqual(new Set(want));
  for (const n of nodes) {
    sameItems(state.checksOfNode(n), checks.filter((c) => c.node === n));
    sameItems(state.servicesOfNode(n), services.filter((s) => s.node === n));
    sameItems(state.sessionsOfNode(n), sessions.filter((s) => s.node === n));
    for (const s of ['', ...ids]) sameItems(state.checksOfService(n, s), checks.filter((c) => c.node === n && c.serviceId === s));
  }
  for (const name of names) sameItems(state.instancesOf(name), services.filter((s) => s.service === name));
}

describe('reads by node and by service', () => {
  test('agree with a scan of the table after any sequence of commands', () => {
    fc.assert(fc.property(fc.array(command, { minLength: 1, maxLength: 40 }), (cmds) => {
      const state = new RegistryState();
      applyAll(state, [node('n1'), ...cmds]);
      expectIndexesMatchScans(state);
    }), { numRuns: 300 });
  });

  test('agree with a scan after a restore replaces the tables', () => {
    fc.assert(fc.property(fc.array(command, { maxLength: 20 }), fc.array(command, { maxLength: 20 }), (first, second) => {
      const source = new RegistryState();
      applyAll(source, [node('n1'), ...first]);
      const target = new RegistryState();
      applyAll(target, [node('n2'), ...second]);
      apply(target, { index: second.length + 2, atMs: 2_000, pid: 'restore', cmd: { t: 'state.restore', data: toSnapshotData(source) } });
      expectIndexesMatchScans(target);
      expect(target.checksOfNode('n1').map((c) => c.checkId)).toEqual(source.checksOfNode('n1').map((c) => c.checkId));
    }), { numRuns: 200 });
  });

  test('a service re-registered under another name moves between the names', () => {
    const state = new RegistryState();
    applyAll(state, [
      node('n1'),
      { t: 'service.register', node: 'n1', service: service('a', { service: 'web' }), checks: [], replaceExistingChecks: false },
      { t: 'service.register', node: 'n1', service: service('a', { service: 'db' }), checks: [], replaceExistingChecks: false },
    ]);
    expect(state.instancesOf('web')).toEqual([]);
    expect(state.instancesOf('db').map((s) => s.id)).toEqual(['a']);
  });
});
