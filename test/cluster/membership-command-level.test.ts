// Goal: a rolling upgrade never feeds an older node a command it does not know. Each node's heartbeat
// carries its release's command level (absent in older releases: level 1), the member table keeps it, and
// the runtime's gate refuses a command above the level of any member that has not left, naming them,
// after waiting (during a start's grace) to hear from every Roster node; level-1 commands always pass.
// The gate against real nodes of an older release: test/faults/rolling-upgrade.test.ts.
import { describe, expect, test } from 'vitest';
import { decodeHeartbeat, encodeHeartbeat, type Heartbeat } from '../../cluster/heartbeat.ts';
import { MemberTable } from '../../cluster/member-table.ts';
import { commandLevel, commandLevelOf, RegistryError, type Command } from '../../src/domain/index.ts';
import type { Member } from '../../src/ports/index.ts';
import { commandRefusal, gatedSubmit, type GateHost } from '../../src/runtime/command-gate.ts';
import type { Result } from '../../src/state/index.ts';

const hb = (name: string, extra: Partial<Heartbeat> = {}): Heartbeat => ({ name, id: `id-${name}`, http: `${name}:80`, grpc: `${name}:81`, inc: 1, seq: 0, ...extra });
const member = (name: string, status: Member['status'], level?: number): Member => ({
  name, id: name, http: '', grpc: '', status, lastHeardMs: 0, ...(level === undefined ? {} : { commandLevel: level }),
});
const txn: Command = { t: 'txn.kv', ops: [] };
const put: Command = { t: 'kv.set', key: 'k', value: '', flags: 0 } as unknown as Command;

describe('command levels on the wire and in the member table', () => {
  test('the heartbeat carries cl; a heartbeat without it (an older release) is level 1', () => {
    const decoded = decodeHeartbeat(encodeHeartbeat(hb('n1', { cl: commandLevel })));
    expect(decoded).toMatchObject({ name: 'n1', cl: commandLevel });
    const table = new MemberTable({ name: 'n0', id: 'id-n0', http: '', grpc: '' });
    table.heard(decodeHeartbeat(encodeHeartbeat(hb('n1', { cl: 2 }))) as Heartbeat, 1);
    table.heard(decodeHeartbeat(encodeHeartbeat(hb('n2'))) as Heartbeat, 1);
    expect(table.members(1).map((m) => [m.name, m.commandLevel])).toEqual([['n0', commandLevel], ['n1', 2], ['n2', 1]]);
  });

  test('a cl that is not a positive integer is read as absent', () => {
    for (const cl of [0, -1, 1.5, '2', null]) {
      const raw = new TextEncoder().encode(JSON.stringify({ ...hb('n1'), cl }));
      expect((decodeHeartbeat(raw) as Heartbeat).cl).toBeUndefined();
    }
  });

  test('transactions and restores are level 2, a node rename by ID or with tagged addresses level 5 (written in log format 2), everything else level 1', () => {
    expect(commandLevelOf(txn)).toBe(2);
    expect(commandLevelOf({ t: 'state.restore', data: {} })).toBe(2);
    const register: Command = { t: 'catalog.register', node: 'b', id: 'x', address: '10.0.0.1', meta: {}, checks: [] };
    expect(commandLevelOf({ ...register, replaces: 'a' })).toBe(5);
    expect(commandLevelOf({ ...register, taggedAddresses: { wan: '1.2.3.4' } })).toBe(5);
    expect(commandLevelOf(register)).toBe(1);
    expect(commandLevelOf(put)).toBe(1);
    expect(commandLevel).toBe(5);
  });
});

describe('the runtime gate (commandRefusal)', () => {
  const members = [member('n1', 'alive', 2), member('n2', 'alive'), member('n3', 'failed', 1), member('n4', 'left', 1)];

  test('a command above a member\'s level is refused, naming every member behind that has not left', () => {
    const refused = commandRefusal([put, txn], () => members, 'n1');
    expect(refused).toBeInstanceOf(RegistryError);
    expect(refused!.status).toBe(503);
    expect(refused!.code).toBe(1016);
    expect(refused!.details).toEqual({ needsCommandLevel: 2, behind: [{ node: 'n2', level: 1, status: 'alive' }, { node: 'n3', level: 1, status: 'failed' }], retryAfterSeconds: 5 });
    expect(refused!.headers).toEqual([['Retry-After', '5']]);
    expect(refused!.message).toMatch(/^a transaction \(PUT \/v1\/txn\) needs every node of the cluster to run a release of command level 2/);
    expect(refused!.consulText).toMatch(/n2, n3 runs an older release/);
  });

  test('level-1 commands pass without looking at the members; a cluster all at level 2 takes level 2', () => {
    expect(commandRefusal([put], () => { throw new Error('members read for a level-1 command'); }, 'n1')).toBeUndefined();
    expect(commandRefusal([txn], () => [member('n1', 'alive', 2), member('n2', 'alive', 2), member('n3', 'left', 1)], 'n1')).toBeUndefined();
    // The own node is never behind itself, whatever its entry says.
    expect(commandRefusal([txn], () => [member('n1', 'alive', 1)], 'n1')).toBeUndefined();
  });

});

describe('gatedSubmit: the runtime\'s path for every append', () => {
  const host = (members: Member[], heard: Promise<void> = Promise.resolve()) => {
    const submitted: Command[][] = [];
    const h: GateHost = {
      overQuota: () => undefined, selfName: 'n1', members: () => members, heardOrGraceOver: () => heard,
      submit: (cmds) => { submitted.push([...cmds]); return cmds.map((_, i) => Promise.resolve({ ok: true, value: i } as unknown as Result)); },
    };
    return { h, submitted };
  };

  test('an append of level-1 commands is left to the caller at once', () => {
    const { h, submitted } = host([member('n2', 'alive')], new Promise(() => {}));
    expect(gatedSubmit([put, put], h)).toBeUndefined();
    expect(submitted).toEqual([]);
  });

  test('a level-2 command waits for gossip (or the grace\'s end), then is submitted when no member is behind', async () => {
    let hear: () => void = () => {};
    const members = [member('n1', 'alive', 2)];
    const { h, submitted } = host(members, new Promise((resolve) => { hear = resolve; }));
    const results = gatedSubmit([put, txn], h)!;
    await new Promise((resolve) => setTimeout(resolve, 20));
    expect(submitted).toEqual([]);
    // Heard meanwhile: n2, at level 2.
    members.push(member('n2', 'alive', 2));
    hear();
    expect(await Promise.all(results)).toEqual([{ ok: true, value: 0 }, { ok: true, value: 1 }]);
    expect(submitted).toEqual([[put, txn]]);
  });

  test('refused after the wait when a member heard meanwhile is behind: every command of the append rejects, nothing is submitted', async () => {
    const { h, submitted } = host([member('n1', 'alive', 2), member('n2', 'alive', 1)]);
    const results = gatedSubmit([txn, put], h)!;
    for (const r of results) await expect(r).rejects.toMatchObject({ error: 'clusterBehind', status: 503, details: { needsCommandLevel: 2, behind: [{ node: 'n2', level: 1, status: 'alive' }] } });
    expect(submitted).toEqual([]);
  });
});
