// Goal: the runtime over the in-memory log twin and a simulated clock — TTL owners propose expiry
// 2×TTL after the last renew (never before the TTL), a late timer is a no-op, restart re-arms timers;
// queued acquires are granted in arrival order and give up on the runtime's clock; the node-health owner
// reports a failed member only from a majority view and once the failure has held for failureConfirmMs.
import { silentLogger } from '../../src/ports/logger.ts';
import { describe, expect, test } from 'vitest';
import { ManualClock } from '../../src/ports/clock.ts';
import { Runtime } from '../../src/runtime/index.ts';
import { createMemoryLogStore, MemoryLog } from '../../src/wal/index.ts';
import { expiryRetryMs } from '../../src/runtime/ttl-owner.ts';
import { gossipCheckId } from '../../src/domain/limits.ts';
import type { Member } from '../../src/ports/membership.ts';
import { handCluster } from '../support/hand-cluster.ts';
import { ownerOf } from '../../src/runtime/ownership.ts';
import { toSnapshotData } from '../../src/state/index.ts';

const quiet = silentLogger;
const flush = async () => { for (let i = 0; i < 20; i++) await new Promise((r) => setImmediate(r)); };

async function boot(clock: ManualClock, store = createMemoryLogStore()) {
  const runtime = new Runtime({ log: new MemoryLog({ clock, store }), clock, logger: quiet, nodeName: 'n1', nodeId: 'id', address: '127.0.0.1' });
  await runtime.start();
  return { runtime, store };
}

const createTtl = (id: string) => ({
  t: 'session.create' as const, id, node: 'n1', name: '', lockDelayNs: 0, behavior: 'release' as const,
  ttl: '10s', ttlMs: 10_000, nodeChecks: ['gossipHealth'], serviceChecks: null,
});

describe('runtime TTL owner', () => {
  test('expires at 2×TTL after create, not before', async () => {
    const clock = new ManualClock();
    const { runtime } = await boot(clock);
    await runtime.propose(createTtl('s'));
    clock.advance(19_999);
    await flush();
    expect(runtime.state.sessions.has('s')).toBe(true);
    clock.advance(1);
    await flush();
    expect(runtime.state.sessions.has('s')).toBe(false);
  });

  test('renew restarts the timer', async () => {
    const clock = new ManualClock();
    const { runtime } = await boot(clock);
    await runtime.propose(createTtl('s'));
    clock.advance(15_000);
    await runtime.propose({ t: 'session.renew', id: 's' });
    clock.advance(15_000);
    await flush();
    expect(runtime.state.sessions.has('s')).toBe(true);
    clock.advance(5_000);
    await flush();
    expect(runtime.state.sessions.has('s')).toBe(false);
  });

  test('an expiry proposed for an older renew applies as a no-op', async () => {
    const clock = new ManualClock();
    const { runtime } = await boot(clock);
    const created = await runtime.propose(createTtl('s'));
    const renewIndexAtCreate = created.ok ? created.session!.renewIndex : -1;
    clock.advance(12_000);
    await runtime.propose({ t: 'session.renew', id: 's' });
    expect(await runtime.propose({ t: 'session.expire', id: 's', renewIndex: renewIndexAtCreate })).toEqual({ ok: false, reason: 'stale' });
    expect(runtime.state.sessions.has('s')).toBe(true);
  });

  test('a restarted node re-arms every TTL timer for a full 2×TTL (leader failover)', async () => {
    const clock = new ManualClock();
    const first = await boot(clock);
    await first.runtime.propose(createTtl('s'));
    clock.advance(18_000);
    await first.runtime.stop();
    const second = await boot(clock, first.store);
    expect(second.runtime.state.sessions.has('s')).toBe(true);
    clock.advance(19_000);
    await flush();
    expect(second.runtime.state.sessions.has('s')).toBe(true);
    clock.advance(1_000);
    await flush();
    expect(second.runtime.state.sessions.has('s')).toBe(false);
  });
});

describe('runtime TTL owner under a refusing log', () => {
  test('an expiry the log refused is proposed again until it lands', async () => {
    const clock = new ManualClock();
    const log = new MemoryLog({ clock, store: createMemoryLogStore() });
    let refusals = 1;
    const realAppend = log.append.bind(log);
    log.append = (proposals) => {
      if (proposals.some((p) => p.cmd.t === 'session.expire') && refusals-- > 0) return Promise.reject(new Error('disk on fire'));
      return realAppend(proposals);
    };
    const runtime = new Runtime({ log, clock, logger: quiet, nodeName: 'n1', nodeId: 'id', address: '127.0.0.1' });
    await runtime.start();
    await runtime.propose(createTtl('s'));
    clock.advance(20_000);
    await flush();
    expect(runtime.state.sessions.has('s')).toBe(true);
    clock.advance(expiryRetryMs);
    await flush();
    expect(runtime.state.sessions.has('s')).toBe(false);
  });
});

/** A log whose appends are held after delivery until the test settles them (as a log still checking where it was read). */
class HeldLog extends MemoryLog {
  held: { settle: (ok: boolean) => void }[] = [];
  holding = false;
  override append(proposals: Parameters<MemoryLog['append']>[0]): Promise<void> {
    const delivered = super.append(proposals);
    if (!this.holding) return delivered;
    return new Promise((resolve, reject) => {
      void delivered.then(() => this.held.push({ settle: (ok) => (ok ? resolve() : reject(new Error('could not confirm where it was read'))) }), reject);
    });
  }
}

describe('runtime answers', () => {
  test('a proposal applied here is answered only once its append resolves; a rejected append is an error, never the applied result', async () => {
    const clock = new ManualClock();
    const log = new HeldLog({ clock, store: createMemoryLogStore() });
    const runtime = new Runtime({ log, clock, logger: quiet, nodeName: 'n1', nodeId: 'id', address: '127.0.0.1' });
    await runtime.start();
    log.holding = true;
    let answered: unknown;
    const first = runtime.propose({ t: 'kv.set', key: 'a', value: 'MQ==', flags: '0' }).then((r) => { answered = r; });
    await flush();
    expect(runtime.state.kv.get('a')).toBeDefined(); // applied
    expect(answered).toBeUndefined(); // but not answered
    log.held.shift()!.settle(true);
    await first;
    expect(answered).toMatchObject({ ok: true });

    const second = runtime.propose({ t: 'kv.set', key: 'b', value: 'Mg==', flags: '0' });
    await flush();
    expect(runtime.state.kv.get('b')).toBeDefined();
    log.held.shift()!.settle(false);
    await expect(second).rejects.toThrow(/could not confirm/);
    expect(runtime.inFlight).toBe(0);
  });
});

describe('runtime queued acquires (LockQueues on the runtime clock)', () => {
  const session = (id: string) => ({ ...createTtl(id), ttl: '', ttlMs: 0, nodeChecks: [] });
  const acquire = (session: string) => ({ t: 'kv.acquire' as const, key: 'l', value: null, flags: '0', session });
  const release = (session: string) => ({ t: 'kv.release' as const, key: 'l', value: null, flags: '0', session });

  test('waiters are granted in arrival order, each release handing the lock to the next', async () => {
    const clock = new ManualClock();
    const { runtime } = await boot(clock);
    for (const id of ['a', 'b', 'c']) await runtime.propose(session(id));
    expect(await runtime.lockQueues.acquire(acquire('a'), 0)).toMatchObject({ ok: true });
    const granted: string[] = [];
    const b = runtime.lockQueues.acquire(acquire('b'), 10_000).then((r) => { if (r.ok) granted.push('b'); return r; });
    await flush();
    const c = runtime.lockQueues.acquire(acquire('c'), 10_000).then((r) => { if (r.ok) granted.push('c'); return r; });
    await flush();
    expect(runtime.lockQueues.queued('l').map((cmd) => cmd.session)).toEqual(['b', 'c']);
    await runtime.lockQueues.release(release('a'));
    await b;
    expect(runtime.state.kv.get('l')?.session).toBe('b');
    await runtime.lockQueues.release(release('b'));
    await c;
    expect(granted).toEqual(['b', 'c']);
  });

  test('a hand-off run whose holder goes without a release is forgotten, however many keys see one', async () => {
    const clock = new ManualClock();
    const { runtime } = await boot(clock);
    const keys = 3000;
    for (let i = 0; i < keys; i++) {
      const [a, b, key] = [`a${i}`, `b${i}`, `k${i}`];
      await runtime.propose(session(a));
      await runtime.propose(session(b));
      await runtime.propose({ ...acquire(a), key });
      const waiting = runtime.lockQueues.acquire({ ...acquire(b), key }, 10_000);
      await flush();
      await runtime.lockQueues.release({ ...release(a), key });
      expect(await waiting).toMatchObject({ ok: true });
      // The lock ends with its session, not with a release through this node.
      await runtime.propose({ t: 'session.destroy', id: b });
    }
    expect(runtime.state.kv.get('k0')?.session).toBeUndefined();
    expect(runtime.lockQueues.handOffRuns).toBeLessThan(1024);
  });

  test('a waiter gives up when its wait has passed on the runtime clock', async () => {
    const clock = new ManualClock();
    const { runtime } = await boot(clock);
    for (const id of ['a', 'b']) await runtime.propose(session(id));
    await runtime.propose(acquire('a'));
    let answer: unknown;
    const b = runtime.lockQueues.acquire(acquire('b'), 5_000).then((r) => { answer = r; });
    await flush();
    clock.advance(4_999);
    await flush();
    expect(answer).toBeUndefined();
    clock.advance(1);
    await b;
    expect(answer).toEqual({ ok: false, reason: 'held-by-other' });
    expect(runtime.lockQueues.queued('l')).toEqual([]);
  });
});

describe('runtime node-health owner', () => {
  async function cluster(names: string[]) {
    const { clock, membership, runtime } = await handCluster(names, quiet);
    const status = (node: string) => runtime.state.checkOf(node, gossipCheckId)?.status;
    return { clock, membership, runtime, status };
  }

  test('a failed member is reported critical once its failure has held for failureConfirmMs, and passing when back', async () => {
    const names = ['n1', 'n2', 'n3', 'n4'];
    // The member whose name n1 owns once it has failed: n1 is the one to report it.
    const failed = names.find((x) => x !== 'n1' && ownerOf(`node:${x}`, names.filter((y) => y !== x)) === 'n1')!;
    const { clock, membership, status } = await cluster(names);
    const statuses = (s: Member['status']) => Object.fromEntries(names.map((n) => [n, n === failed ? s : 'alive' as const]));
    membership.set(statuses('failed'));
    await flush();
    clock.advance(1_999);
    await flush();
    expect(status(failed)).toBe('passing');
    clock.advance(1);
    await flush();
    expect(status(failed)).toBe('critical');
    membership.set(statuses('alive'));
    await flush();
    expect(status(failed)).toBe('passing');
  });

  test('a restore of another cluster\'s snapshot: its node, never a member, is reported once the members are back in the catalog', async () => {
    const names = ['n1', 'n2', 'n3'];
    // A foreign node whose name n1 owns among the members: n1 is the one to report it.
    const foreign = Array.from({ length: 50 }, (_, i) => `other${i}`).find((x) => ownerOf(`node:${x}`, names) === 'n1')!;
    const otherClock = new ManualClock();
    const other = new Runtime({ log: new MemoryLog({ clock: otherClock, store: createMemoryLogStore() }), clock: otherClock, logger: quiet, nodeName: foreign, nodeId: `id-${foreign}`, address: foreign });
    await other.start();
    await other.propose({ ...createTtl('s'), node: foreign, ttl: '', ttlMs: 0 });
    expect(await other.propose({ t: 'kv.acquire', key: 'leader', value: null, flags: '0', session: 's' })).toMatchObject({ ok: true });
    const data = toSnapshotData(other.state);
    await other.stop();
    const { clock, runtime, status } = await cluster(names);
    clock.advance(1_000); // past the grace
    expect(await runtime.propose({ t: 'state.restore', data })).toMatchObject({ ok: true });
    // The other members register themselves again, as each does after applying a restore.
    for (const node of ['n2', 'n3']) {
      await runtime.propose({
        t: 'catalog.register', node, id: `id-${node}`, address: node, meta: {},
        checks: [{ checkId: gossipCheckId, name: 'Gossip Health Status', status: 'passing', notes: '', output: 'Agent alive and reachable' }],
      });
    }
    await flush();
    expect(status(foreign)).toBe('passing');
    clock.advance(2_000);
    await flush();
    expect([status(foreign), status('n1'), status('n2'), status('n3')]).toEqual(['critical', 'passing', 'passing', 'passing']);
    expect(runtime.state.sessions.has('s')).toBe(false);
    expect(runtime.state.kvGet('leader')?.session).toBeUndefined();
  });

  test('a node that sees no majority alive reports nobody', async () => {
    const { clock, membership, status } = await cluster(['n1', 'n2', 'n3']);
    membership.set({ n1: 'alive', n2: 'failed', n3: 'failed' });
    clock.advance(10_000);
    await flush();
    expect([status('n2'), status('n3')]).toEqual(['passing', 'passing']);
  });
});
