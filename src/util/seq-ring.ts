/**
 * Values under the consecutive sequence numbers it hands out, oldest first, in the slots of one array.
 *
 * This is what a `Map` keyed by a counter would be, for the hot, long-lived tables of requests in flight.
 * A `Map` or `Set` whose entries come and go rehashes every so often, and V8 leaves each table it replaces
 * pointing at its successor (for iterators still walking it). Once a replaced table has reached the old
 * generation, every later table and everything they hold stay reachable from it until the next full
 * collection: under steady load each scavenge then keeps and promotes megabytes of requests that are
 * long answered. An array keeps no such link, and a slot is emptied as its value is taken.
 *
 * The array doubles when the values held span more numbers than it has slots (an old value still held
 * keeps its slot while newer ones come and go), and never shrinks: it stays as large as the widest span so far.
 */
export class SeqRing<T> {
  private slots: (T | undefined)[] = new Array<T | undefined>(ringSlotsMin).fill(undefined);
  private mask = ringSlotsMin - 1;
  /** No value is held under a number below this one. */
  private first = 1;
  /** The number the next value gets. */
  private next = 1;
  private count = 0;

  /** How many values are held. */
  get size(): number {
    return this.count;
  }

  /** Holds `value` under the next number, and returns that number. */
  push(value: T): number {
    if (this.next - this.first > this.mask) this.grow();
    const seq = this.next++;
    this.slots[seq & this.mask] = value;
    this.count += 1;
    return seq;
  }

  get(seq: number): T | undefined {
    return seq >= this.first && seq < this.next ? this.slots[seq & this.mask] : undefined;
  }

  /** Removes and returns the value under `seq`, if one is held. */
  take(seq: number): T | undefined {
    const value = this.get(seq);
    if (value === undefined) return undefined;
    this.slots[seq & this.mask] = undefined;
    this.count -= 1;
    while (this.first < this.next && this.slots[this.first & this.mask] === undefined) this.first += 1;
    return value;
  }

  /** Calls `f` for the values held, oldest first, until it returns false. `f` may take the value it is given. */
  scan(f: (seq: number, value: T) => boolean): void {
    for (let seq = this.first, end = this.next; seq < end; seq++) {
      const value = this.slots[seq & this.mask];
      if (value !== undefined && !f(seq, value)) return;
    }
  }

  /** Twice the slots, each value moved to its slot under the new mask. */
  private grow(): void {
    const slots = new Array<T | undefined>(this.slots.length * 2).fill(undefined);
    const mask = slots.length - 1;
    for (let seq = this.first; seq < this.next; seq++) slots[seq & mask] = this.slots[seq & this.mask];
    this.slots = slots;
    this.mask = mask;
  }
}

const ringSlotsMin = 16;

/**
 * The number written in decimal digits from `from` to the end of `text` (a SeqRing number carried in an id
 * or a subject), or 0 when there are none or anything else is there. Read digit by digit, with no substring.
 */
export function seqAt(text: string, from: number): number {
  if (from >= text.length) return 0;
  let seq = 0;
  for (let i = from; i < text.length; i++) {
    const digit = text.charCodeAt(i) - 48;
    if (digit < 0 || digit > 9) return 0;
    seq = seq * 10 + digit;
  }
  return seq;
}
