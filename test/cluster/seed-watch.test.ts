// Goal: a node with seeds that hears no other member warns after `aloneWarnMs`, naming each seed with what
// its last dial failed with, again only every `repeatMs` while it stays alone, and says once when it hears
// a member again; a node with no seeds (a cluster of one) never warns.
import { expect, test } from 'vitest';
import { SeedWatch } from '../../cluster/seed-watch.ts';
import { silentLogger } from '../../src/ports/logger.ts';

function watch() {
  const lines: Array<{ level: string; obj: Record<string, unknown>; msg: string }> = [];
  const logger = {
    ...silentLogger,
    warn: (obj: object, msg?: string) => void lines.push({ level: 'warn', obj: obj as Record<string, unknown>, msg: msg ?? '' }),
    info: (obj: object, msg?: string) => void lines.push({ level: 'info', obj: obj as Record<string, unknown>, msg: msg ?? '' }),
  };
  return { lines, w: new SeedWatch({ logger, aloneWarnMs: 10_000, repeatMs: 60_000 }, 0) };
}

test('alone with seeds: warns after aloneWarnMs naming each seed\'s last failure, repeats every repeatMs, says when a member is heard', () => {
  const { lines, w } = watch();
  const seeds = ['/ip4/10.0.0.1/tcp/8301', '/ip4/10.0.0.2/tcp/8301'];
  w.dialed(seeds[0]!, new Error('connection refused'));
  w.round(9_999, false, seeds);
  expect(lines).toEqual([]);
  w.round(10_000, false, seeds);
  expect(lines).toHaveLength(1);
  expect(lines[0]).toMatchObject({ level: 'warn', obj: { aloneForS: 10, seeds: [
    { addr: seeds[0], lastError: 'connection refused' },
    { addr: seeds[1], lastError: 'connected, but no heartbeat heard from it' },
  ] } });
  expect(lines[0]!.msg).toMatch(/no other member heard; check the seed addresses \(--join\), the firewall, and that every node has the same gossip key/);
  w.round(69_999, false, seeds);
  expect(lines).toHaveLength(1);
  w.dialed(seeds[0]!);
  w.round(70_000, false, seeds);
  expect(lines).toHaveLength(2);
  expect(lines[1]!.obj.seeds).toEqual([
    { addr: seeds[0], lastError: 'connected, but no heartbeat heard from it' },
    { addr: seeds[1], lastError: 'connected, but no heartbeat heard from it' },
  ]);
  w.round(71_000, true, seeds);
  expect(lines[2]).toMatchObject({ level: 'info', msg: 'membership: another member is heard again', obj: { aloneForS: 71 } });
  w.round(72_000, true, seeds);
  expect(lines).toHaveLength(3);
  // Alone again: the count starts over.
  w.round(80_000, false, seeds);
  w.round(89_999, false, seeds);
  expect(lines).toHaveLength(3);
  w.round(90_000, false, seeds);
  expect(lines).toHaveLength(4);
});

test('a node with no seeds but its own address, or one that hears members, never warns', () => {
  const { lines, w } = watch();
  for (let t = 0; t <= 600_000; t += 2_000) w.round(t, false, []);
  const { lines: heard, w: member } = watch();
  for (let t = 0; t <= 600_000; t += 2_000) member.round(t, true, ['/ip4/10.0.0.1/tcp/8301']);
  expect(lines).toEqual([]);
  expect(heard).toEqual([]);
});
