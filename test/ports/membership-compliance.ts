// Goal: one behavioural contract (src/ports/membership.ts) that every Membership passes: the single
// node's, the simulation's and gossip's. A member always sees itself alive; `alive()` is the sorted
// names of the members whose status is alive; a listener hears a change until it unsubscribes; and,
// for memberships with peers, a peer that starts is seen alive and one that goes away is seen not alive.
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
  });
}
