/**
 * A node's runtime among others set by hand: n1's runtime over the memory log, a hand-set membership in which
 * every name given is alive, and each other name registered as a Roster node whose gossip check passes.
 */
import { gossipCheckId } from '../../src/domain/limits.ts';
import { ManualClock } from '../../src/ports/clock.ts';
import { silentLogger, type Logger } from '../../src/ports/logger.ts';
import { Runtime } from '../../src/runtime/index.ts';
import { createMemoryLogStore, MemoryLog } from '../../src/wal/index.ts';
import { HandMembership } from './hand-membership.ts';

export async function handCluster(names: string[], logger: Logger = silentLogger) {
  const clock = new ManualClock();
  const membership = new HandMembership();
  const alive = Object.fromEntries(names.map((n) => [n, 'alive' as const]));
  membership.set(alive);
  const runtime = new Runtime({
    log: new MemoryLog({ clock, store: createMemoryLogStore() }), clock, logger, nodeName: 'n1', nodeId: 'id-n1',
    address: 'n1', membership, membershipGraceMs: 1_000, failureConfirmMs: 2_000,
  });
  await runtime.start();
  for (const node of names.filter((n) => n !== 'n1')) {
    await runtime.propose({
      t: 'catalog.register', node, id: `id-${node}`, address: node, meta: {},
      checks: [{ checkId: gossipCheckId, name: 'Gossip Health Status', status: 'passing', notes: '', output: 'Agent alive and reachable' }],
    });
  }
  return { clock, membership, runtime, alive };
}
