/**
 * Wake-ups for blocking queries. A waiter names what it watches (a key, a key prefix, the sessions
 * table, the catalog, one service name); after each applied batch the runtime reports what changed and
 * every waiter whose interest was touched is woken. The handler then re-reads and decides whether to answer.
 */
import { SystemClock, type Clock } from '../ports/clock.ts';
import { SlotSet } from '../util/slot-set.ts';
import type { StopSignal } from '../util/stop.ts';

export interface Touched {
  kvKeys: Set<string>;
  sessions: boolean;
  catalog: boolean;
  /** Service names whose index moved (state/apply/service-index.ts); always with `catalog`. */
  services: Set<string>;
}

export type Interest =
  | { kind: 'key'; key: string }
  | { kind: 'prefix'; prefix: string }
  | { kind: 'sessions' }
  | { kind: 'catalog' }
  /** One service name's index (RegistryState.serviceIndex): a change of another service does not wake it. */
  | { kind: 'service'; name: string };

interface Waiter {
  interest: Interest;
  wake: () => void;
  /** Its place in the set of its interest. */
  slot: number;
}

/**
 * Waiters are indexed by what they watch, so a change wakes its waiters without looking at the
 * others: a key's waiters by the key, a service's by its name, prefix waiters by prefix (each distinct
 * prefix is checked against the touched keys), and the sessions and catalog waiters as two sets. The
 * sets are SlotSets: every blocking query enters one and leaves it (see SlotSet for why not a Set).
 */
export class Watches {
  private readonly byKey = new Map<string, SlotSet<Waiter>>();
  private readonly byPrefix = new Map<string, SlotSet<Waiter>>();
  private readonly byService = new Map<string, SlotSet<Waiter>>();
  private readonly sessions = new SlotSet<Waiter>();
  private readonly catalog = new SlotSet<Waiter>();
  private count = 0;

  /** `clock` times the waits out. @default the system clock */
  constructor(private readonly clock: Clock = new SystemClock()) {}

  get size(): number {
    return this.count;
  }

  /** Resolves true when the interest is touched, false when `timeoutMs` passes or `signal` aborts first. */
  wait(interest: Interest, timeoutMs: number, signal?: StopSignal): Promise<boolean> {
    return new Promise((resolve) => {
      const done = (changed: boolean) => {
        this.clock.clearTimer(timer);
        this.remove(waiter);
        signal?.removeEventListener('abort', onAbort);
        resolve(changed);
      };
      const onAbort = () => done(false);
      const waiter: Waiter = { interest, wake: () => done(true), slot: -1 };
      const timer = this.clock.setTimer(Math.max(0, timeoutMs), () => done(false));
      this.setOf(interest, true)!.add(waiter);
      this.count += 1;
      signal?.addEventListener('abort', onAbort, { once: true });
    });
  }

  notify(t: Touched): void {
    const woken: Waiter[] = [];
    for (const k of t.kvKeys) this.byKey.get(k)?.copyInto(woken);
    if (t.kvKeys.size > 0) {
      for (const [prefix, ws] of this.byPrefix) {
        for (const k of t.kvKeys) {
          if (k.startsWith(prefix)) {
            ws.copyInto(woken);
            break;
          }
        }
      }
    }
    for (const name of t.services) this.byService.get(name)?.copyInto(woken);
    if (t.sessions) this.sessions.copyInto(woken);
    if (t.catalog) this.catalog.copyInto(woken);
    wakeInTurn(woken);
  }

  /** Wakes everyone (shutdown): each handler answers with what it has. */
  wakeAll(): void {
    const all: Waiter[] = [...this.sessions.list(), ...this.catalog.list()];
    for (const ws of this.byKey.values()) ws.copyInto(all);
    for (const ws of this.byPrefix.values()) ws.copyInto(all);
    for (const ws of this.byService.values()) ws.copyInto(all);
    wakeInTurn(all);
  }

  private setOf(i: Interest, create: boolean): SlotSet<Waiter> | undefined {
    switch (i.kind) {
      case 'sessions': return this.sessions;
      case 'catalog': return this.catalog;
      case 'key': return bucket(this.byKey, i.key, create);
      case 'prefix': return bucket(this.byPrefix, i.prefix, create);
      case 'service': return bucket(this.byService, i.name, create);
    }
  }

  private remove(w: Waiter): void {
    const set = this.setOf(w.interest, false);
    if (set === undefined || !set.delete(w)) return;
    this.count -= 1;
    if (set.size > 0) return;
    if (w.interest.kind === 'key') this.byKey.delete(w.interest.key);
    else if (w.interest.kind === 'prefix') this.byPrefix.delete(w.interest.prefix);
    else if (w.interest.kind === 'service') this.byService.delete(w.interest.name);
  }
}

function bucket(map: Map<string, SlotSet<Waiter>>, name: string, create: boolean): SlotSet<Waiter> | undefined {
  let set = map.get(name);
  if (set === undefined && create) map.set(name, (set = new SlotSet()));
  return set;
}

/**
 * Wakes each waiter in a turn of the event loop of its own (in this loop's check phase, right after the
 * write that woke them). Woken together, every waiter's query would read and render its answer before any
 * was sent, each answer's promise settling only after all had run: a thousand queries on a list of 10 MB
 * held 10 GB at once. In turns, each query's answer is written, or counted and held against the answer
 * budget (large-answers.ts), before the next one renders.
 */
function wakeInTurn(waiters: readonly Waiter[]): void {
  for (const w of waiters) setImmediate(w.wake);
}
