/**
 * Fencing check: the token a lock holder got from a successful acquire (the registry's index)
 * must never go backwards at the resource the lock protects. A paused or partitioned holder that wakes up
 * with an old token is harmless only if the resource refuses it; this module is that resource, and the
 * check over what it accepted.
 */

export interface FencedWrite { holder: string; key: string; token: number; atMs: number; accepted: boolean }

/**
 * A protected resource: tokens must never go backwards per key. `fenced` rejects a token lower than the
 * highest accepted (as a real fenced store does; an equal token is accepted: one holder writes many times
 * under one acquisition); unfenced accepts everything (the control that shows what fencing prevents).
 */
export class ProtectedResource {
  readonly #highest = new Map<string, number>();
  readonly #writes: FencedWrite[] = [];

  constructor(readonly fenced: boolean) {}

  /** Applies a write stamped with `token`; answers whether it was accepted. */
  write(holder: string, key: string, token: number): boolean {
    if (!Number.isFinite(token)) throw new Error(`fencing: token ${token} from ${holder} is not a number`);
    const highest = this.#highest.get(key);
    const accepted = !this.fenced || highest === undefined || token >= highest;
    if (accepted && (highest === undefined || token > highest)) this.#highest.set(key, token);
    this.#writes.push({ holder, key, token, atMs: performance.now(), accepted });
    return accepted;
  }

  /** Every write in the order the resource applied it. */
  writes(): FencedWrite[] {
    return this.#writes.map((w) => ({ ...w }));
  }
}

export interface FencingReport {
  valid: boolean;
  writes: number;
  rejected: number;
  violations: { key: string; before: FencedWrite; after: FencedWrite }[];
  /**
   * One token accepted from two different holders on one key: two acquisitions were handed the same
   * index, so fencing cannot tell them apart; it makes `valid` false too.
   */
  sharedTokens: { key: string; token: number; first: FencedWrite; second: FencedWrite }[];
}

/**
 * Violation: an ACCEPTED write whose token is lower than an earlier accepted write's on the same key
 * (`before` is the earlier write with the highest token). `writes` must be in the order the resource
 * applied them, as `ProtectedResource.writes()` returns them. Rejected writes are counted, never violations.
 */
export function checkFencing(writes: FencedWrite[]): FencingReport {
  const highest = new Map<string, FencedWrite>();
  const holderOf = new Map<string, FencedWrite>(); // `${key}\0${token}` → first accepted write
  const violations: FencingReport['violations'] = [];
  const sharedTokens: FencingReport['sharedTokens'] = [];
  let rejected = 0;
  for (const w of writes) {
    if (!w.accepted) { rejected++; continue; }
    const top = highest.get(w.key);
    if (top !== undefined && w.token < top.token) violations.push({ key: w.key, before: top, after: w });
    if (top === undefined || w.token > top.token) highest.set(w.key, w);
    const tokenKey = `${w.key}\u0000${w.token}`;
    const first = holderOf.get(tokenKey);
    if (first === undefined) holderOf.set(tokenKey, w);
    else if (first.holder !== w.holder && !sharedTokens.some((s) => s.first === first && s.second.holder === w.holder)) {
      sharedTokens.push({ key: w.key, token: w.token, first, second: w });
    }
  }
  return { valid: violations.length === 0 && sharedTokens.length === 0, writes: writes.length, rejected, violations, sharedTokens };
}
