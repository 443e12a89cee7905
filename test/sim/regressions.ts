/**
 * Seeds that once failed, with what they found. Every one runs on every test run (sim.test.ts).
 *
 * `status: 'src-bug'` marks a failure of src/ that is still open: its case is `test.fails` (it must keep
 * failing with the invariant named here until src is fixed; then flip it to 'fixed' and it guards the fix).
 * `status: 'fixed'` cases must pass.
 */
import type { Invariant } from './checker.ts';
import type { SimOptions } from './sim.ts';

export interface Regression {
  seed: number;
  /** Options beyond the seed (a clock beyond the drawn bounds, say). */
  options?: Omit<SimOptions, 'seed'>;
  status: 'src-bug' | 'fixed';
  /** The invariant it broke. */
  invariant: Invariant;
  found: string;
}

const ttlNeverRetried =
  'src/runtime/ttl-owner.ts + runtime.ts: a TTL expiry refused as "stale" because its entry time is before '
  + 'renewedAtMs + TTL is never proposed again (proposeExpire resolves true for any result), so the session '
  + 'and its locks live until some membership change re-arms the timer. Entry time is stamped by the proposer '
  + 'and ratcheted (max) along the log: a renew proposed through a node whose clock is ahead gets a renewedAtMs '
  + 'in that clock, and an owner whose clock is behind by more than about TTL stamps its expiry (2 × TTL later '
  + 'on its own clock) still before renewedAtMs + TTL. Needs clocks apart by more than the TTL (≥ 10 s).';

export const regressions: readonly Regression[] = [
  {
    seed: 2,
    options: { clocks: { n1: { offsetMs: 30_000 } } },
    status: 'src-bug',
    invariant: 'ttl-liveness',
    found: `${ttlNeverRetried} Here n1 runs 30 s ahead; session c2-215e45a0ca58 (TTL 10 s) never expires.`,
  },
  {
    seed: 6,
    options: { offsetMaxMs: 15_000 },
    status: 'src-bug',
    invariant: 'ttl-liveness',
    found: `${ttlNeverRetried} Here offsets are drawn within ±15 s; session c1-7e80a9c56164 (TTL 15 s, created at `
      + 'entry time +71.4 s) gets its expiry stamped +75.6 s by its owner, refused, never retried.',
  },
];
