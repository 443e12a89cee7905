// Goal: of two live nodes under one name, with one node ID under two names, or with both (a cloned machine:
// two processes acting as one node), the one that started later stops, and a burst of a gone node's last heartbeats (gossip hands them to a node that replaces it) is not
// taken for a live node: the other must be heard without a gap for the suspicion timeout first.
import { expect, test } from 'vitest';
import type { Heartbeat } from '../../cluster/heartbeat.ts';
import { IdentityClash, sharesIdentity, type IdentityHolder, type SharedIdentity } from '../../cluster/identity-clash.ts';
import { silentLogger } from '../../src/ports/logger.ts';

const self = { name: 'a', id: 'id-self', inc: 500, http: 'self:8500' };
const sameName = (id: string, inc: number, seq: number): Heartbeat => ({ name: 'a', id, http: `${id}:8500`, grpc: `${id}:8502`, inc, seq });
const sameId = (name: string, inc: number, seq: number): Heartbeat => ({ name, id: 'id-self', http: `${name}:8500`, grpc: `${name}:8502`, inc, seq });
/** A heartbeat of another process as this node, told apart by its address. */
const twin = (host: string, inc: number, seq: number): Heartbeat => ({ name: 'a', id: 'id-self', http: `${host}:8500`, grpc: `${host}:8502`, inc, seq });

function clash(shared: SharedIdentity, selfInc: number) {
  const taken: IdentityHolder[] = [];
  const warns: unknown[] = [];
  const c = new IdentityClash({
    self: { ...self, inc: selfInc }, shared, liveAfterMs: 5_000,
    logger: { ...silentLogger, warn: (o: unknown) => void warns.push(o) }, taken: (other) => void taken.push(other),
  });
  return { c, taken, warns };
}

test('which heartbeats share this node\'s name, its ID under another name, or both from another process', () => {
  expect(sharesIdentity(sameName('id-other', 1, 0), self, 'name')).toBe(true);
  expect(sharesIdentity(sameName('id-other', 1, 0), self, 'id')).toBe(false);
  expect(sharesIdentity(sameId('b', 1, 0), self, 'id')).toBe(true);
  expect(sharesIdentity({ ...sameId('b', 1, 0), id: 'ID-SELF' }, self, 'id')).toBe(true);
  expect(sharesIdentity(sameId('b', 1, 0), self, 'name')).toBe(false);
  // Its own heartbeats, handed back by gossip, and a leaving node's, share nothing.
  expect(sharesIdentity(sameId('a', 1, 0), self, 'id')).toBe(false);
  expect(sharesIdentity(sameId('a', 1, 0), self, 'name')).toBe(false);
  expect(sharesIdentity({ ...sameId('b', 1, 0), leaving: true }, self, 'id')).toBe(false);
  // Both: another start time or another address than this process's; its own heartbeats are not.
  expect(sharesIdentity(twin('self', 400, 0), self, 'both')).toBe(true);
  expect(sharesIdentity(twin('clone', 500, 0), self, 'both')).toBe(true);
  expect(sharesIdentity(twin('self', 500, 0), self, 'both')).toBe(false);
  expect(sharesIdentity(twin('clone', 400, 0), self, 'name')).toBe(false);
  expect(sharesIdentity(twin('clone', 400, 0), self, 'id')).toBe(false);
  expect(sharesIdentity({ ...twin('clone', 400, 0), leaving: true }, self, 'both')).toBe(false);
});

test.each([
  ['name', sameName, 'id-first', 'id-later'],
  ['id', sameId, 'first', 'later'],
  ['both', twin, 'first', 'later'],
] as const)('one %s: the later node stops once the other has been heard for the suspicion timeout; the first warns once', (shared, beat, first, later) => {
  const late = clash(shared, 2_000);
  for (let t = 0; t < 5_000; t += 1_000) late.c.heard(beat(first, 1_000, t / 1_000), 'peer', 10_000 + t);
  expect(late.taken).toEqual([]);
  late.c.heard(beat(first, 1_000, 5), 'peer', 15_000);
  const held = beat(first, 1_000, 5);
  expect(late.taken).toEqual([{ name: held.name, id: held.id, startedAt: new Date(1_000).toISOString(), http: held.http }]);
  late.c.heard(beat(first, 1_000, 6), 'peer', 16_000);
  expect(late.taken).toHaveLength(1);

  const early = clash(shared, 1_000);
  for (let t = 0; t <= 8_000; t += 1_000) early.c.heard(beat(later, 2_000, t / 1_000), 'peer', 10_000 + t);
  expect(early.taken).toEqual([]);
  expect(early.warns).toHaveLength(1);
});

test('started in the same millisecond under one ID, the smaller name keeps it', () => {
  const b = clash('id', 1_000);
  for (let t = 0; t <= 5_000; t += 1_000) b.c.heard(sameId('0-first', 1_000, t / 1_000), 'peer', 10_000 + t);
  expect(b.taken.map((h) => h.name)).toEqual(['0-first']);
  const a = clash('id', 1_000);
  for (let t = 0; t <= 5_000; t += 1_000) a.c.heard(sameId('b', 1_000, t / 1_000), 'peer', 10_000 + t);
  expect(a.taken).toEqual([]);
});

test.each([['name', sameName, 'id-gone'], ['id', sameId, 'gone'], ['both', twin, 'gone']] as const)(
  'one %s: a burst of a gone node\'s heartbeats, or two bursts further apart than the timeout, stops nothing', (shared, beat, gone) => {
    const { c, taken } = clash(shared, 9_000);
    for (let seq = 0; seq < 3; seq++) c.heard(beat(gone, 1_000, seq), 'peer', 10_000 + seq);
    c.heard(beat(gone, 1_000, 3), 'peer', 12_500);
    expect(taken).toEqual([]);
    // Heard again after a gap of the timeout: counted from there.
    c.heard(beat(gone, 1_000, 4), 'peer', 17_500);
    c.heard(beat(gone, 1_000, 5), 'peer', 18_500);
    expect(taken).toEqual([]);
  });
