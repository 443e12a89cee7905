/**
 * The one interface every system under comparison is driven through, so Roster, etcd and NATS KV all
 * run in the same measuring loop (bench/measure.ts) and differ only in how they take and give back a
 * lock. Each driver implements its system's own lock recipe; bench/README.md names them.
 */

/** distinct: every client its own key, no contention; shared: one key for all, by the contention recipe. */
export type Scenario = 'distinct' | 'shared';

/** What taking a lock by the system's contention recipe came to. */
export interface LockOutcome {
  /** False when the deadline passed before the lock was held; the loop then stops. */
  held: boolean;
  /** performance.now() when the request that won was sent (bench:locks times its pairs from there). */
  wonTryAt: number;
}

export interface LockDriver {
  /** The system's name in tables and JSON (`roster`, `etcd`, `nats-kv`, …). */
  readonly name: string;
  /**
   * Prepares one client per entry of `keys` for the next row: client `c` works on `keys[c]` (its own key
   * in the distinct scenario, one shared key otherwise). Sessions, leases and the shared scenario's watches
   * are made here, outside the measured window.
   */
  setup(keys: readonly string[], scenario: Scenario): Promise<void>;
  /** One try on a key nobody else uses: true when held. False means someone else holds it (an error there). */
  tryAcquire(client: number, key: string): Promise<boolean>;
  /**
   * Takes `key`, waiting by the system's contention recipe while another client holds it, until the lock is
   * held or performance.now() reaches `until`. `contended` is called each time the client finds the lock
   * held (a refused try, or a wait begun on seeing a holder), when it happens, so the loop can count it
   * inside or outside its window.
   */
  lock(client: number, key: string, until: number, contended: () => void): Promise<LockOutcome>;
  /** Gives back a lock this client holds; rejects when the system did not release it. */
  release(client: number, key: string): Promise<void>;
  /** Ends the row: what setup made is removed (sessions destroyed, leases revoked, watches stopped). */
  teardown(): Promise<void>;
  /** Closes connections; the processes themselves are stopped by whoever started them. */
  close(): Promise<void>;
  /** Locks taken and given back many keys to a request, where the system has a transaction for it. */
  readonly batch?: BatchLocks;
}

/**
 * Many distinct keys locked in one request and unlocked in one (Roster: `PUT /v1/txn` with `lock` and
 * `unlock` operations; etcd: one Txn). The client's session or lease is the one setup() made.
 */
export interface BatchLocks {
  /** The most keys one request may carry. */
  readonly max: number;
  /** Takes every one of `keys` in one atomic request: true when all are held, false when it was refused. */
  acquireAll(client: number, keys: readonly string[]): Promise<boolean>;
  /** Gives every one of `keys` back in one request; rejects when the system did not release them all. */
  releaseAll(client: number, keys: readonly string[]): Promise<void>;
}

/** Rejects with a clear message when `p` has not settled after `ms`: no call may hang a bench. */
export async function within<T>(what: string, ms: number, p: Promise<T>): Promise<T> {
  let timer: NodeJS.Timeout | undefined;
  const timeout = new Promise<never>((_, rej) => {
    timer = setTimeout(() => rej(new Error(`${what}: no answer within ${ms} ms`)), ms);
  });
  try {
    return await Promise.race([p, timeout]);
  } finally {
    clearTimeout(timer);
  }
}
