/**
 * The floor servers' state (bench/floor-server.ts): locks and sessions in two maps, and a FIFO of queued
 * acquires per key. Every change is an entry of the log, applied in log order, so each node of the
 * cluster floor holds the same table; a request is answered by the node that took it, when that node
 * applies its entry (`Replies.answer` does nothing for another node's request).
 *
 * A queued acquire (`wait` > 0, the key held by another session) joins the key's queue; the release or
 * delete that frees the key hands it to the first waiter whose session still exists, in the same apply.
 * When a waiter's time runs out its node logs a `cancel`, which refuses it if it is still waiting.
 */

export type Entry =
  | { t: 'session'; id: string; p: string }
  | { t: 'destroy'; id: string; p: string }
  | { t: 'acquire'; key: string; session: string; value: string; wait: number; p: string }
  | { t: 'release'; key: string; session: string; p: string }
  | { t: 'delete'; key: string; p: string }
  /** Ends the wait of the queued acquire `p` (no answer of its own). */
  | { t: 'cancel'; key: string; p: string };

/** What the table tells the node that applies it. */
export interface Replies {
  /** Answers request `p`, if this node took it and has not answered it yet. */
  answer(p: string, status: string, body: string): void;
  /** Acquire `p` now waits for `key`: the node that took it logs a cancel after `waitMs` (see the head comment). */
  waiting(p: string, key: string, waitMs: number): void;
}

interface Waiter { session: string; p: string }

const ok = '200 OK';
const badRequest = '400 Bad Request';
const unknownSession = '"unknown session"';

export class LockTable {
  private readonly holders = new Map<string, string>();
  private readonly sessions = new Map<string, Set<string>>();
  private readonly queues = new Map<string, Waiter[]>();

  constructor(private readonly replies: Replies) {}

  apply(e: Entry): void {
    const { replies } = this;
    switch (e.t) {
      case 'session':
        this.sessions.set(e.id, new Set());
        return replies.answer(e.p, ok, JSON.stringify({ ID: e.id }));
      case 'destroy':
        for (const key of [...(this.sessions.get(e.id) ?? [])]) this.free(key);
        this.sessions.delete(e.id);
        return replies.answer(e.p, ok, 'true');
      case 'acquire':
        return this.acquire(e);
      case 'release': {
        const held = this.holders.get(e.key) === e.session;
        if (held) this.free(e.key);
        return replies.answer(e.p, ok, held ? 'true' : 'false');
      }
      case 'delete':
        this.free(e.key);
        return replies.answer(e.p, ok, 'true');
      case 'cancel': {
        const waiters = this.queues.get(e.key);
        const at = waiters?.findIndex((w) => w.p === e.p) ?? -1;
        if (at < 0) return;
        waiters!.splice(at, 1);
        if (waiters!.length === 0) this.queues.delete(e.key);
        return replies.answer(e.p, ok, 'false');
      }
    }
  }

  /** Locks held, sessions and waiters (for tests). */
  get size(): { locks: number; sessions: number; waiters: number } {
    let waiters = 0;
    for (const q of this.queues.values()) waiters += q.length;
    return { locks: this.holders.size, sessions: this.sessions.size, waiters };
  }

  private acquire(e: Extract<Entry, { t: 'acquire' }>): void {
    if (!this.sessions.has(e.session)) return this.replies.answer(e.p, badRequest, unknownSession);
    const holder = this.holders.get(e.key);
    if (holder === undefined || holder === e.session) {
      this.grant(e.key, e.session);
      return this.replies.answer(e.p, ok, 'true');
    }
    if (e.wait <= 0) return this.replies.answer(e.p, ok, 'false');
    const waiters = this.queues.get(e.key);
    if (waiters === undefined) this.queues.set(e.key, [{ session: e.session, p: e.p }]);
    else waiters.push({ session: e.session, p: e.p });
    this.replies.waiting(e.p, e.key, e.wait);
  }

  private grant(key: string, session: string): void {
    this.holders.set(key, session);
    this.sessions.get(session)!.add(key);
  }

  /** Frees `key` and hands it to the first waiter whose session still exists; waiters of gone sessions are refused. */
  private free(key: string): void {
    const holder = this.holders.get(key);
    if (holder === undefined) return;
    this.holders.delete(key);
    this.sessions.get(holder)?.delete(key);
    const waiters = this.queues.get(key);
    if (waiters === undefined) return;
    for (let w = waiters.shift(); w !== undefined; w = waiters.shift()) {
      if (!this.sessions.has(w.session)) {
        this.replies.answer(w.p, badRequest, unknownSession);
        continue;
      }
      this.grant(key, w.session);
      this.replies.answer(w.p, ok, 'true');
      break;
    }
    if (waiters.length === 0) this.queues.delete(key);
  }
}
