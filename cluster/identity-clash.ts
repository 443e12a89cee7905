/**
 * Two live nodes under one identity: one name (a configuration copied with its node_name, a replacement
 * started before the old node stopped), one node ID under two names (a data dir copied with its node-id
 * file), or both (a machine cloned with its configuration and data dir: two processes acting as one node).
 * Either pair would take the catalog's node from each other: the one
 * that started later stops, at the first node and at every other alike (see startedFirst). Live means
 * heard without a gap for `liveAfterMs` or more (the suspicion timeout): gossip may hand a new node the
 * last few heartbeats of a node gone a moment ago, which it replaces on a fresh data dir under its name,
 * or under a new name on its data dir, for a few seconds after that node's last one.
 */
import type { Logger } from '../src/ports/index.ts';
import type { Heartbeat } from './heartbeat.ts';
import { startedFirst } from './member-table.ts';

/** What two live nodes share: this node's name, its node ID, or both. */
export type SharedIdentity = 'name' | 'id' | 'both';

/** The node that keeps the identity two live nodes share. */
export interface IdentityHolder { name: string; id: string; startedAt: string; http: string }

export interface IdentityClashOptions {
  /** This node: its name, ID, start time (its heartbeats' `inc`) and HTTP address. */
  self: { name: string; id: string; inc: number; http: string };
  shared: SharedIdentity;
  liveAfterMs: number;
  logger: Logger;
  /** Called once when this node is the one to stop; without it the clash is logged only. */
  taken?: ((other: IdentityHolder) => void) | undefined;
}

/**
 * Whether `hb` comes from another node that shares this node's name, ID, or both (another process: another
 * start time or HTTP address than this one's); a leaving node does not count.
 */
export function sharesIdentity(hb: Heartbeat, self: { name: string; id: string; inc: number; http: string }, shared: SharedIdentity): boolean {
  if (hb.leaving === true) return false;
  const sameName = hb.name === self.name;
  const sameId = hb.id.toLowerCase() === self.id.toLowerCase();
  if (shared === 'name') return sameName && !sameId;
  if (shared === 'id') return sameId && !sameName;
  return sameName && sameId && (hb.inc !== self.inc || hb.http !== self.http);
}

export class IdentityClash {
  /** The other node heard under this node's identity (by what tells it apart): since when without a gap, and when last. */
  private other: { key: string; sinceMs: number; lastMs: number } | undefined;
  private told = false;
  private warned = false;

  constructor(private readonly o: IdentityClashOptions) {}

  /** A heartbeat of any node: counted when it shares this node's identity as `shared` says (sharesIdentity). */
  heard(hb: Heartbeat, fromPeer: string | undefined, nowMs: number): void {
    if (!sharesIdentity(hb, this.o.self, this.o.shared)) return;
    const key = this.o.shared === 'name' ? hb.id : this.o.shared === 'id' ? hb.name : `${hb.inc} ${hb.http}`;
    const o = this.other;
    if (o === undefined || o.key !== key || nowMs - o.lastMs >= this.o.liveAfterMs) this.other = { key, sinceMs: nowMs, lastMs: nowMs };
    else o.lastMs = nowMs;
    if (nowMs - this.other!.sinceMs < this.o.liveAfterMs) return;
    const { self, logger, shared } = this.o;
    const other: IdentityHolder = { name: hb.name, id: hb.id, startedAt: new Date(hb.inc).toISOString(), http: hb.http };
    const what = shared === 'name' ? 'name' : shared === 'id' ? 'node ID' : 'name and node ID';
    if (startedFirst(hb, self)) {
      if (this.told) return;
      this.told = true;
      if (this.o.taken !== undefined) this.o.taken(other);
      else logger.error({ name: self.name, id: self.id, other, peer: fromPeer }, `membership: another node, started first, uses this node's ${what}`);
      return;
    }
    if (this.warned) return;
    this.warned = true;
    logger.warn({ name: self.name, id: self.id, other, peer: fromPeer }, `membership: a node started later uses this node's ${what}; it is to stop, this node keeps it`);
  }
}
