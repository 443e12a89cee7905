/**
 * Two live nodes under one name (a configuration copied with its node_name, a replacement started before
 * the old node stopped): the one that started later stops, at the first node and at every other alike (see
 * startedFirst). Live means heard without a gap for `liveAfterMs` or more (the suspicion timeout): gossip
 * may hand a new node the last few heartbeats of a node gone a moment ago, which it replaces on a fresh
 * data dir under its name, for a few seconds after that node's last one.
 */
import type { Logger } from '../src/ports/index.ts';
import type { Heartbeat } from './heartbeat.ts';
import { startedFirst } from './member-table.ts';

/** The node that keeps a name two live nodes use. */
export interface NameHolder { id: string; startedAt: string; http: string }

export interface NameClashOptions {
  /** This node: its name, ID and start time (its heartbeats' `inc`). */
  self: { name: string; id: string; inc: number };
  liveAfterMs: number;
  logger: Logger;
  /** Called once when this node is the one to stop; without it the clash is logged only. */
  nameTaken?: ((other: NameHolder) => void) | undefined;
}

export class NameClash {
  /** The other node heard under this node's name: since when without a gap, and when last. */
  private other: { id: string; sinceMs: number; lastMs: number } | undefined;
  private told = false;
  private warned = false;

  constructor(private readonly o: NameClashOptions) {}

  /** A heartbeat under this node's name from another node ID (not a leaving one). */
  heard(hb: Heartbeat, fromPeer: string | undefined, nowMs: number): void {
    const o = this.other;
    if (o === undefined || o.id !== hb.id || nowMs - o.lastMs >= this.o.liveAfterMs) this.other = { id: hb.id, sinceMs: nowMs, lastMs: nowMs };
    else o.lastMs = nowMs;
    if (nowMs - this.other!.sinceMs < this.o.liveAfterMs) return;
    const { self, logger } = this.o;
    const other: NameHolder = { id: hb.id, startedAt: new Date(hb.inc).toISOString(), http: hb.http };
    if (startedFirst(hb, self)) {
      if (this.told) return;
      this.told = true;
      if (this.o.nameTaken !== undefined) this.o.nameTaken(other);
      else logger.error({ name: self.name, other, peer: fromPeer }, 'membership: another node, started first, uses this node\'s name');
      return;
    }
    if (this.warned) return;
    this.warned = true;
    logger.warn({ name: self.name, other, peer: fromPeer }, 'membership: a node started later uses this node\'s name; it is to stop, this node keeps the name');
  }
}
