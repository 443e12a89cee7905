// Goal: the pure parts of gossip membership — member statuses from heartbeats and time, the heartbeat wire format, seed addresses — behave as DESIGN §4 says, without a network.
import { describe, expect, test } from 'vitest';
import { MemberTable, startedFirst } from '../../cluster/member-table.ts';
import { decodeHeartbeat, encodeHeartbeat, heartbeatBytesMax, type Heartbeat } from '../../cluster/heartbeat.ts';
import { seedAddr } from '../../cluster/addresses.ts';
import { GossipMembership } from '../../cluster/gossip-membership.ts';
import { commandLevel } from '../../src/domain/index.ts';

const self = { name: 'm2', id: 'id-2', http: '127.0.0.1:8502', grpc: '127.0.0.1:8602' };
const suspicionMs = 5_000;
const t0 = 1_000_000;

function hb(name: string, inc: number, seq: number, extra: Partial<Heartbeat> = {}): Heartbeat {
  return { name, id: `id-${name}`, http: `${name}:80`, grpc: `${name}:81`, inc, seq, ...extra };
}

function statuses(table: MemberTable, now = t0): string[] {
  return table.members(now).map((m) => `${m.name}:${m.status}`);
}

describe('MemberTable', () => {
  test('the own node is alive, first, heard now; alive() is sorted and includes it', () => {
    const table = new MemberTable(self);
    expect(table.members(t0)).toEqual([{ ...self, status: 'alive', lastHeardMs: t0, commandLevel }]);
    table.heard(hb('m3', 1, 0), t0);
    table.heard(hb('m1', 1, 0), t0);
    expect(table.alive()).toEqual(['m1', 'm2', 'm3']);
    expect(statuses(table)).toEqual(['m2:alive', 'm1:alive', 'm3:alive']);
  });

  test('a heartbeat carrying the own name is ignored', () => {
    const table = new MemberTable(self);
    expect(table.heard(hb('m2', 1, 0, { leaving: true }), t0)).toBe(false);
    expect(statuses(table)).toEqual(['m2:alive']);
  });

  test('two live nodes under one name: every table keeps the one that started first, whichever it heard first', () => {
    const first = hb('m1', 100, 0, { id: 'id-z' });
    const later = hb('m1', 200, 0, { id: 'id-a' });
    for (const order of [[first, later], [later, first]]) {
      const table = new MemberTable(self);
      for (let seq = 0; seq < 3; seq++) for (const h of order) table.heard({ ...h, seq }, t0 + seq);
      expect(table.members(t0).find((m) => m.name === 'm1')!.id).toBe('id-z');
    }
    // Started in the same millisecond, the smaller node ID keeps the name.
    const table = new MemberTable(self);
    expect(table.heard(hb('m1', 100, 5, { id: 'id-b' }), t0)).toBe(true);
    expect(table.heard(hb('m1', 100, 0, { id: 'id-a' }), t0)).toBe(true);
    expect(table.heard(hb('m1', 100, 9, { id: 'id-b' }), t0)).toBe(false);
    expect(table.members(t0).find((m) => m.name === 'm1')!.id).toBe('id-a');
    expect(startedFirst({ inc: 1, id: 'b', name: 'n' }, { inc: 2, id: 'a', name: 'n' })).toBe(true);
    expect(startedFirst({ inc: 2, id: 'a', name: 'n' }, { inc: 1, id: 'b', name: 'n' })).toBe(false);
    expect(startedFirst({ inc: 1, id: 'a', name: 'n' }, { inc: 1, id: 'b', name: 'n' })).toBe(true);
    // One ID under two names (a copied data dir): the name decides a tie.
    expect(startedFirst({ inc: 1, id: 'a', name: 'm' }, { inc: 1, id: 'a', name: 'n' })).toBe(true);
    expect(startedFirst({ inc: 1, id: 'a', name: 'n' }, { inc: 1, id: 'a', name: 'm' })).toBe(false);
  });

  test('a node under a name whose holder failed takes it over, as a restart would', () => {
    const table = new MemberTable(self);
    table.heard(hb('m1', 100, 0, { id: 'id-old' }), t0);
    expect(table.heard(hb('m1', 200, 0, { id: 'id-new' }), t0 + 1_000)).toBe(false);
    table.sweep(t0 + suspicionMs, suspicionMs);
    expect(table.heard(hb('m1', 200, 1, { id: 'id-new' }), t0 + suspicionMs + 1)).toBe(true);
    expect(table.members(t0).find((m) => m.name === 'm1')).toMatchObject({ id: 'id-new', status: 'alive' });
  });

  test('join is a change; later heartbeats refresh lastHeardMs without one', () => {
    const table = new MemberTable(self);
    expect(table.heard(hb('m1', 1, 0), t0)).toBe(true);
    expect(table.heard(hb('m1', 1, 1), t0 + 1_000)).toBe(false);
    expect(table.members(t0 + 1_000)[1]).toMatchObject({ name: 'm1', id: 'id-m1', http: 'm1:80', grpc: 'm1:81', lastHeardMs: t0 + 1_000 });
  });

  test('unheard for suspicionMs is failed, not a millisecond earlier', () => {
    const table = new MemberTable(self);
    table.heard(hb('m1', 1, 0), t0);
    expect(table.sweep(t0 + suspicionMs - 1, suspicionMs)).toBe(false);
    expect(table.sweep(t0 + suspicionMs, suspicionMs)).toBe(true);
    expect(statuses(table)).toEqual(['m2:alive', 'm1:failed']);
    expect(table.alive()).toEqual(['m2']);
    expect(table.sweep(t0 + 2 * suspicionMs, suspicionMs)).toBe(false);
  });

  test('a heartbeat from a failed member makes it alive again', () => {
    const table = new MemberTable(self);
    table.heard(hb('m1', 1, 0), t0);
    table.sweep(t0 + suspicionMs, suspicionMs);
    expect(table.heard(hb('m1', 1, 7), t0 + suspicionMs + 1)).toBe(true);
    expect(table.alive()).toEqual(['m1', 'm2']);
  });

  test('leaving makes a member left; left never turns failed; a new incarnation rejoins', () => {
    const table = new MemberTable(self);
    table.heard(hb('m1', 1, 0), t0);
    expect(table.heard(hb('m1', 1, 1, { leaving: true }), t0 + 10)).toBe(true);
    expect(statuses(table)).toEqual(['m2:alive', 'm1:left']);
    expect(table.sweep(t0 + 10 * suspicionMs, suspicionMs)).toBe(false);
    expect(table.heard(hb('m1', 1, 0), t0 + 20)).toBe(false); // a late copy of an older one
    expect(table.heard(hb('m1', 2, 0), t0 + 30)).toBe(true);
    expect(table.alive()).toEqual(['m1', 'm2']);
  });

  test('a member first heard leaving is recorded as left', () => {
    const table = new MemberTable(self);
    expect(table.heard(hb('m1', 1, 4, { leaving: true }), t0)).toBe(true);
    expect(statuses(table)).toEqual(['m2:alive', 'm1:left']);
  });

  test('while alive, only a later (inc, seq) counts', () => {
    const table = new MemberTable(self);
    table.heard(hb('m1', 5, 3), t0);
    expect(table.heard(hb('m1', 5, 3, { leaving: true }), t0 + 1)).toBe(false); // duplicate seq
    expect(table.heard(hb('m1', 5, 2, { leaving: true }), t0 + 1)).toBe(false); // older seq
    expect(table.heard(hb('m1', 4, 99, { leaving: true }), t0 + 1)).toBe(false); // older incarnation
    expect(table.members(t0 + 1)[1]).toMatchObject({ status: 'alive', lastHeardMs: t0 });
  });

  test('once failed, a restart whose clock went back (lower inc) is heard', () => {
    const table = new MemberTable(self);
    table.heard(hb('m1', 5, 3), t0);
    table.sweep(t0 + suspicionMs, suspicionMs);
    expect(table.heard(hb('m1', 5, 2), t0 + suspicionMs + 1)).toBe(false); // same dead incarnation
    expect(table.heard(hb('m1', 4, 0), t0 + suspicionMs + 1)).toBe(true);
    expect(table.alive()).toEqual(['m1', 'm2']);
  });

  test('addresses announced by members that did not leave are dialable', () => {
    const table = new MemberTable(self);
    table.heard(hb('m1', 1, 0, { addrs: ['/ip4/10.0.0.1/tcp/1'] }), t0);
    table.heard(hb('m3', 1, 0, { addrs: ['/ip4/10.0.0.3/tcp/1'] }), t0);
    table.heard(hb('m1', 1, 1), t0); // no addrs: keeps the last announced
    table.sweep(t0 + suspicionMs, suspicionMs);
    table.heard(hb('m3', 1, 1, { leaving: true }), t0 + suspicionMs);
    expect(table.dialableAddrs()).toEqual(['/ip4/10.0.0.1/tcp/1']);
  });
});

describe('members cut off from the log', () => {
  test('a member that says it cannot use the log stays alive but owns nothing; saying so, and taking it back, is a change', () => {
    const table = new MemberTable(self);
    table.heard(hb('m1', 1, 0), t0);
    table.heard(hb('m3', 1, 0), t0);
    expect(table.owners()).toEqual(['m1', 'm2', 'm3']);
    expect(table.heard(hb('m1', 1, 1, { logUnreachable: true }), t0)).toBe(true);
    expect(table.heard(hb('m1', 1, 2, { logUnreachable: true }), t0)).toBe(false);
    expect(table.alive()).toEqual(['m1', 'm2', 'm3']);
    expect(table.owners()).toEqual(['m2', 'm3']);
    expect(table.members(t0).find((m) => m.name === 'm1')).toMatchObject({ status: 'alive', logUnreachable: true });
    expect(table.heard(hb('m1', 1, 3), t0)).toBe(true);
    expect(table.owners()).toEqual(['m1', 'm2', 'm3']);
    expect(table.members(t0).find((m) => m.name === 'm1')).not.toHaveProperty('logUnreachable');
  });

  test('the own node cut off owns nothing; when every alive member is cut off, all of them own as before', () => {
    const table = new MemberTable(self);
    table.heard(hb('m1', 1, 0, { logUnreachable: true }), t0);
    table.heard(hb('m3', 1, 0), t0);
    table.selfLogUnreachable = true;
    expect(table.owners()).toEqual(['m3']);
    expect(table.members(t0)[0]).toMatchObject({ name: 'm2', status: 'alive', logUnreachable: true });
    table.sweep(t0 + suspicionMs, suspicionMs);
    table.heard(hb('m1', 1, 1, { logUnreachable: true }), t0 + suspicionMs);
    // m3 failed; m1 and m2 are alive and both cut off: nobody can commit, so nothing moves.
    expect(table.owners()).toEqual(['m1', 'm2']);
  });
});

describe('force-leave', () => {
  test('a failed member goes to left; an alive one is not touched; prune forgets; a heartbeat brings it back', () => {
    const table = new MemberTable(self);
    table.heard(hb('m1', 1, 0), t0);
    table.heard(hb('m3', 1, 0), t0 + suspicionMs);
    expect(table.forceLeave('m3', false)).toBe(false);
    table.sweep(t0 + suspicionMs, suspicionMs);
    expect(statuses(table)).toEqual(['m2:alive', 'm1:failed', 'm3:alive']);
    expect(table.forceLeave('m1', false)).toBe(true);
    expect(table.forceLeave('m1', false)).toBe(false);
    expect(statuses(table)).toEqual(['m2:alive', 'm1:left', 'm3:alive']);
    expect(table.forceLeave('m1', true)).toBe(true);
    expect(statuses(table)).toEqual(['m2:alive', 'm3:alive']);
    expect(table.forceLeave('nobody', true)).toBe(false);
    table.heard(hb('m1', 2, 0), t0 + 2 * suspicionMs);
    expect(statuses(table, t0 + 2 * suspicionMs)).toEqual(['m2:alive', 'm1:alive', 'm3:alive']);
  });

  test('a heartbeat carries a force-leave; a malformed one is left out', () => {
    const h = hb('m1', 1, 3, { forceLeave: { name: 'm3', prune: true } });
    expect(decodeHeartbeat(encodeHeartbeat(h))).toEqual(h);
    const odd = new TextEncoder().encode(JSON.stringify({ ...hb('m1', 1, 4), forceLeave: { name: 7 } }));
    expect(decodeHeartbeat(odd)).toEqual(hb('m1', 1, 4));
  });
});

describe('heartbeat wire format', () => {
  test('round-trips, and ignores fields it does not know', () => {
    const h = hb('m1', 17, 4, { leaving: true, addrs: ['/ip4/127.0.0.1/tcp/5'] });
    expect(decodeHeartbeat(encodeHeartbeat(h))).toEqual(h);
    const future = new TextEncoder().encode(JSON.stringify({ ...hb('m1', 1, 2), zone: 'eu' }));
    expect(decodeHeartbeat(future)).toEqual(hb('m1', 1, 2));
  });

  test('carries the sender\'s cluster; an empty or non-string one is left out (read as a release without the field)', () => {
    const h = hb('m1', 1, 2, { cluster: 'ROSTER_LOG@2026-11-27T00:00:00.123456789Z' });
    expect(decodeHeartbeat(encodeHeartbeat(h))).toEqual(h);
    for (const cluster of ['', 7, null]) {
      expect(decodeHeartbeat(new TextEncoder().encode(JSON.stringify({ ...hb('m1', 1, 2), cluster })))).toEqual(hb('m1', 1, 2));
    }
  });

  test('says when the sender cannot use the log; any value but true is left out (a release without the field: it can)', () => {
    const h = hb('m1', 1, 2, { logUnreachable: true });
    expect(decodeHeartbeat(encodeHeartbeat(h))).toEqual(h);
    for (const logUnreachable of [false, 'yes', 1, null]) {
      expect(decodeHeartbeat(new TextEncoder().encode(JSON.stringify({ ...hb('m1', 1, 2), logUnreachable })))).toEqual(hb('m1', 1, 2));
    }
  });

  test.each([
    ['not JSON', '{'],
    ['not an object', '3'],
    ['name is not a string', JSON.stringify({ ...hb('x', 1, 1), name: 7 })],
    ['name is empty', JSON.stringify(hb('', 1, 1))],
    ['seq is not an integer', JSON.stringify({ ...hb('x', 1, 1), seq: 1.5 })],
    ['inc is not an integer', JSON.stringify({ ...hb('x', 1, 1), inc: '1' })],
  ])('drops a message that is %s', (reason, text) => {
    expect(decodeHeartbeat(new TextEncoder().encode(text))).toEqual({ invalid: reason });
  });

  test('drops an oversized message unread', () => {
    expect(decodeHeartbeat(new Uint8Array(heartbeatBytesMax + 1))).toEqual({ invalid: `larger than ${heartbeatBytesMax} bytes` });
  });
});

describe('seed addresses', () => {
  test.each([
    ['127.0.0.1:7946', '/ip4/127.0.0.1/tcp/7946'],
    ['[::1]:7946', '/ip6/::1/tcp/7946'],
    ['node-1.local:7946', '/dns/node-1.local/tcp/7946'],
    ['/ip4/10.1.2.3/tcp/9', '/ip4/10.1.2.3/tcp/9'],
    ['/ip4/10.1.2.3/tcp/9/p2p/12D3KooWCpDXrB95KY3ge9h4iyYaEPj851QEC9AWUNtgNRXipbYn', '/ip4/10.1.2.3/tcp/9'],
  ])('%s dials %s (never a peer id)', (seed, addr) => {
    expect(seedAddr(seed).toString()).toBe(addr);
  });

  test.each(['7946', 'host', 'host:0', 'host:70000', '/nonsense/1'])('%s is refused at construction', (seed) => {
    expect(() => new GossipMembership({ self, listen: '/ip4/127.0.0.1/tcp/0', seeds: [seed] })).toThrow();
  });
});
