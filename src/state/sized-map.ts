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

  constructor(private readonly sizeOf: (key: K, value: V) => number) {
    super();
  }

  override set(key: K, value: V): this {
    const previous = super.get(key);
    if (previous !== undefined) this.bytes -= this.sizeOf(key, previous);
    this.bytes += this.sizeOf(key, value);
    return super.set(key, value);
  }

  override delete(key: K): boolean {
    const previous = super.get(key);
    if (previous === undefined) return false;
    this.bytes -= this.sizeOf(key, previous);
    return super.delete(key);
  }

  override clear(): void {
    this.bytes = 0;
    super.clear();
  }
}

/** About the bytes an item takes in a snapshot: its JSON text's length. */
export const jsonSize = (_key: unknown, value: unknown): number => JSON.stringify(value)?.length ?? 0;

/** A tombstone: its key and its index in a snapshot's `[key, index]` pair. */
export const tombstoneSize = (key: string): number => key.length + 24;
