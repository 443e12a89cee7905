/**
 * Membership in the simulation, shaped like the gossip membership (cluster/gossip-membership.ts): every
 * heartbeat period each node hears every node it can talk to; a member unheard for the suspicion time is
 * failed, one heard again is alive. A crashed, paused or partitioned node sends nothing; a partitioned
 * node hears nobody; a paused node keeps hearing (its socket buffers) but tells its runtime only when it
 * runs again. Each incarnation starts knowing only itself, as a restarted process does.
 */
import type { Member, Membership, MembershipListener } from '../../src/ports/membership.ts';
import type { Scheduler } from './scheduler.ts';
import type { SimClock } from './sim-clock.ts';

export class SimMembership implements Membership {
  /** Member name → true time last heard. */
  private readonly heard = new Map<string, number>();
  private readonly listeners = new Set<MembershipListener>();
  private view: string[];
  changes = 0;

  constructor(
    private readonly sched: Scheduler,
    private readonly clock: SimClock,
    readonly self: string,
    readonly inc: number,
    private readonly suspicionMs: number,
  ) {
    this.view = [self];
  }

  async start(): Promise<void> {}

  members(): Member[] {
    const names = [...new Set([this.self, ...this.heard.keys()])].sort();
    const now = this.clock.nowMs();
    return names.map((name) => ({
      name, id: `id-${name}`, http: `${name}:8500`, grpc: `${name}:8502`,
      status: this.view.includes(name) ? 'alive' as const : 'failed' as const,
      lastHeardMs: name === this.self ? now : now - (this.sched.now - (this.heard.get(name) ?? 0)),
    }));
  }

  alive(): string[] {
    return [...this.view];
  }

  onChange(listener: MembershipListener): () => void {
    this.listeners.add(listener);
    return () => this.listeners.delete(listener);
  }

  async stop(): Promise<void> {}

  /** A heartbeat of `from` reached this node (true time now). */
  hear(from: string): void {
    if (from !== this.self) this.heard.set(from, this.sched.now);
  }

  /** The view this node would hold now; a change is told to the runtime as an event on this node. */
  sweep(): void {
    if (this.told || this.computed().join(',') === this.view.join(',')) return;
    this.told = true;
    this.sched.at(this.sched.now, `membership ${this.self}`, () => {
      this.told = false;
      const next = this.computed();
      if (next.join(',') === this.view.join(',')) return;
      this.view = next;
      this.changes++;
      const members = this.members();
      for (const l of [...this.listeners]) l(members);
    }, this.self, this.inc);
  }

  private told = false;

  private computed(): string[] {
    const now = this.sched.now;
    return [this.self, ...[...this.heard].filter(([, at]) => now - at < this.suspicionMs).map(([n]) => n)].sort();
  }
}
