/**
 * `PUT /v1/agent/force-leave/<node>`: a failed member is moved to left at once, as Consul's force-leave
 * does, instead of staying failed until it returns. A member that is alive is not touched; `prune` forgets
 * a failed or left member altogether. The membership tells the other members (gossip: cluster/).
 */
import type { Membership } from '../ports/membership.ts';

export function forceLeave(membership: Membership, node: string, prune: boolean): 'left' | 'alive' | 'unknown' {
  const member = membership.members().find((m) => m.name === node);
  if (member === undefined) return 'unknown';
  if (member.status === 'alive') return 'alive';
  membership.forceLeave?.(node, prune);
  return 'left';
}
