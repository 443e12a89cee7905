// Goal: the Membership twins and the real gossip membership pass one compliance suite
// (membership-compliance.ts): the single node's StaticMembership, the simulation's SimMembership
// (test/sim) and GossipMembership (cluster/) with two members in this process on 127.0.0.1.
import { GossipMembership, type GossipMembershipOptions } from '../../cluster/gossip-membership.ts';
import { StaticMembership } from '../../src/ports/membership.ts';
import { Scheduler } from '../sim/scheduler.ts';
import { SimClock } from '../sim/sim-clock.ts';
import { SimMembership } from '../sim/sim-membership.ts';
import { membershipCompliance, type MembershipPair } from './membership-compliance.ts';

const identity = (name: string) => ({ name, id: `id-${name}`, http: `${name}:8500`, grpc: `${name}:8502` });

membershipCompliance('StaticMembership', {
  single: async (name) => {
    const membership = new StaticMembership(identity(name));
    await membership.start();
    return { membership, cleanup: () => membership.stop() };
  },
});

/** Sim members over one scheduler, with the simulation's heartbeat round (every member hears every other). */
function simWorld(names: string[]) {
  const sched = new Scheduler({ gate: () => 'run', defer: () => {} });
  const silent = new Set<string>();
  const members = names.map((n) => new SimMembership(sched, new SimClock(sched, { drift: 0, offsetMs: 0 }, n, 1), n, 1, 3_000));
  const gossip = (): void => {
    for (const x of members) for (const y of members) if (x !== y && !silent.has(y.self)) x.hear(y.self, y.logUnreachable);
    for (const x of members) if (!silent.has(x.self)) x.sweep();
    sched.after(500, 'gossip', gossip);
  };
  sched.at(0, 'gossip', gossip);
  const until = async (what: string, done: () => boolean): Promise<void> => {
    for (const bound = sched.now + 60_000; !done();) {
      const ev = sched.popUntil(bound);
      if (ev === undefined) throw new Error(`simulated minute passed waiting for ${what}`);
      ev.fn();
    }
  };
  return { members, silent, until };
}

membershipCompliance('SimMembership', {
  single: async (name) => ({ membership: simWorld([name]).members[0]!, cleanup: async () => {} }),
  pair: async (): Promise<MembershipPair> => {
    const w = simWorld(['a', 'b']);
    return {
      a: w.members[0]!, b: w.members[1]!, until: w.until,
      silence: async () => { w.silent.add('b'); },
      cleanup: async () => {},
    };
  },
});

const gossipOptions = (name: string, seeds: string[]): GossipMembershipOptions => ({
  self: identity(name), listen: '/ip4/127.0.0.1/tcp/0', seeds, heartbeatMs: 200, suspicionMs: 1_000, redialMs: 300,
});

async function realUntil(what: string, done: () => boolean, ms = 15_000): Promise<void> {
  const deadline = Date.now() + ms;
  while (!done()) {
    if (Date.now() > deadline) throw new Error(`timed out after ${ms} ms waiting for ${what}`);
    await new Promise((r) => setTimeout(r, 20));
  }
}

membershipCompliance('GossipMembership', {
  single: async (name) => {
    const membership = new GossipMembership(gossipOptions(name, []));
    await membership.start();
    return { membership, cleanup: () => membership.stop() };
  },
  pair: async (): Promise<MembershipPair> => {
    const a = new GossipMembership(gossipOptions('a', []));
    await a.start();
    const b = new GossipMembership(gossipOptions('b', a.addresses()));
    await b.start();
    return {
      a, b, until: (what, done) => realUntil(what, done),
      silence: () => b.stop(),
      cleanup: async () => { await b.stop(); await a.stop(); },
    };
  },
});
