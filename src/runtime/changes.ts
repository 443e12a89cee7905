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
    let change: Change | undefined;
    for (const e of effects) {
      switch (e.t) {
        case 'kv': change = add(change, index, atMs, 'kv', e.key); break;
        case 'session': change = add(change, index, atMs, 'sessions', e.id); break;
        case 'check': change = add(change, index, atMs, 'checks', { node: e.node, checkId: e.checkId, serviceId: e.serviceId }); break;
        case 'service': change = add(change, index, atMs, 'services', { node: e.node, serviceId: e.serviceId }); break;
        case 'node': change = add(change, index, atMs, 'nodes', e.node); break;
        default: break;
      }
    }
    if (change === undefined) return;
    this.push(change);
    if (this.listeners.size > 0) for (const l of [...this.listeners]) l(change);
  }

  /** Entry time of the change at `index`, when it is still held. */
  timeOf(index: number): number | undefined {
    const n = this.ring.length;
    let lo = 0;
    let hi = n - 1;
    while (lo <= hi) {
      const mid = (lo + hi) >> 1;
      const c = this.ring[(this.head + mid) % n]!;
      if (c.index === index) return c.atMs;
      if (c.index < index) lo = mid + 1;
      else hi = mid - 1;
    }
    return undefined;
  }

  /** Changes after `index`, oldest first; undefined when some of them are no longer held. */
  since(index: number): Change[] | undefined {
    if (index < this.floorIndex) return undefined;
    const n = this.ring.length;
    // The first held change after `index` (changes are held in index order from the head on).
    let lo = 0;
    let hi = n;
    while (lo < hi) {
      const mid = (lo + hi) >> 1;
      if (this.ring[(this.head + mid) % n]!.index > index) hi = mid;
      else lo = mid + 1;
    }
    const out: Change[] = [];
    for (let k = lo; k < n; k++) out.push(this.ring[(this.head + k) % n]!);
    return out;
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

/** The list of a kind an entry did not change: one shared, frozen empty array (readers only iterate). */
const none = Object.freeze([]) as unknown as never[];

/** `change` (made for this entry if this is its first item) with `item` added to its list `kind`. */
function add<K extends 'kv' | 'sessions' | 'checks' | 'services' | 'nodes'>(
  change: Change | undefined, index: number, atMs: number, kind: K, item: Change[K][number],
): Change {
  const c = change ?? { index, atMs, kv: none, sessions: none, checks: none, services: none, nodes: none };
  // A literal of one: `[]` and a push would reserve room for 17.
  if (c[kind] === none) c[kind] = [item] as Change[K];
  else (c[kind] as Change[K][number][]).push(item);
  return c;
}
