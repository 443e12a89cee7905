/**
 * The seq ↔ index marks of consumed messages, kept between snapshots: a snapshot records the mark at or
 * before its index, so a node opening from it starts consuming right after that message.
 */
import type { Mark } from './format.ts';

/** Marks kept between snapshots; above it every other one is dropped (a snapshot then replays a little more). */
export const marksMax = 4096;

export class Marks {
  /** Oldest first; marks[0] is at or before the newest snapshot. */
  private marks: Mark[];

  constructor(start: Mark, private readonly max = marksMax) {
    this.marks = [start];
  }

  get size(): number {
    return this.marks.length;
  }

  push(m: Mark): void {
    this.marks.push(m);
    if (this.marks.length <= this.max) return;
    // Thin out, keeping the first (needed by a snapshot at the newest index) and the last.
    const last = this.marks.at(-1)!;
    this.marks = this.marks.filter((_, k) => k % 2 === 0);
    if (this.marks.at(-1) !== last) this.marks.push(last);
  }

  /** The newest mark at or before `index`: where a node opening from a snapshot at `index` starts. */
  atOrBefore(index: number): { mark: Mark; at: number } {
    let at = 0;
    for (let k = this.marks.length - 1; k >= 0; k -= 1) {
      if (this.marks[k]!.index <= index) {
        at = k;
        break;
      }
    }
    return { mark: this.marks[at]!, at };
  }

  /** Drops the marks before position `at` (a snapshot was saved there: later ones have a larger index). */
  dropBefore(at: number): void {
    this.marks.splice(0, at);
  }
}
