/**
 * The load of the kill scenarios: six clients (two per node) acquiring and releasing contended locks
 * with sessions they renew and give up when their answers cannot be trusted, now and then a register
 * write or compare-and-set, every op recorded in one history; and the nemesis that kills a node or the
 * stream leader's nats-server while they run.
 */
import { HistoryRecorder, type OpHandle } from '../checker/history.ts';
import { ProtectedResource } from '../checker/fencing.ts';
import {
  errorCode, http, indexOf, rng, sleep, verdictOf, type Answer, type FaultCluster, type RosterNode,
} from './cluster-harness.ts';
import type { Indexed, RegisterWrite } from './cluster-kill-checks.ts';

export const lockKeys = ['faults/lock/a', 'faults/lock/b', 'faults/lock/c'];
export const registerKeys = ['faults/reg/x', 'faults/reg/y'];
/** Session TTL of the load's clients: a session is invalidated no earlier than this after its last renew. */
const ttlMs = 20_000;
/** A client gives its session up when no renew succeeded for TTL minus this (its lease may lapse after). */
const ttlMarginMs = 4_000;
const renewEveryMs = 1_000;
/** One request's deadline: a leader election of the stream (seconds) fits in it; past it, the op is unknown. */
export const requestTimeoutMs = 10_000;
/** How long a retired session's destroy is retried. */
const destroyTryMs = 60_000;

export const history = new HistoryRecorder();
export const now = (): number => performance.now();

// ---- indexes --------------------------------------------------------------------------------

/** Every answer that carried an index, for the regression check. */
export const indexed: Indexed[] = [];

function noteIndex(what: string, key: string, callMs: number, a: Answer, write: boolean): void {
  const index = indexOf(a);
  if (index !== undefined && Number.isFinite(index)) indexed.push({ what, key, callMs, returnMs: now(), index, write });
}

// ---- register ops ---------------------------------------------------------------------------

export const decode = (a: Answer): string | null => {
  const v = a.json<{ Value: string | null }[]>()[0]?.Value ?? null;
  return v === null ? null : Buffer.from(v, 'base64').toString();
};

/** Values of acknowledged and unknown register writes, to check the final values. */
export const registerWrites: RegisterWrite[] = [];

export async function consistentRead(process: string, node: RosterNode, key: string): Promise<{ value: string | null; index: number } | undefined> {
  const h = history.invoke(process, key, 'read', null);
  const callMs = now();
  const a = await http(node.url, 'GET', `/v1/kv/${key}?consistent`, { timeoutMs: requestTimeoutMs });
  if (a.status === 200 || (a.status === 404 && errorCode(a) === 1006)) {
    const value = a.status === 200 ? decode(a) : null;
    h.ok(value);
    const index = a.status === 200 ? a.json<{ ModifyIndex: number }[]>()[0]!.ModifyIndex : 0;
    if (a.status === 200) indexed.push({ what: `read by ${process}`, key, callMs, returnMs: now(), index, write: false });
    return { value, index };
  }
  if (verdictOf(a) === 'invalid') h.fail(); else h.unknown();
  return undefined;
}

export async function registerOp(c: Client, key: string): Promise<void> {
  const value = `${c.id}-${++c.seq}`;
  if (c.rand() < 0.5) {
    const h = history.invoke(c.id, key, 'write', value);
    const w = { key, value, callMs: now(), acked: false, returnMs: undefined as number | undefined };
    registerWrites.push(w);
    const a = await http(c.node.url, 'PUT', `/v1/kv/${key}`, { body: value, timeoutMs: requestTimeoutMs });
    settleWrite(h, a, w, `write by ${c.id}`);
    return;
  }
  const read = await consistentRead(c.id, c.node, key);
  if (read === undefined) return;
  const h = history.invoke(c.id, key, 'cas', { from: read.value, to: value });
  const w = { key, value, callMs: now(), acked: false, returnMs: undefined as number | undefined };
  registerWrites.push(w);
  const a = await http(c.node.url, 'PUT', `/v1/kv/${key}?cas=${read.index}`, { body: value, timeoutMs: requestTimeoutMs });
  if (a.status === 409) { h.ok(false); c.counts.refused++; return; }
  settleWrite(h, a, w, `cas by ${c.id}`);
}

function settleWrite(h: OpHandle, a: Answer, w: RegisterWrite, what: string): void {
  const v = verdictOf(a);
  if (v === 'ok' && a.text === 'true') {
    h.ok(true);
    w.acked = true;
    w.returnMs = now();
    noteIndex(what, w.key, w.callMs, a, true);
    counts.ok++;
  } else if (v === 'invalid') { h.fail(); counts.fail++; } else { h.unknown(); counts.unknown++; }
}

// ---- lock clients ---------------------------------------------------------------------------

interface Session {
  id: string;
  /** performance.now() when the last successful renew (or the create) was invoked. */
  renewedAt: number;
  retired: boolean;
  /**
   * Set for a session the server may have ended at any moment since this time (its create's call): its
   * `invalidate` ops are recorded as invoked then, whenever retire() records them.
   */
  endableFromMs?: number;
}

/**
 * How long after a node's restart a failure report about its previous run may still commit: the others
 * notice the kill after the gossip suspicion (the harness's 4 s), confirm it for 2 s, then propose, and the
 * node may be back before that report commits. The report turns the node's gossip check critical, which
 * ends every session bound to it, including one created on the node since its restart (the server applies
 * a check status as reported, as Consul does with serfHealth). Such a session may therefore have ended at
 * any moment since its creation: its `invalidate` ops, recorded when it is given up, are dated from then.
 */
const lateFailureReportMs = 12_000;

export const counts = { pairs: 0, acquired: 0, ok: 0, refused: 0, fail: 0, unknown: 0, retired: 0, retiredObserved: 0, destroyed: 0 };
/** Every holder writes to the protected resource with its token right after its acquire answered true. */
export const fenced = new ProtectedResource(true);
/** The same writes, unfenced: reported, not asserted (a holder whose lease lapsed mid-hold may show here). */
export const unfenced = new ProtectedResource(false);
/** Background destroys of retired sessions: awaited before the check. */
export const destroys: Promise<void>[] = [];

export class Client {
  session: Session | undefined;
  seq = 0;
  counts = counts;
  stopped = false;
  private renewer: Promise<void> | undefined;

  constructor(readonly id: string, readonly node: RosterNode, readonly rand: () => number) {}

  /**
   * Gives the session up: from now on the model may end it at any time (an `invalidate` op per lock key
   * invoked now), and it is destroyed in the background; the `invalidate` ops are ok once the destroy
   * answered true (the session is gone by then), else unknown. Called when the node is killed, when a
   * request had no trustworthy answer, when the lease may lapse, or when the server said the session is gone.
   */
  retire(why: 'node-killed' | 'unknown-answer' | 'lease' | 'observed-gone'): void {
    const s = this.session;
    if (s === undefined || s.retired) return;
    s.retired = true;
    this.session = undefined;
    counts.retired++;
    if (why === 'observed-gone') counts.retiredObserved++;
    const handles = lockKeys.map((key) => history.invoke(this.id, key, 'invalidate', s.id, s.endableFromMs));
    destroys.push((async () => {
      const deadline = Date.now() + destroyTryMs;
      while (Date.now() < deadline) {
        const a = await http(this.node.url, 'PUT', `/v1/session/destroy/${s.id}`, { timeoutMs: requestTimeoutMs });
        if (a.status === 200) {
          for (const h of handles) h.ok(true);
          counts.destroyed++;
          return;
        }
        await sleep(500);
      }
      for (const h of handles) h.unknown();
    })());
  }

  private async ensureSession(): Promise<Session | undefined> {
    const s = this.session;
    if (s !== undefined && now() - s.renewedAt < ttlMs - ttlMarginMs) return s;
    if (s !== undefined) this.retire('lease');
    const callMs = now();
    const stops = this.node.stops;
    const a = await http(this.node.url, 'PUT', '/v1/session/create', { body: { Name: this.id, LockDelay: '0s', TTL: `${ttlMs / 1000}s` }, timeoutMs: requestTimeoutMs });
    if (a.status !== 200) { await sleep(200); return undefined; }
    this.session = { id: a.json<{ ID: string }>().ID, renewedAt: callMs, retired: false };
    // Created soon after the node's restart: a late failure report about its previous run may end it.
    if (callMs - this.node.restartedAtMs < lateFailureReportMs) this.session.endableFromMs = callMs;
    // Created on a node killed meanwhile: its gossipHealth may end it at any time, as for the others.
    if (this.node.stops !== stops) { this.retire('node-killed'); return undefined; }
    this.renewer ??= this.renewLoop();
    return this.session;
  }

  private async renewLoop(): Promise<void> {
    while (!this.stopped) {
      await sleep(renewEveryMs);
      const s = this.session;
      if (s === undefined) continue;
      const callMs = now();
      const a = await http(this.node.url, 'PUT', `/v1/session/renew/${s.id}`, { timeoutMs: requestTimeoutMs });
      if (s !== this.session) continue;
      if (a.status === 200) s.renewedAt = callMs;
      else if (a.status === 404) this.retire('observed-gone');
    }
  }

  /** One lock op with its history record; returns the verdict and the answer. */
  private async lockOp(f: 'acquire' | 'release', key: string, s: Session): Promise<'true' | 'false' | 'gone' | 'unknown'> {
    const h = history.invoke(this.id, key, f, s.id);
    const callMs = now();
    const a = await http(this.node.url, 'PUT', `/v1/kv/${key}?${f}=${s.id}`, { body: this.id, timeoutMs: requestTimeoutMs });
    const v = verdictOf(a);
    if (v === 'ok' && a.text === 'true') {
      h.ok(true);
      counts.ok++;
      noteIndex(`${f} by ${this.id}`, key, callMs, a, true);
      if (f === 'acquire') {
        counts.acquired++;
        // The fencing token is the index of the entry that applied the acquire.
        const token = indexOf(a);
        if (token !== undefined) { fenced.write(this.id, key, token); unfenced.write(this.id, key, token); }
      }
      return 'true';
    }
    if (v === 'refused') { h.ok(false); counts.refused++; return 'false'; }
    if (v === 'invalid') {
      h.fail();
      counts.fail++;
      if (errorCode(a) === 1007) { this.retire('observed-gone'); return 'gone'; }
      throw new Error(`${f} ${key} by ${this.id}: unexpected ${a.status} ${a.text}`);
    }
    if (a.error?.includes('ECONNREFUSED')) { h.fail(); counts.fail++; } else { h.unknown(); counts.unknown++; }
    this.retire('unknown-answer');
    return 'unknown';
  }

  /** Acquire (retrying a refusal with a small backoff), hold briefly, release. */
  private async lockPair(key: string): Promise<void> {
    for (let attempt = 0; attempt < 200 && !this.stopped; attempt++) {
      const s = await this.ensureSession();
      if (s === undefined) return;
      const got = await this.lockOp('acquire', key, s);
      if (got === 'gone' || got === 'unknown') return;
      if (got === 'false') { await sleep(2 + this.rand() * 15); continue; }
      await sleep(2 + this.rand() * 15);
      if (s.retired) return;
      const released = await this.lockOp('release', key, s);
      if (released === 'true') counts.pairs++;
      return;
    }
  }

  async run(stop: () => boolean): Promise<void> {
    try {
      while (!stop()) {
        if (!this.node.running()) { this.retire('node-killed'); await sleep(200); continue; }
        if (this.rand() < 0.15) {
          await registerOp(this, registerKeys[Math.floor(this.rand() * registerKeys.length)]!);
        } else {
          await this.lockPair(lockKeys[Math.floor(this.rand() * lockKeys.length)]!);
        }
        await sleep(this.rand() * 10);
      }
    } finally {
      this.stopped = true;
      await this.renewer;
    }
  }
}

// ---- nemesis --------------------------------------------------------------------------------

export interface Fault { atMs: number; kind: 'kill-node' | 'kill-nats-leader'; target: string; downMs: number; restartedMs?: number }

/** Roster nodes the nemesis is keeping down (the supervisor leaves them alone). */
export const keptDown = new Set<string>();

/** The nemesis's seed, the fewest kills it makes, and their order (`random` or `nodes-first`). */
export interface NemesisPlan { seed: number; minKills: number; order: string }

/** Every 15–25 s (seeded) SIGKILLs a random Roster node or the stream leader's nats-server and starts it again 3–5 s later. */
export async function nemesis(cluster: FaultCluster, clients: Client[], stop: () => boolean, faults: Fault[], plan: NemesisPlan): Promise<void> {
  const draw = rng(plan.seed);
  while (!stop()) {
    const waitMs = 15_000 + draw() * 10_000;
    for (const until = Date.now() + waitMs; Date.now() < until && !stop();) await sleep(200);
    if (stop()) return;
    const downMs = 3_000 + draw() * 2_000;
    let killNode = draw() < 0.5;
    // Random order still does both kinds within the fewest kills: the last of them is the kind not done yet.
    const kinds = new Set(faults.map((f) => f.kind));
    if (faults.length === plan.minKills - 1 && kinds.size === 1) killNode = !kinds.has('kill-node');
    if (plan.order === 'random' ? killNode : faults.length < Math.ceil(plan.minKills / 2)) {
      const victim = cluster.nodes[Math.floor(draw() * cluster.nodes.length)]!;
      const fault: Fault = { atMs: now(), kind: 'kill-node', target: victim.name, downMs };
      faults.push(fault);
      // Its clients' sessions may end from now on (gossipHealth goes critical): say so before the kill.
      for (const c of clients.filter((x) => x.node === victim)) c.retire('node-killed');
      keptDown.add(victim.name);
      try {
        await victim.kill();
        await sleep(downMs);
        await victim.start();
      } finally {
        keptDown.delete(victim.name);
      }
      fault.restartedMs = now();
    } else {
      const leader = await cluster.streamLeader() ?? cluster.nats[Math.floor(draw() * 3)]!.name;
      const fault: Fault = { atMs: now(), kind: 'kill-nats-leader', target: leader, downMs };
      faults.push(fault);
      const server = cluster.natsNode(leader);
      await server.kill();
      await sleep(downMs);
      await server.start();
      fault.restartedMs = now();
    }
    console.log(`[faults] ${faults.at(-1)!.kind} ${faults.at(-1)!.target} down ${Math.round(downMs)} ms; pairs so far ${counts.pairs}`);
  }
}
