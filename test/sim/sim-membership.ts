/**
 * Membership in the simulation, shaped like the gossip membership (cluster/gossip-membership.ts): every
 * heartbeat period each node hears every node it can talk to; a member unheard for the suspicion time is
 * failed, one heard again is alive. A crashed, paused or partitioned node sends nothing; a partitioned
 * node hears nobody; a paused node keeps hearing (its socket buffers) but tells its runtime only when it
 * runs again. Each incarnation starts knowing only itself, as a restarted process does. A heartbeat carries
 * whether its sender can use the log (setLogReachable), as gossip's does; owners() follows it.
 */
import { ownersAmong, type Member, type Membership, type MembershipListener } from '../../src/ports/membership.ts';
import type { Scheduler } from './scheduler.ts';
import type { SimClock } from './sim-clock.ts';

export class SimMembership implements Membership {
  /** Member name → true time last heard. */
  private readonly heard = new Map<string, number>();
  /** Members whose last heartbeat said they cannot use the log. */
  private readonly heardCut = new Set<string>();
  private readonly listeners = new Set<MembershipListener>();
  /** The members alive as last told to the runtime, and those of them that cannot use the log (this node included while it says so). */
  private shown: View;
  /** This node cannot use the log (setLogReachable). */
  logUnreachable = false;
  changes = 0;

  constructor(
    private readonly sched: Scheduler,
    private readonly clock: SimClock,
    readonly self: string,
    readonly inc: number,
    private readonly suspicionMs: number,
  ) {
    this.shown = { alive: [self], cut: [] };
  }

  async start(): Promise<void> {}

  members(): Member[] {
    const names = [...new Set([this.self, ...this.heard.keys()])].sort();
    const now = this.clock.nowMs();
    return names.map((name) => ({
      name, id: `id-${name}`, http: `${name}:8500`, grpc: `${name}:8502`,
      status: this.shown.alive.includes(name) ? 'alive' as const : 'failed' as const,
      lastHeardMs: name === this.self ? now : now - (this.sched.now - (this.heard.get(name) ?? 0)),
      ...(this.shown.cut.includes(name) ? { logUnreachable: true } : {}),
    }));
  }

  alive(): string[] {
    return [...this.shown.alive];
  }

  owners(): string[] {
    return ownersAmong(this.members());
  }

  setLogReachable(reachable: boolean): void {
    this.logUnreachable = !reachable;
    this.sweep();
  }

  onChange(listener: MembershipListener): () => void {
    this.listeners.add(listener);
    return () => this.listeners.delete(listener);
  }

  async stop(): Promise<void> {}

  /** A heartbeat of `from` reached this node (true time now), saying whether `from` can use the log. */
  hear(from: string, logUnreachable = false): void {
    if (from === this.self) return;
    this.heard.set(from, this.sched.now);
    if (logUnreachable) this.heardCut.add(from); else this.heardCut.delete(from);
  }

  /** The view this node would hold now; a change is told to the runtime as an event on this node. */
  sweep(): void {
    if (this.told || keyOf(this.computed()) === keyOf(this.shown)) return;
    this.told = true;
    this.sched.at(this.sched.now, `membership ${this.self}`, () => {
      this.told = false;
      const next = this.computed();
      if (keyOf(next) === keyOf(this.shown)) return;
      this.shown = next;
      this.changes++;
      const members = this.members();
      for (const l of [...this.listeners]) l(members);
    }, this.self, this.inc);
  }

  private told = false;

  private computed(): View {
    const now = this.sched.now;
    const alive = [this.self, ...[...this.heard].filter(([, at]) => now - at < this.suspicionMs).map(([n]) => n)].sort();
    return { alive, cut: alive.filter((n) => (n === this.self ? this.logUnreachable : this.heardCut.has(n))) };
  }
}

interface View {
  alive: string[];
  cut: string[];
}

function keyOf(v: View): string {
  return `${v.alive.join(',')}|${v.cut.join(',')}`;
}
