/**
 * The one seeded generator of the simulation, the fault tests and the benches: mulberry32 over a 32-bit
 * seed, uniform in [0, 1). Small and fast, and the same seed gives the same draws on every machine, so a
 * printed seed replays a run.
 */
export function mulberry32(seed: number): () => number {
  let a = seed >>> 0;
  return () => {
    a = (a + 0x6d2b79f5) >>> 0;
    let t = a;
    t = Math.imul(t ^ (t >>> 15), t | 1);
    t ^= t + Math.imul(t ^ (t >>> 7), t | 61);
    return ((t ^ (t >>> 14)) >>> 0) / 4294967296;
  };
}

/** FNV-1a of a label, to derive independent streams from one seed. */
function hash32(text: string): number {
  let h = 0x811c9dc5;
  for (let k = 0; k < text.length; k++) h = Math.imul(h ^ text.charCodeAt(k), 0x01000193);
  return h >>> 0;
}

/**
 * Draws over one seed: every fault, delay, operation and id of a simulation or fault run comes from one
 * Prng (or a labelled child of it) in event order, so a printed seed replays exactly.
 */
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

  /**
   * An independent stream for `label`: each test, round or writer draws from its own, so adding a draw
   * in one place does not shift every later draw of the run.
   */
  child(label: string): Prng {
    return new Prng((this.seed ^ hash32(label)) >>> 0);
  }
}
