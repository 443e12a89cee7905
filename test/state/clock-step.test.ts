// Goal: the runtime's local deadlines are measured on the interval clock, so a wall clock stepped while they
// run (an NTP step) neither stretches them by the step nor ends them early. A write its log never confirms
// is answered as timed out after write_timeout, also when the wall clock is set back an hour meanwhile;
// the owner of a node that failed reports it after its confirmation time when the wall clock is set back an
// hour just after the failure, where the hour was added to the confirmation (a dead node kept its lock);
// and an agent whose node is removed from the catalog registers it again within its spacing of a second.
import { describe, expect, test } from 'vitest';
import { gossipCheckId } from '../../src/domain/limits.ts';
import { isWriteTimedOut } from '../../src/ports/log-errors.ts';
import { silentLogger } from '../../src/ports/logger.ts';
import { Runtime } from '../../src/runtime/index.ts';
import { ownerOf } from '../../src/runtime/ownership.ts';
import { createMemoryLogStore, MemoryLog } from '../../src/wal/index.ts';
import { HandMembership } from '../support/hand-membership.ts';
import { SteppedManualClock } from '../support/stepped-clock.ts';

const flush = async () => { for (let i = 0; i < 20; i++) await new Promise((r) => setImmediate(r)); };
const hourMs = 3_600_000;

describe('a runtime whose wall clock is set back an hour', () => {
  test('a write its log never confirms is answered as timed out after write_timeout, not after the hour', async () => {
    const clock = new SteppedManualClock();
    const log = new MemoryLog({ clock, store: createMemoryLogStore() });
    const runtime = new Runtime({ log, clock, logger: silentLogger, nodeName: 'n1', nodeId: 'id-n1', address: 'n1', writeTimeoutMs: 2_000 });
    await runtime.start();
    // The log takes no more appends and never answers them (a cluster's log that lost its nats-servers).
    log.append = () => new Promise<void>(() => {});
    let outcome: unknown;
    runtime.propose({ t: 'kv.set', key: 'k', value: null, flags: '0' }).then((r) => { outcome = r; }, (err: unknown) => { outcome = err; });
    clock.advance(100);
    clock.step(-hourMs);
    clock.advance(2_500);
    await flush();
    expect(isWriteTimedOut(outcome)).toBe(true);
    await runtime.stop();
  });

  test('an agent whose node is deregistered registers it again within a second, not after the hour', async () => {
    const clock = new SteppedManualClock();
    const runtime = new Runtime({ log: new MemoryLog({ clock, store: createMemoryLogStore() }), clock, logger: silentLogger, nodeName: 'n1', nodeId: 'id-n1', address: 'n1' });
    await runtime.start();
    await flush();
    expect(runtime.state.nodes.has('n1')).toBe(true);
    await runtime.propose({ t: 'catalog.deregister', node: 'n1' });
    await flush();
    expect(runtime.state.nodes.has('n1')).toBe(true);
    clock.step(-hourMs);
    await runtime.propose({ t: 'catalog.deregister', node: 'n1' });
    await flush();
    clock.advance(1_500);
    await flush();
    expect(runtime.state.nodes.has('n1')).toBe(true);
    await runtime.stop();
  });

  test('the owner of a failed node reports it after the confirmation time', async () => {
    const holder = Array.from({ length: 100 }, (_, i) => `h${i}`).find((x) => ownerOf(`node:${x}`, ['n1', 'n2']) === 'n1')!;
    const clock = new SteppedManualClock();
    const membership = new HandMembership();
    membership.set({ n1: 'alive', n2: 'alive', [holder]: 'alive' });
    const runtime = new Runtime({
      log: new MemoryLog({ clock, store: createMemoryLogStore() }), clock, logger: silentLogger, nodeName: 'n1', nodeId: 'id-n1',
      address: 'n1', membership, membershipGraceMs: 1_000, failureConfirmMs: 2_000,
    });
    await runtime.start();
    for (const node of ['n2', holder]) {
      await runtime.propose({
        t: 'catalog.register', node, id: `id-${node}`, address: node, meta: {},
        checks: [{ checkId: gossipCheckId, name: 'Gossip Health Status', status: 'passing', notes: '', output: 'Agent alive and reachable' }],
      });
    }
    await runtime.propose({
      t: 'session.create', id: 's', node: holder, name: '', lockDelayNs: 0, behavior: 'release', ttl: '', ttlMs: 0, nodeChecks: [gossipCheckId], serviceChecks: null,
    });
    expect(await runtime.propose({ t: 'kv.acquire', key: 'jobs/X', value: null, flags: '0', session: 's' })).toMatchObject({ ok: true });
    clock.advance(1_000);
    membership.set({ n1: 'alive', n2: 'alive', [holder]: 'failed' });
    await flush();
    clock.step(-hourMs);
    clock.advance(2_000);
    await flush();
    expect(runtime.state.checkOf(holder, gossipCheckId)?.status).toBe('critical');
    expect(runtime.state.kvGet('jobs/X')?.session).toBeUndefined();
    await runtime.stop();
  });
});
