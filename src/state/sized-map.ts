/**
 * A Map that keeps the total of its entries' sizes as they are set and deleted: the state's tables whose
 * items vary in size (a session's name, a node's meta, a service's tags, a check's definition) are
 * counted in the size estimate (size.ts) by what they hold, not by a typical size, so no client can grow
 * the state past the quota with items larger than typical. An item is counted when it is set; items are
 * replaced, never changed in place, where their size could change.
 */
export class SizedMap<K, V> extends Map<K, V> {
  /** The sum of sizeOf over the entries. */
  bytes = 0;

  /** `groups`: the indexes kept in step with the entries (a table's items by node, by service…). */
  constructor(private readonly sizeOf: (key: K, value: V) => number, private readonly groups: readonly GroupIndex<K, V>[] = []) {
    super();
  }

  override set(key: K, value: V): this {
    const previous = super.get(key);
    if (previous !== undefined) {
      this.bytes -= this.sizeOf(key, previous);
      for (const g of this.groups) g.remove(key, previous);
    }
    this.bytes += this.sizeOf(key, value);
    for (const g of this.groups) g.add(key, value);
    return super.set(key, value);
  }

  override delete(key: K): boolean {
    const previous = super.get(key);
    if (previous === undefined) return false;
    this.bytes -= this.sizeOf(key, previous);
    for (const g of this.groups) g.remove(key, previous);
    return super.delete(key);
  }

  override clear(): void {
    this.bytes = 0;
    for (const g of this.groups) g.clear();
    super.clear();
  }
}

/**
 * A table's items grouped by a name each item carries (its node, its service…), so that the items of one
 * group are read without visiting the whole table: with tens of thousands of services, a scan per
 * registration made registering them quadratic in the apply of every node and every replay. Kept by the
 * SizedMap it is given to; the name must not change while an item is in the table (items are replaced).
 */
export class GroupIndex<K, V> {
  private readonly byGroup = new Map<string, Map<K, V>>();

  constructor(private readonly groupOf: (value: V) => string) {}

  add(key: K, value: V): void {
    const name = this.groupOf(value);
    let group = this.byGroup.get(name);
    if (group === undefined) this.byGroup.set(name, (group = new Map()));
    group.set(key, value);
  }

  remove(key: K, value: V): void {
    const name = this.groupOf(value);
    const group = this.byGroup.get(name);
    if (group === undefined) return;
    group.delete(key);
    if (group.size === 0) this.byGroup.delete(name);
  }

  clear(): void {
    this.byGroup.clear();
  }

  /** Whether the group has any item. */
  has(name: string): boolean {
    return this.byGroup.has(name);
  }

  /** The items of one group, in no particular order (a copy: the caller may change the table meanwhile). */
  of(name: string): V[] {
    const group = this.byGroup.get(name);
    return group === undefined ? [] : [...group.values()];
  }
}

/** About the bytes an item takes in a snapshot: its JSON text's length. */
export const jsonSize = (_key: unknown, value: unknown): number => JSON.stringify(value)?.length ?? 0;

/** A tombstone: its key and its index in a snapshot's `[key, index]` pair. */
export const tombstoneSize = (key: string): number => key.length + 24;
