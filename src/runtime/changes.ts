/**
 * What each applied entry changed, by entity, kept in a bounded ring so a stream subscriber can resume
 * from an index: the stream derives its events from these records and the current state. Only entries
 * that changed something a stream can show are recorded.
 */
import type { Effect } from '../state/index.ts';

export interface Change {
  index: number;
  atMs: number;
  kv: string[];
  sessions: string[];
  checks: { node: string; checkId: string; serviceId: string }[];
  services: { node: string; serviceId: string }[];
  nodes: string[];
}

export type ChangeListener = (change: Change) => void;

export interface ChangeLogOptions {
  /** @default 10000 */
  changesMax?: number;
  /** @default 10 minutes */
  ageMsMax?: number;
}

export class ChangeLog {
  private readonly ring: Change[] = [];
  private head = 0;
  /** Every change with an index above this is still held. */
  private floorIndex = 0;
  private readonly listeners = new Set<ChangeListener>();
  private readonly changesMax: number;
  private readonly ageMsMax: number;

  constructor(o: ChangeLogOptions = {}) {
    this.changesMax = o.changesMax ?? 10_000;
    this.ageMsMax = o.ageMsMax ?? 10 * 60 * 1000;
  }

  get floor(): number {
    return this.floorIndex;
  }

  /** Starts afresh at `index` (a starting node has no history to offer before it). */
  startAt(index: number): void {
    this.ring.length = 0;
    this.head = 0;
    this.floorIndex = index;
  }

  subscribe(listener: ChangeListener): () => void {
    this.listeners.add(listener);
    return () => this.listeners.delete(listener);
  }

  /** Records one applied entry's effects and tells the listeners, synchronously. */
  record(index: number, atMs: number, effects: readonly Effect[]): void {
    const change: Change = { index, atMs, kv: [], sessions: [], checks: [], services: [], nodes: [] };
    for (const e of effects) {
      switch (e.t) {
        case 'kv': change.kv.push(e.key); break;
        case 'session': change.sessions.push(e.id); break;
        case 'check': change.checks.push({ node: e.node, checkId: e.checkId, serviceId: e.serviceId }); break;
        case 'service': change.services.push({ node: e.node, serviceId: e.serviceId }); break;
        case 'node': change.nodes.push(e.node); break;
        default: break;
      }
    }
    if (change.kv.length + change.sessions.length + change.checks.length + change.services.length + change.nodes.length === 0) return;
    this.push(change);
    for (const l of [...this.listeners]) l(change);
  }

  /** Entry time of the change at `index`, when it is still held. */
  timeOf(index: number): number | undefined {
    const held = this.held();
    let lo = 0;
    let hi = held.length - 1;
    while (lo <= hi) {
      const mid = (lo + hi) >> 1;
      const c = held[mid]!;
      if (c.index === index) return c.atMs;
      if (c.index < index) lo = mid + 1;
      else hi = mid - 1;
    }
    return undefined;
  }

  /** Changes after `index`, oldest first; undefined when some of them are no longer held. */
  since(index: number): Change[] | undefined {
    if (index < this.floorIndex) return undefined;
    return this.held().filter((c) => c.index > index);
  }

  private held(): Change[] {
    const n = this.ring.length;
    const out: Change[] = [];
    for (let i = 0; i < n; i++) out.push(this.ring[(this.head + i) % n]!);
    return out;
  }

  private push(change: Change): void {
    if (this.ring.length < this.changesMax) this.ring.push(change);
    else {
      this.floorIndex = Math.max(this.floorIndex, this.ring[this.head]!.index);
      this.ring[this.head] = change;
      this.head = (this.head + 1) % this.ring.length;
    }
    // Age bound: drop the oldest while they are too old (kept in order, so they sit at the head).
    while (this.ring.length > 1) {
      const oldest = this.ring[this.head]!;
      if (change.atMs - oldest.atMs <= this.ageMsMax) break;
      this.dropOldest();
    }
  }

  private dropOldest(): void {
    const held = this.held();
    const oldest = held.shift()!;
    this.floorIndex = Math.max(this.floorIndex, oldest.index);
    this.ring.length = 0;
    this.ring.push(...held);
    this.head = 0;
  }
}
