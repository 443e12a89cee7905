/**
 * A membership a test sets by hand: the members named, with their statuses, each change told to the
 * listeners at once; any other node is unheard.
 */
import { commandLevel } from '../../src/domain/command-level.ts';
import { ownersAmong, type Member, type Membership, type MembershipListener } from '../../src/ports/membership.ts';

export class HandMembership implements Membership {
  private readonly listeners = new Set<MembershipListener>();
  constructor(private list: Member[] = []) {}
  async start(): Promise<void> {}
  members(): Member[] { return this.list; }
  alive(): string[] { return this.list.filter((m) => m.status === 'alive').map((m) => m.name).sort(); }
  owners(): string[] { return ownersAmong(this.list); }
  /** What the node told it of its own log, in order; which members cannot use the log is `set`'s to say. */
  readonly toldReachable: boolean[] = [];
  setLogReachable(reachable: boolean): void { this.toldReachable.push(reachable); }
  onChange(l: MembershipListener): () => void { this.listeners.add(l); return () => this.listeners.delete(l); }
  async stop(): Promise<void> {}
  /** Sets the members and their statuses; those named in `logCut` cannot use the log (this node's own included). */
  set(statuses: Record<string, Member['status']>, logCut: readonly string[] = []): void {
    this.list = Object.entries(statuses).map(([name, status]) => ({
      name, id: `id-${name}`, http: '', grpc: '', status, lastHeardMs: 0, commandLevel, ...(logCut.includes(name) ? { logUnreachable: true } : {}),
    }));
    for (const l of [...this.listeners]) l(this.list);
  }
}
