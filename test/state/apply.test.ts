// Goal: apply is deterministic and snapshot-safe — the same log gives the same state, a snapshot
// restored and replayed to the end equals a full replay, and an unknown command tag stops apply. The
// per-command behaviour is in the tables test/state/apply-{sessions,kv,checks,catalog}.test.ts.
import { describe, expect, test } from 'vitest';
import type { Command } from '../../src/domain/commands.ts';
import type { LogEntry } from '../../src/ports/log.ts';
import { apply, fromSnapshotData, passiveDefinition, RegistryState, toSnapshotData } from '../../src/state/index.ts';
import { check, set } from './apply-table.ts';

/** A small seeded generator so a failing sequence can be replayed from its seed. */
function rng(seed: number) {
  let s = seed >>> 0;
  return () => {
    s = (s * 1664525 + 1013904223) >>> 0;
    return s / 2 ** 32;
  };
}

const webService = {
  id: 'web', service: 'web', kind: '', tags: ['v1'], address: '', port: 80, meta: {}, taggedAddresses: {},
  weights: { Passing: 1, Warning: 1 }, enableTagOverride: false,
};

function ttlCheck(checkId: string) {
  return {
    checkId, name: checkId, notes: '', status: 'passing' as const, output: '', serviceId: '', type: 'ttl' as const,
    definition: { ...passiveDefinition, ttlMs: 10_000, successBeforePassing: 1, failuresBeforeCritical: 2, failuresBeforeWarning: 2, deregisterCriticalServiceAfterMs: 60_000 },
  };
}

function randomLog(seed: number, count: number): LogEntry[] {
  const r = rng(seed);
  const pick = <T>(xs: T[]) => xs[Math.floor(r() * xs.length)]!;
  const sessions = ['s1', 's2', 's3', 's4'];
  const keys = ['a', 'a/b', 'a/c', 'b', 'lock'];
  const services = ['web', 'db'];
  const entries: LogEntry[] = [];
  let atMs = 1_000;
  const push = (cmd: Command) => entries.push({ index: entries.length + 1, atMs: (atMs += Math.floor(r() * 3_000)), pid: `p${entries.length}`, cmd });
  push({ t: 'catalog.register', node: 'n1', id: 'id1', address: '127.0.0.1', meta: {}, checks: [{ checkId: 'gossipHealth', name: 'g', status: 'passing', notes: '', output: '' }] });
  for (let i = 1; i < count; i++) {
    const session = pick(sessions);
    const key = pick(keys);
    const value = r() < 0.2 ? null : Buffer.from(`v${i}`).toString('base64');
    switch (Math.floor(r() * 14)) {
      // Sessions with and without an owner (entries from before owners were recorded have none).
      case 0: push({ t: 'session.create', id: session, node: 'n1', name: '', lockDelayNs: pick([0, 2e9]), behavior: pick(['release', 'delete'] as const), ttl: '10s', ttlMs: 10_000, nodeChecks: ['gossipHealth'], serviceChecks: null, ...pick([{}, { owner: 'alice' }]) }); break;
      case 1: push({ t: 'session.destroy', id: session }); break;
      case 2: push({ t: 'session.renew', id: session }); break;
      case 3: push({ t: 'session.expire', id: session, renewIndex: Math.floor(r() * entries.length) }); break;
      case 4: push({ t: 'kv.acquire', key, value, flags: '3304740253564472344', session }); break;
      case 5: push({ t: 'kv.release', key, value, flags: '0', session }); break;
      case 6: push({ t: 'kv.set', key, value, flags: String(i) }); break;
      case 7: push(r() < 0.5 ? { t: 'kv.delete', key } : { t: 'kv.deleteTree', prefix: 'a' }); break;
      case 8: push({ t: 'kv.cas', key, value, flags: '0', cas: String(Math.floor(r() * entries.length)) }); break;
      case 9: push({ t: 'service.register', node: 'n1', service: { ...webService, id: pick(services) }, checks: [ttlCheck('service:' + pick(services))], replaceExistingChecks: r() < 0.5 }); break;
      case 10: push({ t: 'service.deregister', node: 'n1', serviceId: pick(services) }); break;
      case 11: push({ t: 'check.update', node: 'n1', checkId: 'service:' + pick(services), generation: Math.floor(r() * entries.length), via: pick(['probe', 'ttl'] as const), status: pick(['passing', 'warning', 'critical'] as const), output: `o${i}` }); break;
      case 12: push({ t: 'check.ttlExpire', node: 'n1', checkId: 'service:' + pick(services), ttlUpdateIndex: Math.floor(r() * entries.length) }); break;
      case 13: push({ t: 'session.create', id: session, node: 'n1', name: '', lockDelayNs: 1e9, behavior: 'release', ttl: '', ttlMs: 0, nodeChecks: [], serviceChecks: [{ ID: 'service:' + pick(services), Namespace: '' }] }); break;
    }
  }
  return entries;
}

function replay(entries: LogEntry[], into = new RegistryState()): RegistryState {
  for (const e of entries) if (e.index > into.index) apply(into, e);
  return into;
}

describe('apply', () => {
  test('the same log gives the same state (seeds 1..20)', () => {
    for (let seed = 1; seed <= 20; seed++) {
      const log = randomLog(seed, 400);
      expect(toSnapshotData(replay(log)), `seed ${seed}`).toEqual(toSnapshotData(replay(log)));
    }
  });

  test('snapshot + tail equals a full replay (seeds 1..20, snapshot at every 50th entry)', () => {
    for (let seed = 1; seed <= 20; seed++) {
      const log = randomLog(seed, 300);
      const full = toSnapshotData(replay(log));
      for (let cut = 50; cut < 300; cut += 50) {
        const head = replay(log.slice(0, cut));
        const restored = fromSnapshotData(JSON.parse(JSON.stringify(toSnapshotData(head))));
        expect(toSnapshotData(replay(log, restored)), `seed ${seed} cut ${cut}`).toEqual(full);
      }
    }
  });

  test('no live session is bound to a missing or critical check', () => {
    for (let seed = 1; seed <= 20; seed++) {
      const state = new RegistryState();
      for (const e of randomLog(seed, 400)) {
        apply(state, e);
        for (const session of state.sessions.values()) {
          for (const id of [...session.nodeChecks, ...(session.serviceChecks ?? []).map((x) => x.ID)]) {
            const check = state.checkOf(session.node, id);
            expect(check, `seed ${seed} @${e.index}: ${session.id} bound to missing ${id}`).toBeDefined();
            expect(check!.status, `seed ${seed} @${e.index}: ${session.id} bound to critical ${id}`).not.toBe('critical');
          }
        }
      }
    }
  });

  test('at most one holder per key and the derived lock index agrees with the entries', () => {
    for (let seed = 1; seed <= 20; seed++) {
      const state = new RegistryState();
      for (const e of randomLog(seed, 400)) {
        apply(state, e);
        for (const entry of state.kv.values()) {
          if (entry.session !== undefined) {
            expect(state.sessions.has(entry.session), `seed ${seed} @${e.index}: held by a live session`).toBe(true);
            expect(state.locksBySession.get(entry.session)?.has(entry.key)).toBe(true);
          }
        }
      }
    }
  });

  test('a session keeps the owner its create entry carries through a snapshot; an entry without one applies without', () => {
    const create = (id: string): Command => ({ t: 'session.create', id, node: 'n1', name: '', lockDelayNs: 0, behavior: 'release', ttl: '', ttlMs: 0, nodeChecks: [], serviceChecks: null });
    const cmds: Command[] = [
      { t: 'catalog.register', node: 'n1', id: 'id1', address: '127.0.0.1', meta: {}, checks: [] },
      { ...create('owned'), owner: 'alice' } as Command,
      create('old'),
    ];
    const state = replay(cmds.map((cmd, i) => ({ index: i + 1, atMs: 1_000, pid: `p${i}`, cmd })));
    const restored = fromSnapshotData(JSON.parse(JSON.stringify(toSnapshotData(state))));
    expect(restored.sessions.get('owned')?.owner).toBe('alice');
    expect(restored.sessions.get('old')).toBeDefined();
    expect(restored.sessions.get('old')).not.toHaveProperty('owner');
  });

  test('an unknown command tag stops apply', () => {
    const state = new RegistryState();
    expect(() => apply(state, { index: 1, atMs: 1, pid: 'x', cmd: { t: 'kv.frobnicate' } as unknown as Command })).toThrow(/unknown command tag/);
  });

  test('a tag that names an inherited property of an object is unknown too', () => {
    for (const t of ['constructor', 'toString', '__proto__', 'hasOwnProperty']) {
      const state = new RegistryState();
      expect(() => apply(state, { index: 1, atMs: 1, pid: 'x', cmd: { t } as unknown as Command }), t).toThrow(/unknown command tag/);
    }
  });

  test('barrier: applies as a no-op that only moves the applied index', () => {
    check({
      name: 'barrier', given: [set('k')], when: { t: 'barrier' }, result: { ok: true }, effects: [],
      then: (s) => expect([s.index, s.kvIndex, s.sessionsIndex, s.catalogIndex]).toEqual([3, 2, 0, 1]),
    });
  });

  test('entries must follow the applied index', () => {
    const state = new RegistryState();
    expect(() => apply(state, { index: 2, atMs: 1, pid: 'x', cmd: { t: 'barrier' } })).toThrow(/does not follow/);
  });

  test('time comes from the entry: lock-delay is measured in entry time', () => {
    const state = new RegistryState();
    let i = 0;
    const at = (atMs: number, cmd: Command) => apply(state, { index: ++i, atMs, pid: String(i), cmd });
    at(0, { t: 'catalog.register', node: 'n', id: '', address: 'a', meta: {}, checks: [] });
    at(0, { t: 'session.create', id: 'A', node: 'n', name: '', lockDelayNs: 5e9, behavior: 'release', ttl: '', ttlMs: 0, nodeChecks: [], serviceChecks: null });
    at(0, { t: 'session.create', id: 'B', node: 'n', name: '', lockDelayNs: 0, behavior: 'release', ttl: '', ttlMs: 0, nodeChecks: [], serviceChecks: null });
    expect(at(1_000, { t: 'kv.acquire', key: 'k', value: null, flags: '0', session: 'A' }).result.ok).toBe(true);
    at(2_000, { t: 'session.destroy', id: 'A' });
    expect(at(6_999, { t: 'kv.acquire', key: 'k', value: null, flags: '0', session: 'B' }).result).toEqual({ ok: false, reason: 'lock-delay' });
    expect(at(7_000, { t: 'kv.acquire', key: 'k', value: null, flags: '0', session: 'B' }).result.ok).toBe(true);
  });
});
