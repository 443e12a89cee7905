// Goal: of two live nodes under one name the one that started later stops, and a burst of a gone node's
// last heartbeats (gossip hands them to a node that replaces it) is not taken for a live node: the other
// must be heard without a gap for the suspicion timeout first.
import { expect, test } from 'vitest';
import type { Heartbeat } from '../../cluster/heartbeat.ts';
import { NameClash, type NameHolder } from '../../cluster/name-clash.ts';
import { silentLogger } from '../../src/ports/logger.ts';

const hb = (id: string, inc: number, seq: number): Heartbeat => ({ name: 'a', id, http: `${id}:8500`, grpc: `${id}:8502`, inc, seq });

function clash(selfInc: number) {
  const taken: NameHolder[] = [];
  const warns: unknown[] = [];
  const c = new NameClash({
    self: { name: 'a', id: 'id-self', inc: selfInc }, liveAfterMs: 5_000,
    logger: { ...silentLogger, warn: (o: unknown) => void warns.push(o) }, nameTaken: (other) => void taken.push(other),
  });
  return { c, taken, warns };
}

test('the later node stops once the other has been heard for the suspicion timeout; the first warns once', () => {
  const later = clash(2_000);
  for (let t = 0; t < 5_000; t += 1_000) later.c.heard(hb('id-first', 1_000, t / 1_000), 'peer', 10_000 + t);
  expect(later.taken).toEqual([]);
  later.c.heard(hb('id-first', 1_000, 5), 'peer', 15_000);
  expect(later.taken).toEqual([{ id: 'id-first', startedAt: new Date(1_000).toISOString(), http: 'id-first:8500' }]);
  later.c.heard(hb('id-first', 1_000, 6), 'peer', 16_000);
  expect(later.taken).toHaveLength(1);

  const first = clash(1_000);
  for (let t = 0; t <= 8_000; t += 1_000) first.c.heard(hb('id-later', 2_000, t / 1_000), 'peer', 10_000 + t);
  expect(first.taken).toEqual([]);
  expect(first.warns).toHaveLength(1);
});

test('a burst of a gone node\'s heartbeats, or two bursts further apart than the timeout, stops nothing', () => {
  const { c, taken } = clash(9_000);
  for (let seq = 0; seq < 3; seq++) c.heard(hb('id-gone', 1_000, seq), 'peer', 10_000 + seq);
  c.heard(hb('id-gone', 1_000, 3), 'peer', 12_500);
  expect(taken).toEqual([]);
  // Heard again after a gap of the timeout: counted from there.
  c.heard(hb('id-gone', 1_000, 4), 'peer', 17_500);
  c.heard(hb('id-gone', 1_000, 5), 'peer', 18_500);
  expect(taken).toEqual([]);
});
