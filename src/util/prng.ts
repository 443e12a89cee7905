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
