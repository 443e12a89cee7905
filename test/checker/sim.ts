/**
 * Seeded simulation of linearizable objects under concurrent clients, for the checker's self-tests:
 * every op takes effect at one instant inside its interval (or, when its answer is lost, at any later
 * instant or never), so the recorded history is linearizable by construction.
 */
import type { Op } from './history.ts';

export { mulberry32 } from '../../src/util/prng.ts';

export interface SimObject<O> {
  init(): O;
  /** The next op of `process` on `key`, knowing the object's value now (which may change before it applies). */
  gen(rng: () => number, process: string, key: string, now: O): { f: string; input: unknown };
  /** Applies an op at its instant: the new value and the op's output. */
  apply(obj: O, f: string, input: unknown): { obj: O; output: unknown };
  /** Called after `process` issued `op` (e.g. to start a new session after an invalidate). */
  issued?(process: string, f: string): void;
}

export interface SimOptions {
  processes: number;
  opsPerProcess: number;
  keys: string[];
  /** Share of ops whose answer is lost (half of them still take effect, possibly late). @default 0.05 */
  unknownRate?: number;
  /** Share of ops known not to have taken effect. @default 0.04 */
  failRate?: number;
}

interface Pending { atMs: number; seq: number; op: Op }

/** Runs the clients in call-time order, applying each effect at its instant; returns the history. */
export function simulate<O>(rng: () => number, obj: SimObject<O>, o: SimOptions): Op[] {
  const unknownRate = o.unknownRate ?? 0.05;
  const failRate = o.failRate ?? 0.04;
  const values = new Map<string, O>(o.keys.map((k) => [k, obj.init()]));
  const clients = Array.from({ length: o.processes }, (_, p) => ({ name: `c${p}`, atMs: rng() * 5, left: o.opsPerProcess }));
  const effects: Pending[] = [];
  const ops: Op[] = [];
  let seq = 0;
  const applyUntil = (t: number): void => {
    effects.sort((a, b) => a.atMs - b.atMs || a.seq - b.seq);
    while (effects.length > 0 && (effects[0] as Pending).atMs <= t) {
      const { op } = effects.shift() as Pending;
      const r = obj.apply(values.get(op.key) as O, op.f, op.input);
      values.set(op.key, r.obj);
      if (op.outcome === 'ok') op.output = r.output;
    }
  };
  for (;;) {
    const client = clients.filter((c) => c.left > 0).sort((a, b) => a.atMs - b.atMs)[0];
    if (client === undefined) break;
    applyUntil(client.atMs);
    const key = o.keys[Math.floor(rng() * o.keys.length)] as string;
    const { f, input } = obj.gen(rng, client.name, key, values.get(key) as O);
    const callMs = client.atMs;
    const durationMs = 0.2 + rng() * (rng() < 0.03 ? 60 : 8);
    const returnMs = callMs + durationMs;
    const op: Op = { id: ops.length, process: client.name, key, f, input, outcome: 'ok', callMs, returnMs };
    const r = rng();
    if (r < unknownRate) {
      op.outcome = 'unknown';
      delete op.returnMs;
      if (rng() < 0.5) effects.push({ atMs: callMs + rng() * durationMs * 4, seq: seq++, op });
    } else if (r < unknownRate + failRate) {
      op.outcome = 'fail';
    } else {
      effects.push({ atMs: callMs + rng() * durationMs, seq: seq++, op });
    }
    ops.push(op);
    obj.issued?.(client.name, f);
    client.atMs = returnMs + rng() * 2;
    client.left--;
  }
  applyUntil(Infinity);
  return ops;
}

/** A register of strings: unique written values, so a stale read is always detectable. */
export function registerObject(): SimObject<string | null> {
  let n = 0;
  return {
    init: () => null,
    gen(rng, process, _key, now) {
      const r = rng();
      if (r < 0.4) return { f: 'read', input: null };
      if (r < 0.7) return { f: 'write', input: `${process}.${n++}` };
      if (r < 0.95) return { f: 'cas', input: { from: rng() < 0.7 ? now : null, to: `${process}.${n++}` } };
      return { f: 'delete', input: null };
    },
    apply(obj, f, input) {
      switch (f) {
        case 'read': return { obj, output: obj };
        case 'write': return { obj: input as string, output: true };
        case 'delete': return { obj: null, output: true };
        default: {
          const c = input as { from: string | null; to: string };
          return obj === c.from ? { obj: c.to, output: true } : { obj, output: false };
        }
      }
    },
  };
}

export interface LockValue { holder: string | null; ended: ReadonlySet<string> }

/** A Consul-style lock; each client uses one session at a time and starts a new one after invalidating it. */
export function lockObject(): SimObject<LockValue> {
  const sessionOf = new Map<string, number>();
  const current = (p: string) => `${p}.s${sessionOf.get(p) ?? 0}`;
  return {
    init: () => ({ holder: null, ended: new Set() }),
    gen(rng, process) {
      const r = rng();
      if (r < 0.45) return { f: 'acquire', input: current(process) };
      if (r < 0.82) return { f: 'release', input: current(process) };
      if (r < 0.9) return { f: 'holder', input: null };
      return { f: 'invalidate', input: current(process) };
    },
    issued(process, f) {
      if (f === 'invalidate') sessionOf.set(process, (sessionOf.get(process) ?? 0) + 1);
    },
    apply(obj, f, input) {
      const s = input as string;
      switch (f) {
        case 'acquire': {
          if (obj.ended.has(s)) return { obj, output: false };
          if (obj.holder === s) return { obj, output: true };
          if (obj.holder !== null) return { obj, output: false };
          return { obj: { ...obj, holder: s }, output: true };
        }
        case 'release': return obj.holder === s ? { obj: { ...obj, holder: null }, output: true } : { obj, output: false };
        case 'holder': return { obj, output: obj.holder };
        default: return { obj: { holder: obj.holder === s ? null : obj.holder, ended: new Set([...obj.ended, s]) }, output: true };
      }
    },
  };
}
