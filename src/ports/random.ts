/**
 * Where the runtime draws randomness that never reaches the log (the jitter of a check's first probe):
 * `Math.random` in production, a seeded generator in the simulation so a seed replays exactly.
 */
export type Random = () => number;

/** The platform's generator. */
export const systemRandom: Random = () => Math.random();
