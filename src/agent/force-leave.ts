/**
 * `PUT /v1/agent/force-leave/<node>`: a failed member is moved to left at once, as Consul's force-leave
 * does, instead of staying failed until it returns. A member that is alive is not touched; `prune` forgets
 * a failed or left member altogether. The membership tells the other members (gossip: cluster/).
 *
 * The log records it too (the node's gossip check critical, `Agent left the cluster`): gossip's table
 * lives in each process and is forgotten at a restart, or, with `prune`, at once, while the record keeps
 * the node out of the count every node judges its majority by (src/runtime/node-health.ts). So a Roster
 * node of the catalog that no member of this agent's list names, one gone before this agent started, can
 * be force-left too.
 */
import type { Membership } from '../ports/membership.ts';

/** What force-leave needs of the runtime: recording the departure in the log (NodeHealthOwner.markLeft). */
export interface LeftRecord {
  /** False when the catalog holds no Roster node of that name; rejects when the log does not take the write. */
  markLeft(node: string): Promise<boolean>;
}

export async function forceLeave(membership: Membership, record: LeftRecord, node: string, prune: boolean): Promise<'left' | 'alive' | 'unknown'> {
  const member = membership.members().find((m) => m.name === node);
  if (member?.status === 'alive') return 'alive';
  if (member !== undefined) membership.forceLeave?.(node, prune);
  const recorded = await record.markLeft(node);
  return member !== undefined || recorded ? 'left' : 'unknown';
}
