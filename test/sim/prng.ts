/**
 * The simulator's only source of randomness: mulberry32 over a 32-bit seed. Every fault, delay,
 * client operation and id of a run is drawn from one Prng in event order, so a seed replays exactly.
 */
import { mulberry32 } from '../../src/util/prng.ts';

export class Prng {
  private readonly draw: () => number;

  constructor(readonly seed: number) {
    this.draw = mulberry32(seed);
  }

  /** A float in [0, 1). */
  next(): number {
    return this.draw();
  }

  /** An integer in [lo, hi]. */
  int(lo: number, hi: number): number {
    return lo + Math.floor(this.next() * (hi - lo + 1));
  }

  /** A float in [lo, hi). */
  float(lo: number, hi: number): number {
    return lo + this.next() * (hi - lo);
  }

  chance(p: number): boolean {
    return this.next() < p;
  }

  pick<T>(xs: readonly T[]): T {
    if (xs.length === 0) throw new Error('Prng.pick: empty list');
    return xs[Math.floor(this.next() * xs.length)]!;
  }

  /** A hex id of `n` characters (session ids and the like: settled before the log, as DESIGN §1 asks). */
  hex(n: number): string {
    let s = '';
    while (s.length < n) s += Math.floor(this.next() * 0x10000).toString(16).padStart(4, '0');
    return s.slice(0, n);
  }
}
