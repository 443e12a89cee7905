// Goal: the KV share of the state's size estimate (state.kvBytes, which the state quota reads on every
// write) stays equal to the sum over the entries whatever the writes, deletes, lock steps, transactions,
// session invalidations and restores, so the quota never drifts from the state it bounds.
import fc from 'fast-check';
import { expect, test } from 'vitest';
import type { Command } from '../../src/domain/commands.ts';
import { apply, fromSnapshotData, RegistryState, stateBytes, toSnapshotData } from '../../src/state/index.ts';
import { kvEntryBytes } from '../../src/state/size.ts';

const keys = ['a', 'a/b', 'a/c', 'b', 'long/key/name'];
const values = [null, 'eA==', 'eHh4eHh4eHh4eA==', 'x'.repeat(400)];
const sessions = ['s1', 's2'];

const command: fc.Arbitrary<Command> = fc.oneof(
  fc.record({ key: fc.constantFrom(...keys), value: fc.constantFrom(...values) }).map(({ key, value }): Command => ({ t: 'kv.set', key, value, flags: '0' })),
  fc.record({ key: fc.constantFrom(...keys), value: fc.constantFrom(...values), session: fc.constantFrom(...sessions) })
    .map(({ key, value, session }): Command => ({ t: 'kv.acquire', key, value, flags: '0', session })),
  fc.record({ key: fc.constantFrom(...keys), value: fc.constantFrom(...values), session: fc.constantFrom(...sessions) })
    .map(({ key, value, session }): Command => ({ t: 'kv.release', key, value, flags: '0', session })),
  fc.constantFrom(...keys).map((key): Command => ({ t: 'kv.delete', key })),
  fc.constantFrom('a', 'a/', '').map((prefix): Command => ({ t: 'kv.deleteTree', prefix })),
  fc.constantFrom(...sessions).map((id): Command => ({ t: 'session.destroy', id })),
  fc.record({ key: fc.constantFrom(...keys), value: fc.constantFrom(...values), del: fc.constantFrom(...keys) }).map(({ key, value, del }): Command => ({
    t: 'txn.kv', ops: [
      { verb: 'set', key, value, flags: '0', index: '0', session: '' },
      { verb: 'delete', key: del, value: null, flags: '0', index: '0', session: '' },
    ],
  })),
);

/** s1 releases its locks when it ends, s2 deletes the keys it holds. */
function sessionCreate(id: string): Command {
  const behavior = id === 's1' ? 'release' : 'delete';
  return { t: 'session.create', id, node: 'n1', name: '', lockDelayNs: 0, behavior, ttl: '', ttlMs: 0, nodeChecks: [], serviceChecks: null } as unknown as Command;
}

const kvSum = (s: RegistryState) => [...s.kv.values()].reduce((sum, e) => sum + kvEntryBytes(e), 0);

test('kvBytes equals the sum over the entries after any sequence of commands, and after a snapshot round trip', () => {
  fc.assert(fc.property(fc.array(command, { maxLength: 40 }), (cmds) => {
    const state = new RegistryState();
    let index = 0;
    const step = (cmd: Command) => apply(state, { index: ++index, atMs: 1000 + index, pid: `p${index}`, cmd });
    step({ t: 'catalog.register', node: 'n1', id: 'id-n1', address: '127.0.0.1', meta: {}, checks: [] });
    for (const id of sessions) expect(step(sessionCreate(id)).result.ok).toBe(true);
    for (const cmd of cmds) {
      step(cmd);
      expect(state.kvBytes).toBe(kvSum(state));
    }
    const restored = fromSnapshotData(toSnapshotData(state));
    expect(restored.kvBytes).toBe(state.kvBytes);
    expect(stateBytes(restored)).toBe(stateBytes(state));
  }), { numRuns: 300 });
});

test('a lock step and its session\'s end are counted: the holder\'s id while held, its keys gone with a deleting session', () => {
  const state = new RegistryState();
  let index = 0;
  const step = (cmd: Command) => apply(state, { index: ++index, atMs: 1000 + index, pid: `p${index}`, cmd });
  step({ t: 'catalog.register', node: 'n1', id: 'id-n1', address: '127.0.0.1', meta: {}, checks: [] });
  step(sessionCreate('s2'));
  step({ t: 'kv.set', key: 'k', value: 'eA==', flags: '0' });
  const unheld = state.kvBytes;
  expect(step({ t: 'kv.acquire', key: 'k', value: 'eA==', flags: '0', session: 's2' }).result.ok).toBe(true);
  expect(state.kvBytes).toBe(unheld + 's2'.length);
  step({ t: 'session.destroy', id: 's2' });
  expect(state.kv.size).toBe(0);
  expect(state.kvBytes).toBe(0);
});
