// Goal: the runtime over the in-memory log twin and a simulated clock — TTL owners propose expiry
// 2×TTL after the last renew (never before the TTL), a late timer is a no-op, restart re-arms timers.
import { silentLogger } from '../../src/ports/logger.ts';
import { describe, expect, test } from 'vitest';
import { ManualClock } from '../../src/ports/clock.ts';
import { Runtime } from '../../src/runtime/index.ts';
import { createMemoryLogStore, MemoryLog } from '../../src/wal/index.ts';
import { expiryRetryMs } from '../../src/runtime/ttl-owner.ts';

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
