// Goal: the node-health owner judges its majority against the Roster nodes that have not left, as the log
// records them, not as this process's gossip remembers them. A member gossip says left is recorded left in
// the log (its gossip check critical, `Agent left the cluster`), and stays out of the count once gossip has
// forgotten it (a restart); force-leave records a node no member names; a catalog change of the node set
// (a deregistration, a left record) judges failures again; a failure withheld for want of a majority is
// logged once, naming the nodes the operator can force-leave; and a node that marked itself left while
// still heard alive is not set passing again by the owner until a membership change.
import { describe, expect, test } from 'vitest';
import { gossipCheckId, gossipCheckOutputLeft } from '../../src/domain/limits.ts';
import { ManualClock } from '../../src/ports/clock.ts';
import { silentLogger, type Logger } from '../../src/ports/logger.ts';
import { HandMembership } from '../support/hand-membership.ts';
import { Runtime } from '../../src/runtime/index.ts';
import { ownerOf } from '../../src/runtime/ownership.ts';
import { createMemoryLogStore, MemoryLog } from '../../src/wal/index.ts';

const flush = async () => { for (let i = 0; i < 20; i++) await new Promise((r) => setImmediate(r)); };

/** A name whose node n1 owns among `alive` (rendezvous hashing): n1 is the one to report it. */
function ownedByN1(prefix: string, alive: string[]): string {
  return Array.from({ length: 100 }, (_, i) => `${prefix}${i}`).find((x) => ownerOf(`node:${x}`, alive) === 'n1')!;
}

/** n1's runtime over the memory log, with `others` registered as Roster nodes (gossip check passing). */
async function cluster(others: string[], logger: Logger = silentLogger) {
  const clock = new ManualClock();
  const membership = new HandMembership();
  membership.set(Object.fromEntries(['n1', ...others].map((n) => [n, 'alive' as const])));
  const runtime = new Runtime({
    log: new MemoryLog({ clock, store: createMemoryLogStore() }), clock, logger, nodeName: 'n1', nodeId: 'id-n1',
    address: 'n1', membership, membershipGraceMs: 1_000, failureConfirmMs: 2_000,
  });
  await runtime.start();
  for (const node of others) {
    await runtime.propose({
      t: 'catalog.register', node, id: `id-${node}`, address: node, meta: {},
      checks: [{ checkId: gossipCheckId, name: 'Gossip Health Status', status: 'passing', notes: '', output: 'Agent alive and reachable' }],
    });
  }
  const check = (node: string) => runtime.state.checkOf(node, gossipCheckId);
  const status = (node: string) => check(node)?.status;
  return { clock, membership, runtime, check, status };
}

/** A logger keeping its warnings. */
function warnings(): { logger: Logger; lines: string[] } {
  const lines: string[] = [];
  return { lines, logger: { ...silentLogger, warn: (_o: object | string, msg?: string) => { lines.push(msg ?? ''); } } };
}

describe('node-health: the majority counts the nodes that have not left', () => {
  test('a member that left is recorded left in the log, and once gossip forgot it a failure among the rest is still reported', async () => {
    const holder = ownedByN1('h', ['n1', 'n2']);
    const gone = ownedByN1('g', ['n1', 'n2', holder]);
    const { clock, membership, runtime, check, status } = await cluster(['n2', holder, gone]);
    await runtime.propose({
      t: 'session.create', id: 's', node: holder, name: '', lockDelayNs: 0, behavior: 'release', ttl: '', ttlMs: 0, nodeChecks: [gossipCheckId], serviceChecks: null,
    });
    expect(await runtime.propose({ t: 'kv.acquire', key: 'jobs/X', value: null, flags: '0', session: 's' })).toMatchObject({ ok: true });
    membership.set({ n1: 'alive', n2: 'alive', [holder]: 'alive', [gone]: 'left' });
    await flush();
    expect(check(gone)).toMatchObject({ status: 'critical', output: gossipCheckOutputLeft });
    // The survivors restarted: gossip knows nothing of the node that left. The holder's node then fails.
    clock.advance(1_000);
    membership.set({ n1: 'alive', n2: 'alive', [holder]: 'failed' });
    await flush();
    clock.advance(2_000);
    await flush();
    expect(status(holder)).toBe('critical');
    expect(runtime.state.kvGet('jobs/X')?.session).toBeUndefined();
  });

  test('a failure withheld for want of a majority is logged once; deregistering a node gone for good from the catalog reports it', async () => {
    const holder = ownedByN1('h', ['n1', 'n2']);
    const { logger, lines } = warnings();
    const { clock, membership, runtime, status } = await cluster(['n2', holder, 'gone'], logger);
    // `gone` is never heard (it stopped before this node started); the holder fails.
    membership.set({ n1: 'alive', n2: 'alive', [holder]: 'failed' });
    clock.advance(5_000);
    await flush();
    membership.set({ n1: 'alive', n2: 'alive', [holder]: 'failed' });
    await flush();
    expect(status(holder)).toBe('passing');
    const withheld = lines.filter((l) => l.includes(`node ${holder} is not alive, but its failure is not reported`));
    expect(withheld).toHaveLength(1);
    expect(withheld[0]).toContain('sees 2 of the 4 Roster nodes');
    expect(withheld[0]).toContain(`${holder}, gone`);
    expect(withheld[0]).toContain('roster force-leave');
    expect(await runtime.propose({ t: 'catalog.deregister', node: 'gone' })).toMatchObject({ ok: true });
    await flush();
    clock.advance(2_000);
    await flush();
    expect(status(holder)).toBe('critical');
  });

  test('force-leave records a Roster node no member names as left, which reports the failure it held back; an unknown name is not recorded', async () => {
    const holder = ownedByN1('h', ['n1', 'n2']);
    const { clock, membership, runtime, check, status } = await cluster(['n2', holder, 'gone']);
    membership.set({ n1: 'alive', n2: 'alive', [holder]: 'failed' });
    clock.advance(5_000);
    await flush();
    expect(status(holder)).toBe('passing');
    expect(await runtime.nodeHealth.markLeft('nobody')).toBe(false);
    expect(await runtime.nodeHealth.markLeft('gone')).toBe(true);
    expect(check('gone')).toMatchObject({ status: 'critical', output: gossipCheckOutputLeft });
    await flush();
    clock.advance(2_000);
    await flush();
    expect(status(holder)).toBe('critical');
  });

  test('a node that recorded itself left while still heard alive is set passing again only on a membership change (it came back)', async () => {
    const leaver = ownedByN1('l', ['n1', 'n2', 'n3']);
    const { membership, runtime, check, status } = await cluster(['n2', 'n3', leaver]);
    // What the leaving node writes a moment before its gossip says it leaves.
    expect(await runtime.nodeHealth.markLeft(leaver)).toBe(true);
    await flush();
    expect(check(leaver)).toMatchObject({ status: 'critical', output: gossipCheckOutputLeft });
    membership.set({ n1: 'alive', n2: 'alive', n3: 'alive', [leaver]: 'alive' });
    await flush();
    expect(status(leaver)).toBe('passing');
  });
});
