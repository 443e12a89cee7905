/**
 * Wake-ups for blocking queries. A waiter names what it watches (a key, a key prefix, the sessions
 * table, the catalog); after each applied batch the runtime reports what changed and every waiter
 * whose interest was touched is woken. The handler then re-reads and decides whether to answer.
 */

export interface Touched {
  kvKeys: Set<string>;
  sessions: boolean;
  catalog: boolean;
}

export type Interest =
  | { kind: 'key'; key: string }
  | { kind: 'prefix'; prefix: string }
  | { kind: 'sessions' }
  | { kind: 'catalog' };

interface Waiter {
  interest: Interest;
  wake: () => void;
}

export class Watches {
  private readonly waiters = new Set<Waiter>();

  get size(): number {
    return this.waiters.size;
  }

  /** Resolves true when the interest is touched, false when `timeoutMs` passes or `signal` aborts first. */
  wait(interest: Interest, timeoutMs: number, signal?: AbortSignal): Promise<boolean> {
    return new Promise((resolve) => {
      const done = (changed: boolean) => {
        clearTimeout(timer);
        this.waiters.delete(waiter);
        signal?.removeEventListener('abort', onAbort);
        resolve(changed);
      };
      const onAbort = () => done(false);
      const waiter: Waiter = { interest, wake: () => done(true) };
      const timer = setTimeout(() => done(false), Math.max(0, timeoutMs));
      this.waiters.add(waiter);
      signal?.addEventListener('abort', onAbort, { once: true });
    });
  }

  notify(t: Touched): void {
    for (const w of [...this.waiters]) if (matches(w.interest, t)) w.wake();
  }

  /** Wakes everyone (shutdown): each handler answers with what it has. */
  wakeAll(): void {
    for (const w of [...this.waiters]) w.wake();
  }
}

function matches(i: Interest, t: Touched): boolean {
  switch (i.kind) {
    case 'key': return t.kvKeys.has(i.key);
    case 'prefix': {
      for (const k of t.kvKeys) if (k.startsWith(i.prefix)) return true;
      return false;
    }
    case 'sessions': return t.sessions;
    case 'catalog': return t.catalog;
  }
}
