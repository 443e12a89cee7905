// Goal: the per-service index (RegistryState.serviceIndex, state/apply/service-index.ts) agrees with a scan of
// the tables: whatever catalog and session commands are applied, a service name's index moves to the entry's
// index exactly when what its reads show changes (its instances, their checks, the nodes holding them and those
// nodes' checks), so another service's change never moves it; it never goes back (a name without instances
// reads the catalog's index); it is held for exactly the names with instances; a snapshot keeps it, one of an
// older release without it starts each name at the catalog index, and a restore puts every name at its index.
import fc from 'fast-check';
import { describe, expect, test } from 'vitest';
import type { Command } from '../../src/domain/commands.ts';
import { apply, fromSnapshotData, RegistryState, toSnapshotData } from '../../src/state/index.ts';
import { node, service } from './apply-table.ts';
import { catalogCommand as command, names } from './catalog-commands.ts';

const entry = (index: number, cmd: Command) => ({ index, atMs: 1_000, pid: `p${index}`, cmd });

/** What the reads of a service show, found by scanning the tables: its instances, their nodes, checks and node checks. */
function scan(state: RegistryState, name: string): string {
  const checks = [...state.checks.values()].map((c) => ({
    node: c.node, checkId: c.checkId, name: c.name, status: c.status, output: c.output, notes: c.notes, serviceId: c.serviceId,
    serviceName: c.serviceName, serviceTags: c.serviceTags, createIndex: c.createIndex, modifyIndex: c.modifyIndex,
  }));
  const instances = [...state.services.values()].filter((s) => s.service === name)
    .sort((a, b) => `${a.node}\0${a.id}`.localeCompare(`${b.node}\0${b.id}`));
  return JSON.stringify(instances.map((s) => ({
    s, node: state.nodes.get(s.node), checks: checks.filter((c) => c.node === s.node && (c.serviceId === '' || c.serviceId === s.id)),
  })));
}

function expectHeldForNamesWithInstances(state: RegistryState): void {
  const withInstances = new Set([...state.services.values()].map((s) => s.service));
  expect(new Set(state.serviceIndexes.keys())).toEqual(withInstances);
  for (const index of state.serviceIndexes.values()) expect(index).toBeLessThanOrEqual(state.catalogIndex);
}

/** Applies each command, checking every name's index against the scan before and after it. */
function applyChecked(state: RegistryState, cmds: Command[], from: number): void {
  const watched = [...names, 'none'];
  cmds.forEach((cmd, i) => {
    const index = from + i;
    const before = watched.map((n) => ({ shown: scan(state, n), index: state.serviceIndex(n), held: state.serviceIndexes.has(n) }));
    apply(state, entry(index, cmd));
    watched.forEach((n, k) => {
      const was = before[k]!;
      const now = state.serviceIndex(n);
      expect(now, `${n} went back after ${JSON.stringify(cmd)}`).toBeGreaterThanOrEqual(was.index);
      if (scan(state, n) !== was.shown) expect(now, `${n} changed by ${JSON.stringify(cmd)}`).toBe(index);
      else if (was.held && state.serviceIndexes.has(n)) expect(now, `${n} moved by ${JSON.stringify(cmd)}`).toBe(was.index);
    });
    expectHeldForNamesWithInstances(state);
  });
}

const register = (id: string, name: string, n = 'n1'): Command =>
  ({ t: 'service.register', node: n, service: service(id, { service: name }), checks: [], replaceExistingChecks: false });

describe('the per-service index', () => {
  test('moves exactly when a scan of the service changes, never goes back, and is held while the name has instances', () => {
    fc.assert(fc.property(fc.array(command, { minLength: 1, maxLength: 40 }), (cmds) => {
      const state = new RegistryState();
      apply(state, entry(1, node('n1')));
      applyChecked(state, cmds, 2);
    }), { numRuns: 300 });
  });

  test('a snapshot keeps it; a snapshot without it (an older release) gives each name the catalog index', () => {
    fc.assert(fc.property(fc.array(command, { maxLength: 30 }), (cmds) => {
      const state = new RegistryState();
      apply(state, entry(1, node('n1')));
      cmds.forEach((cmd, i) => apply(state, entry(i + 2, cmd)));
      const data = toSnapshotData(state);
      expect(fromSnapshotData(JSON.parse(JSON.stringify(data))).serviceIndexes).toEqual(state.serviceIndexes);
      const { serviceIndexes: _, ...older } = data;
      const loaded = fromSnapshotData(older);
      expectHeldForNamesWithInstances(loaded);
      for (const [name, index] of state.serviceIndexes) expect(loaded.serviceIndex(name)).toBeGreaterThanOrEqual(index);
      for (const index of loaded.serviceIndexes.values()) expect(index).toBe(state.catalogIndex);
    }), { numRuns: 200 });
  });

  test('a restore puts every name with instances at the restore\'s index', () => {
    fc.assert(fc.property(fc.array(command, { maxLength: 20 }), fc.array(command, { maxLength: 20 }), (first, second) => {
      const source = new RegistryState();
      apply(source, entry(1, node('n1')));
      first.forEach((cmd, i) => apply(source, entry(i + 2, cmd)));
      const target = new RegistryState();
      apply(target, entry(1, node('n2')));
      second.forEach((cmd, i) => apply(target, entry(i + 2, cmd)));
      const at = second.length + 2;
      apply(target, entry(at, { t: 'state.restore', data: toSnapshotData(source) }));
      expectHeldForNamesWithInstances(target);
      for (const index of target.serviceIndexes.values()) expect(index).toBe(at);
    }), { numRuns: 200 });
  });

  test('another service\'s registration leaves a name\'s index; its own check, its node, and its last instance\'s removal move it', () => {
    const state = new RegistryState();
    const cmds: Command[] = [node('n1'), node('n2'), register('a', 'web'), register('b', 'db', 'n2')];
    cmds.forEach((cmd, i) => apply(state, entry(i + 1, cmd)));
    expect([state.serviceIndex('web'), state.serviceIndex('db')]).toEqual([3, 4]);
    apply(state, entry(5, register('c', 'db', 'n2')));
    expect(state.serviceIndex('web')).toBe(3);
    apply(state, entry(6, { ...node('n1'), address: '10.9.9.9' }));
    expect([state.serviceIndex('web'), state.serviceIndex('db')]).toEqual([6, 5]);
    apply(state, entry(7, { t: 'service.deregister', node: 'n1', serviceId: 'a' }));
    expect(state.serviceIndexes.has('web')).toBe(false);
    expect(state.serviceIndex('web')).toBe(7);
    apply(state, entry(8, register('d', 'db', 'n2')));
    expect(state.serviceIndex('web')).toBe(8);
  });
});
