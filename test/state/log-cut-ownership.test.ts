// Goal: timers are owned only by members that can use the log. A member that gossip hears alive but that
// says it is cut off from the log (Membership.owners) owns no session TTL and no failure report: another
// member takes them over from the log's state (a full 2 × TTL, as after any change of owner) and expires a
// never-renewed session, lock released, as it would have; once the member can use the log again the timer
// goes back to it. A node whose own log is cut off drops its timers. When every member is cut off nothing
// moves (no member can commit anyway). The agent's MembershipSlot keeps what it was told for the gossip
// membership that replaces the node alone.
import { describe, expect, test } from 'vitest';
import { gossipCheckId } from '../../src/domain/limits.ts';
import { MembershipSlot, StaticMembership, type Member } from '../../src/ports/membership.ts';
import { Runtime } from '../../src/runtime/index.ts';
import { ownerOf } from '../../src/runtime/ownership.ts';
import { handCluster } from '../support/hand-cluster.ts';
import { HandMembership } from '../support/hand-membership.ts';

const flush = async () => { for (let i = 0; i < 20; i++) await new Promise((r) => setImmediate(r)); };

/** A name `prefix<k>` whose actor `kind:<name>` n1 owns among `among` and, when given, `other` owns among `all`. */
function named(prefix: string, kind: string, among: string[], other?: { owner: string; all: string[] }): string {
  return Array.from({ length: 200 }, (_, i) => `${prefix}${i}`).find((x) => ownerOf(`${kind}:${x}`, among) === 'n1'
    && (other === undefined || ownerOf(`${kind}:${x}`, other.all) === other.owner))!;
}

/** n1's runtime over the memory log; every name in `names` is alive and registered as a Roster node. */
async function cluster(names: string[]) {
  const { clock, membership, runtime, alive } = await handCluster(names);
  /** Every name alive (or as `statuses` says), those in `cut` cut off from the log. */
  const set = (cut: string[], statuses: Record<string, Member['status']> = {}) => membership.set({ ...alive, ...statuses }, cut);
  return { clock, runtime, set };
}

/** A never-renewed session of TTL 10 s (made through n1) holding the lock `key`. */
async function sessionHolding(runtime: Runtime, id: string, key: string): Promise<void> {
  await runtime.propose({
    t: 'session.create', id, node: 'n1', name: '', lockDelayNs: 0, behavior: 'release', ttl: '10s', ttlMs: 10_000, nodeChecks: [], serviceChecks: null,
  });
  expect(await runtime.propose({ t: 'kv.acquire', key, value: null, flags: '0', session: id })).toMatchObject({ ok: true });
}

const all = ['n1', 'n2', 'n3'];

describe('TTL ownership follows the use of the log', () => {
  test('a session whose owner is alive but cut off from the log is expired by the next owner 2 × TTL after the cut is told, its lock released', async () => {
    const { clock, runtime, set } = await cluster(all);
    const id = named('s', 'session', ['n1', 'n3'], { owner: 'n2', all });
    await sessionHolding(runtime, id, 'jobs/a');
    clock.advance(30_000); // n2 owns it: n1 has no timer, and nothing here expires it
    await flush();
    expect(runtime.state.sessions.has(id)).toBe(true);
    set(['n2']);
    await flush();
    clock.advance(19_999);
    await flush();
    expect(runtime.state.sessions.has(id)).toBe(true);
    clock.advance(1);
    await flush();
    expect(runtime.state.sessions.has(id)).toBe(false);
    expect(runtime.state.kv.get('jobs/a')?.session).toBeUndefined();
  });

  test('once the cut-off member can use the log again, the timer goes back to it', async () => {
    const { clock, runtime, set } = await cluster(all);
    const id = named('s', 'session', ['n1', 'n3'], { owner: 'n2', all });
    await sessionHolding(runtime, id, 'jobs/b');
    set(['n2']);
    await flush();
    clock.advance(10_000);
    set([]);
    await flush();
    clock.advance(60_000);
    await flush();
    expect(runtime.state.sessions.has(id)).toBe(true);
  });

  test('a node whose own log is cut off drops its timers', async () => {
    const { clock, runtime, set } = await cluster(all);
    const id = named('s', 'session', all);
    await sessionHolding(runtime, id, 'jobs/c');
    set(['n1']);
    await flush();
    clock.advance(60_000);
    await flush();
    expect(runtime.state.sessions.has(id)).toBe(true);
  });

  test('every member cut off: nothing moves, the owner keeps its timer as it ran', async () => {
    const { clock, runtime, set } = await cluster(all);
    const mine = named('s', 'session', all);
    const theirs = named('t', 'session', ['n1', 'n3'], { owner: 'n2', all });
    await sessionHolding(runtime, mine, 'jobs/d');
    await sessionHolding(runtime, theirs, 'jobs/e');
    clock.advance(5_000);
    set(all);
    await flush();
    clock.advance(15_000); // 2 × TTL after the create: not restarted by the cut
    await flush();
    expect(runtime.state.sessions.has(mine)).toBe(false);
    clock.advance(60_000);
    await flush();
    expect(runtime.state.sessions.has(theirs)).toBe(true);
  });
});

describe('failure reports follow the use of the log', () => {
  test('a failed node whose report the cut-off member would own is reported by the next owner', async () => {
    // Among the alive members n2 would report it; with n2 cut off, n1 does.
    const failed = named('f', 'node', ['n1', 'n3'], { owner: 'n2', all });
    const names = [...all, failed];
    const { clock, runtime, set } = await cluster(names);
    set(['n2'], { [failed]: 'failed' });
    await flush();
    clock.advance(2_000);
    await flush();
    expect(runtime.state.checkOf(failed, gossipCheckId)?.status).toBe('critical');
  });
});

describe('MembershipSlot', () => {
  test('a membership put in place is told what the slot was told: the node cut off from the log', () => {
    const self = (name: string) => ({ name, id: `id-${name}`, http: '', grpc: '' });
    const slot = new MembershipSlot(new StaticMembership(self('n1')));
    slot.setLogReachable(false);
    const next = new HandMembership();
    slot.set(next);
    slot.setLogReachable(true);
    expect(next.toldReachable).toEqual([false, true]);
  });
});
