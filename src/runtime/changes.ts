/**
 * What each applied entry changed, by entity, kept in a bounded ring so a stream subscriber can resume
 * from an index: the stream derives its events from these records and the current state. Only entries
 * that changed something a stream can show are recorded. The ring is bounded by changes, by age and by
 * the bytes of the names it holds; a resume from before the oldest held change gets a reset instead.
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
  /**
   * Most bytes of names held (see `changeBytes`); the oldest changes are dropped past it, the newest is
   * always held. @default 32 MiB
   */
  bytesMax?: number;
}

/** Item kinds in the flat store, and the kind lists of a Change they go back to. */
const kvItem = 0;
const sessionItem = 1;
const checkItem = 2;
const serviceItem = 3;
const nodeItem = 4;
/** A change with more items than this (a restore's every key) is held as its own object instead. */
const flatItemsMax = 256;
const itemCapacityMin = 1024;
/** What an item costs besides its names' characters: its slots in the store, or its object when held whole. */
const itemOverheadBytes = 16;

/**
 * The held changes are copied into flat, preallocated slots (numbers in typed arrays, names in arrays of
 * strings) rather than kept as one object per change. A change object that lived
 * for the ring's span (about half a second under a write load) outlived two young-generation collections,
 * was moved to the old generation and died there, so every write paid for the old generation's collections:
 * measured on one node, 87–94 µs of server CPU per lock pair with the objects kept against 69–73 without.
 *
 * The names are often the state's own strings, but not those of deleted keys: a change that deleted 64
 * keys of 8 KB names holds half a megabyte alone, so 10,000 such changes took gigabytes (transactions
 * setting and deleting long keys ran the heap out of memory while the state stayed small). Hence the bound
 * by bytes as well as by count.
 */
export class ChangeLog {
  private readonly changesMax: number;
  private readonly ageMsMax: number;
  private readonly bytesMax: number;
  /** Bytes of the held changes (changeBytes of each). */
  private heldBytes = 0;
  /** Absolute numbers of the oldest held change and of the next one; slot = number % changesMax. */
  private first = 0;
  private next = 0;
  private readonly indexOf: Float64Array;
  private readonly atMsOf: Float64Array;
  /** A change's first item (absolute item number) and its item count; -1: held whole in `large`. */
  private readonly itemAt: Float64Array;
  private readonly itemCount: Int32Array;
  private readonly bytesOf: Float64Array;
  private readonly large = new Map<number, Change>();
  /** The items: absolute numbers `itemsFrom` up to `itemsNext`, slot = number % capacity (grows when full). */
  private itemsFrom = 0;
  private itemsNext = 0;
  private kinds = new Uint8Array(itemCapacityMin);
  private names = nameColumns(itemCapacityMin);
  /** Every change with an index above this is still held. */
  private floorIndex = 0;
  private readonly listeners = new Set<ChangeListener>();

  constructor(o: ChangeLogOptions = {}) {
    this.changesMax = o.changesMax ?? 10_000;
    this.ageMsMax = o.ageMsMax ?? 10 * 60 * 1000;
    this.bytesMax = o.bytesMax ?? 32 * 1024 * 1024;
    this.indexOf = new Float64Array(this.changesMax);
    this.atMsOf = new Float64Array(this.changesMax);
    this.itemAt = new Float64Array(this.changesMax);
    this.itemCount = new Int32Array(this.changesMax);
    this.bytesOf = new Float64Array(this.changesMax);
  }

  get floor(): number {
    return this.floorIndex;
  }

  /** Bytes of names the held changes take (see changeBytes). */
  get bytes(): number {
    return this.heldBytes;
  }

  /** Slots of the item store (it grows and shrinks with the held changes). */
  get itemSlots(): number {
    return this.kinds.length;
  }

  /** Starts afresh at `index` (a starting node has no history to offer before it). */
  startAt(index: number): void {
    this.first = this.next;
    this.large.clear();
    this.itemsFrom = this.itemsNext;
    this.kinds = new Uint8Array(itemCapacityMin);
    this.names = nameColumns(itemCapacityMin);
    this.heldBytes = 0;
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
    this.hold(change);
    if (this.listeners.size > 0) for (const l of [...this.listeners]) l(change);
  }

  /** Entry time of the change at `index`, when it is still held. */
  timeOf(index: number): number | undefined {
    const at = this.firstAbove(index - 1);
    return at < this.next && this.indexOf[at % this.changesMax] === index ? this.atMsOf[at % this.changesMax] : undefined;
  }

  /** Changes after `index`, oldest first; undefined when some of them are no longer held. */
  since(index: number): Change[] | undefined {
    if (index < this.floorIndex) return undefined;
    const out: Change[] = [];
    for (let n = this.firstAbove(index); n < this.next; n++) out.push(this.changeAt(n));
    return out;
  }

  /** The absolute number of the first held change whose index is above `index` (`next` if none is). */
  private firstAbove(index: number): number {
    let lo = this.first;
    let hi = this.next;
    while (lo < hi) {
      const mid = Math.floor((lo + hi) / 2);
      if (this.indexOf[mid % this.changesMax]! > index) hi = mid;
      else lo = mid + 1;
    }
    return lo;
  }

  /** The held change number `n` as an object again. */
  private changeAt(n: number): Change {
    const slot = n % this.changesMax;
    if (this.itemCount[slot] === -1) return this.large.get(n)!;
    let change: Change | undefined;
    const index = this.indexOf[slot]!;
    const atMs = this.atMsOf[slot]!;
    const from = this.itemAt[slot]!;
    const cap = this.kinds.length;
    const [a, b, c] = this.names as [string[], string[], string[]];
    for (let i = from; i < from + this.itemCount[slot]!; i++) {
      const k = i % cap;
      switch (this.kinds[k]) {
        case kvItem: change = add(change, index, atMs, 'kv', a[k]!); break;
        case sessionItem: change = add(change, index, atMs, 'sessions', a[k]!); break;
        case checkItem: change = add(change, index, atMs, 'checks', { node: a[k]!, checkId: b[k]!, serviceId: c[k]! }); break;
        case serviceItem: change = add(change, index, atMs, 'services', { node: a[k]!, serviceId: b[k]! }); break;
        default: change = add(change, index, atMs, 'nodes', a[k]!); break;
      }
    }
    return change ?? { index, atMs, kv: none, sessions: none, checks: none, services: none, nodes: none };
  }

  /** Copies `change` into the next slot, making room first: by count, by item space, then by age and bytes. */
  private hold(change: Change): void {
    const items = change.kv.length + change.sessions.length + change.checks.length + change.services.length + change.nodes.length;
    const flat = items <= flatItemsMax;
    if (this.next - this.first === this.changesMax) this.dropOldest();
    if (flat) this.makeRoom(items);
    const n = this.next++;
    const slot = n % this.changesMax;
    this.indexOf[slot] = change.index;
    this.atMsOf[slot] = change.atMs;
    this.itemAt[slot] = this.itemsNext;
    this.itemCount[slot] = flat ? items : -1;
    this.bytesOf[slot] = changeBytes(change);
    this.heldBytes += this.bytesOf[slot]!;
    if (flat) this.storeItems(change);
    else this.large.set(n, change);
    while (this.next - this.first > 1 && change.atMs - this.atMsOf[this.first % this.changesMax]! > this.ageMsMax) this.dropOldest();
    while (this.next - this.first > 1 && this.heldBytes > this.bytesMax) this.dropOldest();
  }

  private storeItems(change: Change): void {
    for (const key of change.kv) this.item(kvItem, key, '', '');
    for (const id of change.sessions) this.item(sessionItem, id, '', '');
    for (const x of change.checks) this.item(checkItem, x.node, x.checkId, x.serviceId);
    for (const x of change.services) this.item(serviceItem, x.node, x.serviceId, '');
    for (const node of change.nodes) this.item(nodeItem, node, '', '');
  }

  private item(kind: number, a: string, b: string, c: string): void {
    const k = this.itemsNext++ % this.kinds.length;
    this.kinds[k] = kind;
    this.names[0]![k] = a;
    this.names[1]![k] = b;
    this.names[2]![k] = c;
  }

  /**
   * Room for `items` more: the item store doubles when the held changes fill it, and halves (to no less than
   * twice what it holds) once they take less than an eighth of it, so a burst of large changes (transactions
   * of many keys) does not leave arrays of stale names for every full collection to mark.
   */
  private makeRoom(items: number): void {
    const cap = this.kinds.length;
    const needed = this.itemsNext + items - this.itemsFrom;
    if (needed <= cap && (cap <= itemCapacityMin || needed * 8 >= cap)) return;
    let size = needed > cap ? cap * 2 : cap;
    while (needed > size) size *= 2;
    while (size > itemCapacityMin && needed * 4 <= size) size /= 2;
    this.resize(size);
  }

  private resize(size: number): void {
    const cap = this.kinds.length;
    const kinds = new Uint8Array(size);
    const names = nameColumns(size);
    for (let i = this.itemsFrom; i < this.itemsNext; i++) {
      kinds[i % size] = this.kinds[i % cap]!;
      for (let j = 0; j < 3; j++) names[j]![i % size] = this.names[j]![i % cap]!;
    }
    this.kinds = kinds;
    this.names = names;
  }

  /** Drops the oldest change; its names are cleared from the store, which would otherwise keep them until overwritten. */
  private dropOldest(): void {
    const n = this.first++;
    const slot = n % this.changesMax;
    this.floorIndex = Math.max(this.floorIndex, this.indexOf[slot]!);
    this.heldBytes -= this.bytesOf[slot]!;
    if (this.itemCount[slot] === -1) {
      this.large.delete(n);
      return;
    }
    const cap = this.kinds.length;
    for (let i = this.itemsFrom; i < this.itemAt[slot]! + this.itemCount[slot]!; i++) {
      for (const column of this.names) column[i % cap] = '';
    }
    this.itemsFrom = this.itemAt[slot]! + this.itemCount[slot]!;
  }
}

/** What holding `change` costs, by the ring's count: its names' characters and itemOverheadBytes per item. */
function changeBytes(c: Change): number {
  let bytes = 0;
  for (const key of c.kv) bytes += itemOverheadBytes + key.length;
  for (const id of c.sessions) bytes += itemOverheadBytes + id.length;
  for (const x of c.checks) bytes += itemOverheadBytes + x.node.length + x.checkId.length + x.serviceId.length;
  for (const x of c.services) bytes += itemOverheadBytes + x.node.length + x.serviceId.length;
  for (const node of c.nodes) bytes += itemOverheadBytes + node.length;
  return bytes;
}

/** The three name columns of the item store, filled from the start (an array written out of order would turn sparse). */
function nameColumns(size: number): string[][] {
  return [0, 1, 2].map(() => new Array<string>(size).fill(''));
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
