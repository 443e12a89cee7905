/**
 * Sequential specifications for the linearizability checker: a CAS register (a KV key) and a mutex
 * (a Consul-style lock on a key held by a session).
 *
 * A model's `step` is deterministic. For an 'unknown' op it returns the state after the op TOOK EFFECT
 * (with whatever output is then legal); the search covers "did not take effect" by leaving the op out.
 * That is enough for these models because every op whose legal output can be "no effect" (a false cas,
 * a false acquire, a read) leaves the state unchanged, which is the same as leaving it out.
 * A malformed op (unknown `f`, wrong input type) throws: it is a bug in the test, not in the system.
 */
import type { Op } from './history.ts';

export interface Model<S> {
  name: string;
  init(): S;
  /** Next state when `op` (with its output for 'ok'; for 'unknown' the model chooses any legal output) applies to `s`, or undefined when illegal. */
  step(s: S, op: Op): S | undefined;
  /** Canonical string of a state, for the search's memo cache. */
  hash(s: S): string;
  /**
   * Optional: this model narrowed to one key's ops (fail ops excluded), e.g. with states that no op of the
   * history can tell apart merged into one. It must accept exactly the same orders of those ops.
   */
  forHistory?(ops: Op[]): Model<S>;
  /**
   * Optional: unknown ops with equal effect keys step every state alike, so the search tries one of them
   * where it could try any (all unknown ops invoked by a point stay available from then on).
   */
  effectKey?(op: Op): string;
}

function misuse(model: string, op: Op, what: string): never {
  throw new Error(`${model}: op #${op.id} ${op.f}(${JSON.stringify(op.input)}): ${what}`);
}

// ---------------------------------------------------------------------------------------------------
// CAS register

/** The register's value; null means absent (never written, or deleted). */
export type RegisterState = string | null;

function registerValue(op: Op, x: unknown): string | null {
  if (x === null || typeof x === 'string') return x;
  return misuse('casRegister', op, 'values are strings or null');
}

/**
 * A register of strings (null = absent), starting absent.
 * - `read`: output string|null (undefined counts as null) must equal the value;
 * - `write` (input string) and `delete` (a write of null): always legal, output ignored;
 * - `cas` (input {from: string|null, to: string}): output true iff the value was `from`, then it becomes `to`;
 *   output false means the value was not `from`, nothing changes.
 */
export const casRegister: Model<RegisterState> = {
  name: 'cas-register',
  forHistory: (ops) => registerForHistory(ops),
  effectKey: (op) => `${op.f}:${JSON.stringify(op.input)}`,
  init: () => null,
  step(s, op) {
    switch (op.f) {
      case 'read': {
        if (op.outcome !== 'ok') return s;
        return registerValue(op, op.output ?? null) === s ? s : undefined;
      }
      case 'write': return registerValue(op, op.input);
      case 'delete': return null;
      case 'cas': {
        const c = op.input as { from?: unknown; to?: unknown } | null;
        if (c === null || typeof c !== 'object' || !('from' in c)) misuse('casRegister', op, 'cas input is {from, to}');
        const from = registerValue(op, c.from);
        const to = registerValue(op, c.to);
        if (op.outcome !== 'ok') return s === from ? to : s;
        if (op.output === true) return s === from ? to : undefined;
        if (op.output === false) return s === from ? undefined : s;
        return misuse('casRegister', op, `cas output must be a boolean, got ${JSON.stringify(op.output)}`);
      }
      default: return misuse('casRegister', op, 'unknown operation (read, write, delete, cas)');
    }
  },
  hash: (s) => (s === null ? '∅' : `=${s}`),
};

/**
 * The register as one history sees it: a value that no op can observe (no ok read returned it, no cas
 * compares with it) behaves like any other such value, so every write of one writes a single stand-in.
 * The history's ops then cannot tell the two registers apart, and unknown writes of values nobody read
 * become interchangeable: a crashed writer whose write nobody saw costs the search almost nothing.
 */
function registerForHistory(ops: Op[]): Model<RegisterState> {
  const observed = new Set<string | null>([null]);
  for (const op of ops) {
    if (op.f === 'read' && op.outcome === 'ok' && typeof op.output === 'string') observed.add(op.output);
    if (op.f === 'cas' && op.input !== null && typeof op.input === 'object') observed.add((op.input as { from?: unknown }).from as string | null);
  }
  let unseen = '⊥unobserved';
  const values = new Set(ops.flatMap((op) => [op.input, op.output, (op.input as { to?: unknown } | null)?.to]));
  while (values.has(unseen)) unseen += '⊥';
  const canon = (v: unknown): unknown => (typeof v === 'string' && !observed.has(v) ? unseen : v);
  const narrowed = new WeakMap<Op, Op>();
  const narrow = (op: Op): Op => {
    let n = narrowed.get(op);
    if (n === undefined) {
      const c = op.input as { from?: unknown; to?: unknown } | null;
      const input = op.f === 'write' ? canon(op.input)
        : op.f === 'cas' && c !== null && typeof c === 'object' ? { from: c.from, to: canon(c.to) } : op.input;
      n = { ...op, input };
      narrowed.set(op, n);
    }
    return n;
  };
  return {
    name: casRegister.name,
    init: casRegister.init,
    step: (s, op) => casRegister.step(s, narrow(op)),
    hash: casRegister.hash,
    effectKey: (op) => casRegister.effectKey?.(narrow(op)) as string,
  };
}

// ---------------------------------------------------------------------------------------------------
// Mutex

export interface MutexState {
  /** Session holding the lock, or null when free. */
  readonly holder: string | null;
  /** Freed by invalidating its holder and not acquired since (only with `lockDelay`). */
  readonly delayed: boolean;
  /** Sessions that ended (sorted): their acquires are false from then on. */
  readonly ended: readonly string[];
  readonly h: string;
}

function mutexState(holder: string | null, delayed: boolean, ended: readonly string[]): MutexState {
  return { holder, delayed, ended, h: `${holder === null ? '∅' : `=${holder}`}${delayed ? '~' : ''}|${ended.join('\u0000')}` };
}

function session(op: Op): string {
  return typeof op.input === 'string' ? op.input : misuse('mutex', op, 'input is a session id string');
}

function insertSorted(xs: readonly string[], x: string): string[] {
  const out = [...xs, x];
  out.sort();
  return out;
}

export interface MutexOptions {
  /**
   * Consul's lock-delay: after an invalidation frees the lock, acquires of the free lock may be false
   * (for the delay, which the model cannot time) until one succeeds. A plain release starts no delay.
   * Prefer sessions with LockDelay 0 in tests; use this when the delay is part of the scenario.
   * @default false
   */
  lockDelay?: boolean;
}

/**
 * A lock on one key, held by sessions (Consul semantics):
 * - `acquire` (input session, output boolean): true when the lock is free and the session live (it becomes
 *   the holder) or when the session already holds it (re-acquire); false when another session holds it or
 *   the session has ended (and, with `lockDelay`, possibly while a delay after an invalidation runs);
 * - `release` (input session, output boolean): true iff the session holds it (then it is free);
 * - `invalidate` (input session, output ignored): the session ended (destroyed, TTL, node failure): its lock,
 *   if held, becomes free; its later acquires are false. Idempotent.
 * - `holder` (input ignored, output session|null): reads the current holder (e.g. GET of the key's Session).
 */
export function makeMutex(options: MutexOptions = {}): Model<MutexState> {
  const lockDelay = options.lockDelay ?? false;
  const expectOutput = (op: Op, legal: boolean, next: MutexState, s: MutexState): MutexState | undefined => {
    if (op.outcome !== 'ok') return legal ? next : s;
    if (typeof op.output !== 'boolean') misuse('mutex', op, `output must be a boolean, got ${JSON.stringify(op.output)}`);
    return op.output === legal ? (legal ? next : s) : undefined;
  };
  return {
    name: lockDelay ? 'mutex (lock-delay)' : 'mutex',
    init: () => mutexState(null, false, []),
    step(s, op) {
      switch (op.f) {
        case 'acquire': {
          const sess = session(op);
          if (s.ended.includes(sess)) return expectOutput(op, false, s, s);
          if (s.holder === sess) return expectOutput(op, true, s, s);
          if (s.holder !== null) return expectOutput(op, false, s, s);
          const next = mutexState(sess, false, s.ended);
          if (s.delayed && op.outcome === 'ok' && op.output === false) return s;
          return expectOutput(op, true, next, s);
        }
        case 'release': {
          const sess = session(op);
          return expectOutput(op, s.holder === sess, mutexState(null, false, s.ended), s);
        }
        case 'invalidate': {
          const sess = session(op);
          if (s.ended.includes(sess)) return s;
          const freed = s.holder === sess;
          return mutexState(freed ? null : s.holder, freed ? lockDelay : s.delayed, insertSorted(s.ended, sess));
        }
        case 'holder': {
          if (op.outcome !== 'ok') return s;
          const out = op.output ?? null;
          if (out !== null && typeof out !== 'string') misuse('mutex', op, 'holder output is a session id or null');
          return out === s.holder ? s : undefined;
        }
        default: return misuse('mutex', op, 'unknown operation (acquire, release, invalidate, holder)');
      }
    },
    hash: (s) => s.h,
    effectKey: (op) => `${op.f}:${JSON.stringify(op.input)}`,
  };
}

/** The mutex without lock-delay: an acquire of a free lock by a live session is always true. */
export const mutex: Model<MutexState> = makeMutex();
