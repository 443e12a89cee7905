// Goal: one behavioural contract (src/ports/membership.ts) that every Membership passes: the single
// node's, the simulation's and gossip's. A member always sees itself alive; `alive()` is the sorted
// names of the members whose status is alive; a listener hears a change until it unsubscribes; and,
// for memberships with peers, a peer that starts is seen alive and one that goes away is seen not alive.
// `owners()` is the alive members that can use the log: a peer that says it cannot stays alive but owns
// nothing until it says it can again, and when no member can, every alive member owns as before.
import { afterEach, describe, expect, it } from 'vitest';
import type { Member, Membership } from '../../src/ports/membership.ts';

/** Two members that can hear each other. */
export interface MembershipPair {
  a: Membership;
  b: Membership;
  /** Lets the memberships run until `done()` holds (throws when it does not within the harness's bound). */
  until(what: string, done: () => boolean): Promise<void>;
  /** `b` goes away: stops cleanly (gossip) or falls silent (the simulation). */
  silence(): Promise<void>;
  cleanup(): Promise<void>;
}

export interface MembershipFactory {
  /** One started member named `name`. */
  single(name: string): Promise<{ membership: Membership; cleanup(): Promise<void> }>;
  /** Two started members, `a` and `b`; absent for memberships of one node. */
  pair?(): Promise<MembershipPair>;
}

const sorted = (xs: readonly string[]) => [...xs].sort();
const aliveNames = (ms: readonly Member[]) => sorted(ms.filter((m) => m.status === 'alive').map((m) => m.name));

export function membershipCompliance(name: string, factory: MembershipFactory): void {
  describe(`Membership compliance: ${name}`, () => {
    const cleanups: (() => Promise<void>)[] = [];
    afterEach(async () => {
      for (const c of cleanups.splice(0)) await c();
    });

    it('sees itself alive, with its identity and a heard time', async () => {
      const { membership, cleanup } = await factory.single('n1');
      cleanups.push(cleanup);
      expect(membership.alive()).toContain('n1');
      const self = membership.members().find((m) => m.name === 'n1');
      expect(self).toMatchObject({ name: 'n1', status: 'alive' });
      expect(typeof self!.id).toBe('string');
      expect(typeof self!.http).toBe('string');
      expect(self!.lastHeardMs).toBeGreaterThan(0);
    });

    it('lists as alive exactly the members whose status is alive, sorted', async () => {
      const { membership, cleanup } = await factory.single('n1');
      cleanups.push(cleanup);
      expect(membership.alive()).toEqual(sorted(membership.alive()));
      expect(membership.alive()).toEqual(aliveNames(membership.members()));
    });

    it('lets a listener unsubscribe, and stops', async () => {
      const { membership, cleanup } = await factory.single('n1');
      const off = membership.onChange(() => {});
      expect(typeof off).toBe('function');
      off();
      off();
      await cleanup();
    });

    it.runIf(factory.pair !== undefined)('sees a peer come alive and go, and tells its listeners', async () => {
      const pair = await factory.pair!();
      cleanups.push(() => pair.cleanup());
      const { a, b } = pair;
      const heard: Member[][] = [];
      a.onChange((ms) => heard.push([...ms]));
      await pair.until('a and b see each other alive', () =>
        a.alive().join() === 'a,b' && b.alive().join() === 'a,b');
      expect(a.alive()).toEqual(aliveNames(a.members()));
      expect(heard.at(-1)?.find((m) => m.name === 'b')?.status).toBe('alive');
      const seen = heard.length;
      await pair.silence();
      await pair.until('a sees b gone', () => a.alive().join() === 'a');
      const gone = a.members().find((m) => m.name === 'b');
      expect(gone === undefined || gone.status !== 'alive').toBe(true);
      expect(a.alive()).toEqual(aliveNames(a.members()));
      expect(heard.length).toBeGreaterThan(seen);
      expect(heard.at(-1)?.find((m) => m.name === 'b')?.status).not.toBe('alive');
    });

    logCases(factory, cleanups);
  });
}

/** The part of the contract about members cut off from the log (`owners`, `setLogReachable`). */
function logCases(factory: MembershipFactory, cleanups: (() => Promise<void>)[]): void {
  it('owns with every alive member while all can use the log, and alone still owns when its own log is cut', async () => {
    const { membership, cleanup } = await factory.single('n1');
    cleanups.push(cleanup);
    expect(membership.owners()).toEqual(membership.alive());
    membership.setLogReachable(false);
    expect(membership.owners()).toEqual(['n1']);
    expect(membership.alive()).toEqual(['n1']);
    membership.setLogReachable(true);
    expect(membership.owners()).toEqual(['n1']);
  });

  it.runIf(factory.pair !== undefined)('stops counting a peer cut off from the log among the owners, and counts it again', async () => {
    const pair = await factory.pair!();
    cleanups.push(() => pair.cleanup());
    const { a, b } = pair;
    const heard: Member[][] = [];
    a.onChange((ms) => heard.push([...ms]));
    await pair.until('a and b see each other alive', () => a.alive().join() === 'a,b' && b.alive().join() === 'a,b');
    expect(a.owners()).toEqual(['a', 'b']);
    b.setLogReachable(false);
    await pair.until('a sees b cut off from the log', () => a.owners().join() === 'a' && b.owners().join() === 'a');
    expect(a.alive()).toEqual(['a', 'b']);
    expect(a.members().find((m) => m.name === 'b')).toMatchObject({ status: 'alive', logUnreachable: true });
    expect(heard.at(-1)?.find((m) => m.name === 'b')?.logUnreachable).toBe(true);
    a.setLogReachable(false);
    await pair.until('both cut off: both own again', () => a.owners().join() === 'a,b' && b.owners().join() === 'a,b');
    a.setLogReachable(true);
    b.setLogReachable(true);
    await pair.until('b back', () => a.owners().join() === 'a,b' && a.members().every((m) => m.logUnreachable !== true));
  });
}
