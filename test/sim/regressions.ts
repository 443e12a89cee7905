/**
 * Seeds that once failed, with what they found. Every one runs on every test run (sim.test.ts).
 *
 * `status: 'src-bug'` marks a failure of src/ that is still open: its case is `test.fails` (it must keep
 * failing with the invariant named here until src is fixed; then flip it to 'fixed' and it guards the fix).
 * `status: 'fixed'` cases must pass.
 *
 * A seed replays only as long as the simulator draws in the same order: a change to sim.ts that draws
 * differently (a new fault kind, say) re-rolls every seed, so re-find the failing seed of an open case, or
 * pin the options it was found with (as `workloads` below).
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
  + 'on its own clock) still before renewedAtMs + TTL. Needs clocks apart by more than the TTL (≥ 10 s). '
  + 'Fixed: the owner proposes the expiry again once the log\'s time should have reached renew + TTL '
  + '(Runtime.expiryShortBy).';

/** The workloads and faults a seed ran with when it was found: with them it replays the same run. */
const beforeWorkloads = { queued: false, checks: false };
const beforeLogCuts = false;

export const regressions: readonly Regression[] = [
  {
    seed: 2,
    options: { clocks: { n1: { offsetMs: 30_000 } }, workloads: beforeWorkloads, logCuts: beforeLogCuts },
    status: 'fixed',
    invariant: 'ttl-liveness',
    found: `${ttlNeverRetried} Here n1 runs 30 s ahead; session c2-215e45a0ca58 (TTL 10 s) never expires.`,
  },
  {
    seed: 4,
    options: { offsetMaxMs: 15_000, workloads: beforeWorkloads, logCuts: beforeLogCuts },
    status: 'fixed',
    invariant: 'ttl-liveness',
    found: `${ttlNeverRetried} Here offsets are drawn within ±15 s; session c2-45a0a9f71b1f (TTL 10 s) is last renewed `
      + 'by entry 253 at entry time +65.0 s (true 58.1 s); its owner proposes the expiry 20 s of true time later, '
      + 'stamped +71.3 s < 65.0 + 10 s: refused as stale (entry 283) and never proposed again.',
  },
];
