/**
 * The plain clients: each runs one operation at a time at a random node — create a session (TTL
 * 10/15/20 s, release/delete, lock delay, bound to the gossip check or not), acquire, release, set,
 * CAS against the node's read, delete, destroy — with the real command shapes, and renews its sessions
 * every TTL/3 through random nodes until it walks away.
 */
import type { Command } from '../../src/domain/commands.ts';
import type { Runtime } from '../../src/runtime/index.ts';
import type { Result } from '../../src/state/index.ts';
import { nextValue, type SimNode, type SimWorld } from './sim-world.ts';

export const ttlChoicesMs = [10_000, 15_000, 20_000] as const;
const lockKeys = ['lock/a', 'lock/b', 'lock/c'] as const;
const dataKeys = ['data/x', 'data/y', 'data/z', 'lock/a'] as const;
const clientTimeoutMs = 6_000;

interface ClientSession {
  id: string;
  ttlMs: number;
  renewing: boolean;
}

export interface Client {
  name: string;
  sessions: ClientSession[];
}

/** An operation: its command (built when it reaches the node) and what follows its success. */
interface Op {
  build: (rt: Runtime) => Command;
  onOk: (result: Result) => void;
}

/** One client operation at a random node; the next starts when it settles or times out. */
export function clientStep(w: SimWorld, c: Client): void {
  if (!w.chaos) return;
  const p = w.prng;
  const target = w.nodes.get(p.pick(w.names))!;
  let settled = false;
  const next = () => {
    if (settled) return;
    settled = true;
    w.sched.after(p.int(20, 400), `client ${c.name}`, () => clientStep(w, c));
  };
  w.sched.after(clientTimeoutMs, `client ${c.name} timeout`, next);
  const op = chooseOp(w, c, target);
  w.counts.clientOps++;
  if (!target.up) { w.counts.refused++; next(); return; }
  w.sched.after(p.int(1, 20), `request ${c.name}→${target.name}`, () => {
    const rt = target.runtime!;
    const cmd = op.build(rt);
    rt.propose(cmd).then((result) => {
      w.checker.onAck(target.name, cmd, w.pidOf.get(cmd), result);
      if (result.ok) op.onOk(result);
      next();
    }, () => { w.counts.unknown++; next(); });
  }, target.name, target.inc);
}

function chooseOp(w: SimWorld, c: Client, target: SimNode): Op {
  const p = w.prng;
  const live = c.sessions;
  const r = p.next();
  if (live.length === 0 || (live.length < 3 && r < 0.12)) return createSession(w, c, target, live);
  const s = p.pick(live);
  const op = p.next();
  const none = () => {};
  if (op < 0.3) {
    const key = p.pick(lockKeys);
    const v = nextValue(w, c.name);
    return { build: () => ({ t: 'kv.acquire', key, value: v, flags: '0', session: s.id }), onOk: none };
  }
  if (op < 0.55) {
    const key = p.pick(lockKeys);
    const v = nextValue(w, c.name);
    return { build: () => ({ t: 'kv.release', key, value: v, flags: '0', session: s.id }), onOk: none };
  }
  if (op < 0.72) {
    const key = p.pick(dataKeys);
    const v = nextValue(w, c.name);
    return { build: () => ({ t: 'kv.set', key, value: v, flags: '0' }), onOk: none };
  }
  if (op < 0.86) {
    const key = p.pick(dataKeys);
    const v = nextValue(w, c.name);
    // A CAS against what this node has applied: a stale read loses, as it should.
    return { build: (rt) => ({ t: 'kv.cas', key, value: v, flags: '0', cas: String(rt.state.kv.get(key)?.modifyIndex ?? 0) }), onOk: none };
  }
  if (op < 0.92) {
    const key = p.pick(dataKeys);
    return { build: () => ({ t: 'kv.delete', key }), onOk: none };
  }
  return {
    build: () => ({ t: 'session.destroy', id: s.id }),
    onOk: () => { s.renewing = false; c.sessions = c.sessions.filter((x) => x !== s); },
  };
}

/** `live`: the client's session list as it is now (the session joins it, even if the client replaced the list meanwhile). */
function createSession(w: SimWorld, c: Client, target: SimNode, live: ClientSession[]): Op {
  const p = w.prng;
  const s: ClientSession = { id: `${c.name}-${p.hex(12)}`, ttlMs: p.pick(ttlChoicesMs), renewing: true };
  const withGossip = p.chance(0.5);
  const behavior = p.chance(0.7) ? 'release' as const : 'delete' as const;
  const lockDelayNs = p.pick([0, 0, 500e6, 2_000e6]);
  return {
    build: () => ({
      t: 'session.create', id: s.id, node: target.name, name: c.name, lockDelayNs, behavior,
      ttl: `${s.ttlMs / 1000}s`, ttlMs: s.ttlMs, nodeChecks: withGossip ? ['gossipHealth'] : [], serviceChecks: null,
    }),
    onOk: () => { live.push(s); renewLater(w, c, s); },
  };
}

/** A session's renew loop: every TTL/3 through a random node, until abandoned or gone. */
function renewLater(w: SimWorld, c: Client, s: ClientSession): void {
  const p = w.prng;
  w.sched.after(Math.floor(s.ttlMs / 3) + p.int(-500, 500), `renew ${s.id}`, () => {
    if (!w.chaos || !s.renewing) return;
    if (p.chance(0.08)) { s.renewing = false; return; } // the client walks away: the TTL must end it
    const target = w.nodes.get(p.pick(w.names))!;
    if (!target.up) { w.counts.refused++; renewLater(w, c, s); return; }
    w.sched.after(p.int(1, 20), `renew ${s.id}→${target.name}`, () => {
      const cmd: Command = { t: 'session.renew', id: s.id };
      target.runtime!.propose(cmd).then((result) => {
        w.checker.onAck(target.name, cmd, w.pidOf.get(cmd), result);
        if (!result.ok && result.reason === 'session-not-found') {
          s.renewing = false;
          c.sessions = c.sessions.filter((x) => x !== s);
        }
      }, () => {});
    }, target.name, target.inc);
    renewLater(w, c, s);
  });
}
