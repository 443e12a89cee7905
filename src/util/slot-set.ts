/**
 * A set of objects that each know their place in it: an array and a slot number kept on the member, in
 * place of a `Set` for the hot, long-lived sets that requests enter and leave (waiters of blocking queries
 * and lock queues). A `Set` rehashes as members come and go and leaves each replaced table pointing at its
 * successor, which keeps answered requests reachable between full collections (see SeqRing). Adding,
 * removing and `has` take constant time; a removal moves the last member into the freed slot, so the
 * order is not the order of adding.
 */

/** A member of at most one SlotSet at a time; `slot` is its place there, -1 while it is in none. */
export interface Slotted {
  slot: number;
}

export class SlotSet<T extends Slotted> {
  private readonly members: T[] = [];

  get size(): number {
    return this.members.length;
  }

  has(member: T): boolean {
    return member.slot >= 0 && this.members[member.slot] === member;
  }

  add(member: T): void {
    if (this.has(member)) return;
    member.slot = this.members.length;
    this.members.push(member);
  }

  /** Whether `member` was here. */
  delete(member: T): boolean {
    if (!this.has(member)) return false;
    const last = this.members.pop()!;
    if (last !== member) {
      this.members[member.slot] = last;
      last.slot = member.slot;
    }
    member.slot = -1;
    return true;
  }

  /** The members now, in a list of their own: the set may change while it is walked. */
  list(): T[] {
    return this.members.slice();
  }

  /** Appends the members now to `to`. */
  copyInto(to: T[]): void {
    for (const m of this.members) to.push(m);
  }
}
