/**
 * Which live member owns an actor: rendezvous (highest-random-weight) hashing of the actor id over the
 * alive members' names. Every node computes the same owner from the same member list, and when a member
 * fails only the actors it owned move. Checks are not placed this way: they stay on their agent.
 */
import { createHash } from 'node:crypto';

function weight(member: string, actor: string): bigint {
  return createHash('sha256').update(member).update('\0').update(actor).digest().readBigUInt64BE(0);
}

/** The owner of `actor` among `alive` (undefined when nobody is alive). */
export function ownerOf(actor: string, alive: readonly string[]): string | undefined {
  let best: string | undefined;
  let bestWeight = -1n;
  for (const member of alive) {
    const w = weight(member, actor);
    if (w > bestWeight || (w === bestWeight && best !== undefined && member < best)) {
      best = member;
      bestWeight = w;
    }
  }
  return best;
}
