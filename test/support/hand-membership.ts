/**
 * A membership a test sets by hand: the members named, with their statuses, each change told to the
 * listeners at once; any other node is unheard.
 */
import { commandLevel } from '../../src/domain/command-level.ts';
import type { Member, Membership, MembershipListener } from '../../src/ports/membership.ts';

export class HandMembership implements Membership {
  private readonly listeners = new Set<MembershipListener>();
  constructor(private list: Member[] = []) {}
  async start(): Promise<void> {}
  members(): Member[] { return this.list; }
  alive(): string[] { return this.list.filter((m) => m.status === 'alive').map((m) => m.name).sort(); }
  onChange(l: MembershipListener): () => void { this.listeners.add(l); return () => this.listeners.delete(l); }
  async stop(): Promise<void> {}
  set(statuses: Record<string, Member['status']>): void {
    this.list = Object.entries(statuses).map(([name, status]) => ({ name, id: `id-${name}`, http: '', grpc: '', status, lastHeardMs: 0, commandLevel }));
    for (const l of [...this.listeners]) l(this.list);
  }
}
