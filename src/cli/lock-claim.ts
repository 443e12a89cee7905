/**
 * What `roster lock` holds while its command runs: one lock key (`-n 1`, this file's KeyLock) or a slot of
 * a semaphore (`-n N`, semaphore.ts). LockRun (lock.ts) owns the session, the waiting, the signals and
 * the command; a Claim only speaks to the agent about the keys.
 */
import { failureOf, keyPath, requestTimeoutMs, type Answer } from './client.ts';
import type { CliContext } from './context.ts';
import { CliError } from './errors.ts';
import type { KvEntry } from './kv.ts';
import { setLongTimeout } from '../util/timer.ts';

/** The result of one look at a held claim: still ours (with the index to wait from), or lost and why. */
export type Held = { held: true; index: number } | { held: false; reason: string };

export interface Claim {
  /** What messages name: the lock key, or the semaphore's prefix. */
  readonly what: string;
  /** The claim in words: `lock "p/.lock"`, `a slot of semaphore "p" (limit 3)`. */
  readonly describe: string;
  /** The session's behaviour: release for a lock; delete for a semaphore, whose contender key goes with the session. */
  readonly behavior: 'release' | 'delete';
  /** Called once the session exists, before waiting (the semaphore writes its contender key); `signal` ends it. */
  enter(session: string, signal: AbortSignal): Promise<void>;
  /**
   * Waits at most `waitMs` for the lock or a slot: its index (the fencing token) when ours, undefined when
   * not yet. Paces itself: it never returns early in a loop. A refusal that waiting cannot cure is thrown.
   */
  tryAcquire(waitMs: number, signal: AbortSignal): Promise<number | undefined>;
  /** One blocking read from `index` (0: answer at once). An agent away or answering an error throws. */
  check(index: number, waitMs: number, signal: AbortSignal): Promise<Held>;
  /** Gives the lock or slot back; a failure is thrown (the session's end frees it anyway). */
  release(): Promise<void>;
}

/** Consul's flags value for a lock key (its api.LockFlagValue), so Consul's own clients know the key for a lock. */
export const lockFlagValue = '3304740253564472344';
/** Consul's flags value for a semaphore's keys (api.SemaphoreFlagValue, 0xe0f69a2baa414de0). */
export const semaphoreFlagValue = '16210313421097356768';
/** After an acquire the agent refused at once (an agent that does not queue, a lock-delay), wait this long before the next. */
const refusedPauseMs = 1_000;

export const sleep = (ms: number, signal?: AbortSignal) => new Promise<void>((resolve) => {
  const t = setLongTimeout(resolve, ms, false);
  signal?.addEventListener('abort', () => { t.clear(); resolve(); }, { once: true });
});

/** `-n 1`: the key `<prefix>/.lock` taken with the agent's queued acquire, as `consul lock` does. */
export class KeyLock implements Claim {
  readonly behavior = 'release';
  readonly describe: string;
  private session = '';

  constructor(private readonly ctx: CliContext, readonly what: string) {
    this.describe = `lock "${what}"`;
  }

  /** Refuses a semaphore's coordination key: acquiring it would overwrite the semaphore's holders. */
  async enter(session: string, signal: AbortSignal): Promise<void> {
    this.session = session;
    const a = await this.ctx.client.get(`/v1/kv/${keyPath(this.what)}`, { signal });
    const entry = a.status === 404 ? undefined : entryOf(a);
    if (entry !== undefined && String(entry.Flags) === semaphoreFlagValue) {
      throw new CliError(`${this.what} is a semaphore's key: a lock -n above 1 uses this prefix`);
    }
  }

  async tryAcquire(waitMs: number, signal: AbortSignal): Promise<number | undefined> {
    const started = performance.now();
    const a = await this.ctx.client.put(`/v1/kv/${keyPath(this.what)}`, {
      query: { acquire: this.session, flags: lockFlagValue, wait: `${Math.round(waitMs)}ms` },
      timeoutMs: waitMs + requestTimeoutMs, signal,
    });
    if (a.status === 200 && a.text.trim() === 'true') return a.index ?? 0;
    const refused = (a.status === 200 && a.text.trim() === 'false') || a.status === 409;
    if (!refused) throw new CliError(`could not acquire lock "${this.what}": ${failureOf(a).message}`);
    const left = waitMs - (performance.now() - started);
    if (left > waitMs / 2) await sleep(Math.min(refusedPauseMs, left), signal);
    return undefined;
  }

  async check(index: number, waitMs: number, signal: AbortSignal): Promise<Held> {
    const a = await this.ctx.client.get(`/v1/kv/${keyPath(this.what)}`, {
      query: { index, wait: `${waitMs}ms` }, timeoutMs: waitMs + requestTimeoutMs, signal,
    });
    if (a.status === 404) return { held: false, reason: `the lock key ${this.what} was deleted` };
    const entry = entryOf(a);
    if (entry?.Session !== this.session) return { held: false, reason: `the lock ${this.what} is no longer held by session ${this.session}` };
    return { held: true, index: a.index ?? index };
  }

  async release(): Promise<void> {
    const a = await this.ctx.client.put(`/v1/kv/${keyPath(this.what)}`, { query: { release: this.session, flags: lockFlagValue } });
    if (a.status !== 200 || a.text.trim() !== 'true') throw new CliError(`could not release lock "${this.what}": ${failureOf(a).message}`);
  }
}

/** The first entry of a 200 answer; any other answer is an error (counted by -monitor-retry). */
export function entryOf(a: Answer): KvEntry | undefined {
  if (a.status !== 200) throw failureOf(a);
  return a.json<KvEntry[]>()[0];
}
