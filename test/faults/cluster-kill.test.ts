// Goal (issue 9, process faults, part 1): a three-node cluster under a lock and register load keeps its
// promises while a nemesis SIGKILLs a Roster node or the stream leader's nats-server every ~20 s and starts
// it again a few seconds later: ≥ 2,000 acquire/release pairs by 6 clients (2 per node) with 0
// mutual-exclusion violations (the mutex history of every lock key is linearizable and a fenced resource
// fed every holder's write with its fencing token checks valid), the register history linearizable, no
// acknowledged write lost and no index going backwards. Then: losing 2 of 3 nodes leaves a survivor that
// answers 503 or times out, never a false success; a full-cluster crash and restart loses nothing
// acknowledged and indexes keep growing.
//
// Knobs: ROSTER_FAULT_PAIRS (default 2000), ROSTER_FAULT_KILLS (fewest kills before the load may stop,
// default 4), ROSTER_FAULT_MINUTES (time cap of the load, default 4), ROSTER_FAULT_SEED (nemesis seed,
// printed), ROSTER_FAULT_ORDER (`random`, the default: each fault is either kind; `nodes-first`: the first
// half of the ROSTER_FAULT_KILLS faults kill Roster nodes, the rest the stream leader's nats-server).
// On a failure the history is saved as JSON and its path printed.
//
// A node that stops by itself (exit 70: it found the stream changed under it, see cluster/jetstream-log.ts)
// is started again by the harness's supervisor, as in production; the run prints how many did. Such a
// divergence once made a node restarted after a leader kill number the log one lower than the others
// (seed 103878333, 1 run in 8, before proposers were answered only after their commit was confirmed where
// it was read); that seed now passes in random order.
import { writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, test } from 'vitest';
import { HistoryRecorder, type Op, type OpHandle } from '../checker/history.ts';
import { checkLinearizable, formatOp, type Report } from '../checker/linearizability.ts';
import { casRegister, mutex } from '../checker/models.ts';
import { ProtectedResource, checkFencing } from '../checker/fencing.ts';
import { mutualExclusion } from '../checker/mutex-intervals.ts';
import {
  FaultCluster, errorCode, faultKnobs, http, indexOf, rng, sleep, verdictOf, type Answer, type RosterNode,
} from './cluster-harness.ts';

const knobs = faultKnobs();
const minKills = Number(process.env.ROSTER_FAULT_KILLS ?? 4);
const faultOrder = process.env.ROSTER_FAULT_ORDER ?? 'random';
if (faultOrder !== 'random' && faultOrder !== 'nodes-first') throw new Error(`ROSTER_FAULT_ORDER: "${faultOrder}" is not random or nodes-first`);
const lockKeys = ['faults/lock/a', 'faults/lock/b', 'faults/lock/c'];
const registerKeys = ['faults/reg/x', 'faults/reg/y'];
/** Session TTL of the load's clients: a session is invalidated no earlier than this after its last renew. */
const ttlMs = 20_000;
/** A client gives its session up when no renew succeeded for TTL minus this (its lease may lapse after). */
const ttlMarginMs = 4_000;
const renewEveryMs = 1_000;
/** One request's deadline: a leader election of the stream (seconds) fits in it; past it, the op is unknown. */
const requestTimeoutMs = 10_000;
/** How long a retired session's destroy is retried. */
const destroyTryMs = 60_000;
const checkerBudgetMs = 60_000;

let cluster: FaultCluster;
const history = new HistoryRecorder();
const now = () => performance.now();

beforeAll(async () => {
  console.log(`[faults] seed=${knobs.seed} pairs=${knobs.pairs} minKills=${minKills} minutes=${knobs.minutes}`);
  cluster = await FaultCluster.start();
}, 180_000);

/** Set when nodes disagree: the stores (nats-servers' streams, data dirs) are kept for a post-mortem. */
let keepStores = false;

afterAll(async () => {
  await cluster?.shutdown(keepStores);
  if (keepStores) console.log(`[faults] nats-server stores and data dirs kept in ${cluster.root}`);
});

/** Saves the history (and every node's and nats-server's output next to it); returns the history's path. */
function saveHistory(tag: string, extra: Record<string, unknown> = {}): string {
  const path = join(tmpdir(), `roster-faults-${tag}-${knobs.seed}-${Date.now()}.json`);
  writeFileSync(path, JSON.stringify({ seed: knobs.seed, ...extra, history: history.toJSON() }));
  for (const n of cluster.nodes) writeFileSync(`${path}.${n.name}.log`, n.output());
  for (const s of cluster.nats) writeFileSync(`${path}.nats-${s.name}.log`, s.output());
  return path;
}

/**
 * Every node shows the same entries under `prefix` (key, value, session, LockIndex, ModifyIndex) and gives a
 * fresh write the same ModifyIndex: equal state at equal index. Returns the disagreements.
 */
async function divergence(prefix: string): Promise<string[]> {
  const out: string[] = [];
  const probe = `${prefix}probe`;
  const w = await http(cluster.nodes[0]!.url, 'PUT', `/v1/kv/${probe}`, { body: String(Date.now()), timeoutMs: requestTimeoutMs });
  if (w.status !== 200) return [`probe write: ${w.status} ${w.error ?? w.text}`];
  const views = await Promise.all(cluster.nodes.map(async (n) => {
    const a = await http(n.url, 'GET', `/v1/kv/${prefix}?recurse&consistent`, { timeoutMs: requestTimeoutMs });
    if (a.status !== 200) return { node: n.name, entries: new Map<string, string>(), error: `${a.status} ${a.error ?? a.text}` };
    const entries = a.json<{ Key: string; Value: string | null; Session?: string; LockIndex: number; ModifyIndex: number }[]>();
    return { node: n.name, entries: new Map(entries.map((e) => [e.Key, `${e.Value}|${e.Session ?? ''}|${e.LockIndex}|${e.ModifyIndex}`])), error: undefined };
  }));
  const [first, ...rest] = views;
  for (const v of views) if (v.error !== undefined) out.push(`${v.node}: ${v.error}`);
  const probeIndex = indexOf(w);
  for (const v of views) {
    const mine = v.entries.get(probe)?.split('|')[3];
    if (mine !== String(probeIndex)) out.push(`${v.node}: the probe written at index ${probeIndex} has ModifyIndex ${mine}`);
  }
  for (const v of rest) {
    for (const key of new Set([...first!.entries.keys(), ...v.entries.keys()])) {
      if (key === probe) continue;
      const a = first!.entries.get(key);
      const b = v.entries.get(key);
      if (a !== b) out.push(`${key}: ${first!.node} ${a ?? 'absent'} vs ${v.node} ${b ?? 'absent'}`);
    }
  }
  return out;
}

// ---- indexes --------------------------------------------------------------------------------

interface Indexed { what: string; key: string; callMs: number; returnMs: number; index: number; write: boolean }
const indexed: Indexed[] = [];

/**
 * Indexes never go backwards: a write that was invoked after another write returned has a larger index
 * (the log position of its entry), and a ?consistent read of a key shows at least the index of every
 * write to that key and every read of it that returned before the read was invoked.
 */
function indexRegressions(list: Indexed[]): string[] {
  const out: string[] = [];
  const byCall = [...list].sort((a, b) => a.callMs - b.callMs);
  const byReturn = [...list].sort((a, b) => a.returnMs - b.returnMs);
  let k = 0;
  let maxWrite: Indexed | undefined;
  const maxPerKey = new Map<string, Indexed>();
  for (const op of byCall) {
    while (k < byReturn.length && byReturn[k]!.returnMs < op.callMs) {
      const done = byReturn[k++]!;
      if (done.write && (maxWrite === undefined || done.index > maxWrite.index)) maxWrite = done;
      const m = maxPerKey.get(done.key);
      if (m === undefined || done.index > m.index) maxPerKey.set(done.key, done);
    }
    if (op.write && maxWrite !== undefined && op.index <= maxWrite.index) {
      out.push(`${op.what} index ${op.index} after ${maxWrite.what} returned ${maxWrite.index}`);
    }
    const m = maxPerKey.get(op.key);
    if (!op.write && m !== undefined && op.index < m.index) out.push(`${op.what} on ${op.key} index ${op.index} after ${m.what} returned ${m.index}`);
  }
  return out;
}

function noteIndex(what: string, key: string, callMs: number, a: Answer, write: boolean): void {
  const index = indexOf(a);
  if (index !== undefined && Number.isFinite(index)) indexed.push({ what, key, callMs, returnMs: now(), index, write });
}

// ---- register ops ---------------------------------------------------------------------------

const decode = (a: Answer): string | null => {
  const v = a.json<{ Value: string | null }[]>()[0]?.Value ?? null;
  return v === null ? null : Buffer.from(v, 'base64').toString();
};

/** Values of acknowledged and unknown register writes, to check the final values. */
const registerWrites: { key: string; value: string; callMs: number; returnMs?: number; acked: boolean }[] = [];

async function consistentRead(process: string, node: RosterNode, key: string): Promise<{ value: string | null; index: number } | undefined> {
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

async function registerOp(c: Client, key: string): Promise<void> {
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

function settleWrite(h: OpHandle, a: Answer, w: (typeof registerWrites)[number], what: string): void {
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
}

const counts = { pairs: 0, acquired: 0, ok: 0, refused: 0, fail: 0, unknown: 0, retired: 0, retiredObserved: 0, destroyed: 0 };
/** Every holder writes to the protected resource with its token right after its acquire answered true. */
const fenced = new ProtectedResource(true);
/** The same writes, unfenced: reported, not asserted (a holder whose lease lapsed mid-hold may show here). */
const unfenced = new ProtectedResource(false);
/** Background destroys of retired sessions: awaited before the check. */
const destroys: Promise<void>[] = [];

class Client {
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
    const handles = lockKeys.map((key) => history.invoke(this.id, key, 'invalidate', s.id));
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

interface Fault { atMs: number; kind: 'kill-node' | 'kill-nats-leader'; target: string; downMs: number; restartedMs?: number }

/** Roster nodes the nemesis is keeping down (the supervisor leaves them alone). */
const keptDown = new Set<string>();

async function nemesis(clients: Client[], stop: () => boolean, faults: Fault[]): Promise<void> {
  const draw = rng(knobs.seed);
  while (!stop()) {
    const waitMs = 15_000 + draw() * 10_000;
    for (const until = Date.now() + waitMs; Date.now() < until && !stop();) await sleep(200);
    if (stop()) return;
    const downMs = 3_000 + draw() * 2_000;
    let killNode = draw() < 0.5;
    // Random order still does both kinds within the fewest kills: the last of them is the kind not done yet.
    const kinds = new Set(faults.map((f) => f.kind));
    if (faults.length === minKills - 1 && kinds.size === 1) killNode = !kinds.has('kill-node');
    if (faultOrder === 'random' ? killNode : faults.length < Math.ceil(minKills / 2)) {
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

// ---- checks ---------------------------------------------------------------------------------

function summarize(name: string, r: Report): string {
  const bad = r.keys.filter((k) => k.valid !== true).map((k) => k.valid === false
    ? `${k.key}: ${k.reason}\n    ${k.witness.map(formatOp).join('\n    ')}`
    : `${k.key}: ${k.reason}`);
  return `${name}: valid=${r.valid} ops=${r.ops} unknown=${r.unknownOps} fail=${r.failOps} ${Math.round(r.elapsedMs)} ms${bad.length > 0 ? `\n  ${bad.join('\n  ')}` : ''}`;
}

/**
 * Final values: each register key ends with a value some write put there, and no acknowledged write was
 * overwritten only by nothing: the final value is the value of an acknowledged write that no other
 * acknowledged write followed in real time, or of a write whose answer was unknown.
 */
function lostWrites(finals: Map<string, string | null>): string[] {
  const out: string[] = [];
  for (const key of registerKeys) {
    const writes = registerWrites.filter((w) => w.key === key);
    const acked = writes.filter((w) => w.acked);
    if (acked.length === 0) continue;
    const final = finals.get(key) ?? null;
    const w = writes.find((x) => x.value === final);
    if (w === undefined) { out.push(`${key}: final value ${JSON.stringify(final)} was never written (acknowledged: ${acked.length})`); continue; }
    if (!w.acked) continue;
    const later = acked.find((x) => x.callMs > w.returnMs!);
    if (later !== undefined) out.push(`${key}: final value ${final} (acknowledged) but ${later.value}, written after it, was acknowledged too`);
  }
  return out;
}

describe.sequential('process faults against a three-node cluster', () => {
  test('lock and register load while a node or the stream leader\'s nats-server is SIGKILLed every ~20 s', async () => {
    const startMs = Date.now();
    const capMs = knobs.minutes * 60_000;
    const clients = cluster.nodes.flatMap((n, k) => [0, 1].map((j) => new Client(`c${2 * k + j + 1}`, n, rng(knobs.seed + 1 + 2 * k + j))));
    const faults: Fault[] = [];
    let capped = false;
    /** The first error of a client or the nemesis: it stops everyone (no loop is left running), then fails the test. */
    let aborted: unknown;
    const stop = () => {
      if (Date.now() - startMs > capMs) capped = true;
      return aborted !== undefined || capped || (counts.pairs >= knobs.pairs && faults.length >= minKills && faults.at(-1)!.restartedMs !== undefined);
    };
    const abortOnError = (p: Promise<void>) => p.catch((err: unknown) => { aborted ??= err; });
    // A node that stops by itself (exit 70: the stream changed under it) is started again, as in production.
    const stopSupervising = cluster.supervise((n) => keptDown.has(n.name));
    await Promise.all([nemesis(clients, stop, faults), ...clients.map((c) => c.run(stop))].map(abortOnError));
    const selfStops = await stopSupervising();
    if (aborted !== undefined) throw aborted;
    const loadMs = Date.now() - startMs;

    await cluster.heal();
    await Promise.all(destroys);
    // Final reads with ?consistent through every node, recorded in the history like any read.
    const finals = new Map<string, string | null>();
    for (const key of registerKeys) {
      for (const n of cluster.nodes) {
        const r = await consistentRead(`final-${n.name}`, n, key);
        expect(r, `final read of ${key} through ${n.name}`).toBeDefined();
        finals.set(key, r!.value);
      }
    }

    const diverged = await divergence('faults/reg/');
    if (diverged.length > 0) keepStores = true;

    const ops = history.ops();
    const lockOps = ops.filter((op) => lockKeys.includes(op.key));
    const regOps = ops.filter((op) => registerKeys.includes(op.key));
    const locks = checkLinearizable(lockOps, mutex, { budgetMs: checkerBudgetMs });
    const registers = checkLinearizable(regOps, casRegister, { budgetMs: checkerBudgetMs });
    const fencing = checkFencing(fenced.writes());
    const unfencedReport = checkFencing(unfenced.writes());
    const overlaps = mutualExclusion(lockOps);
    const lost = lostWrites(finals);
    const regressions = indexRegressions(indexed);
    const outcome = (list: Op[]) => ({
      ok: list.filter((o) => o.outcome === 'ok' && o.output !== false).length,
      false: list.filter((o) => o.outcome === 'ok' && o.output === false).length,
      fail: list.filter((o) => o.outcome === 'fail').length,
      unknown: list.filter((o) => o.outcome === 'unknown').length,
    });
    console.log(`[faults] load ${Math.round(loadMs / 1000)} s seed=${knobs.seed}: pairs=${counts.pairs} acquired=${counts.acquired} `
      + `kills=${faults.length} (${faults.map((f) => `${f.kind}:${f.target}`).join(', ')}); nodes that stopped by themselves and were restarted: ${selfStops.length === 0 ? 'none' : selfStops.join(', ')}\n`
      + `  lock ops ${JSON.stringify(outcome(lockOps))}; register ops ${JSON.stringify(outcome(regOps))}\n`
      + `  sessions retired=${counts.retired} (observed gone ${counts.retiredObserved}) destroyed=${counts.destroyed}\n`
      + `  ${summarize('mutex', locks)}\n  ${summarize('registers', registers)}\n`
      + `  fencing: valid=${fencing.valid} writes=${fencing.writes} rejected=${fencing.rejected} violations=${fencing.violations.length} `
      + `shared tokens=${fencing.sharedTokens.length}; unfenced violations=${unfencedReport.violations.length}; definite overlaps=${overlaps.overlaps.length}\n`
      + `  indexes checked=${indexed.length} regressions=${regressions.length}; lost writes=${lost.length}; nodes disagreeing after healing: ${diverged.length}`
      + `${regressions.length > 0 ? `\n  first regressions: ${regressions.slice(0, 5).join('; ')}` : ''}${diverged.length > 0 ? `\n  disagreements: ${diverged.slice(0, 5).join('; ')}` : ''}`);
    const failed = diverged.length > 0 || capped || locks.valid !== true || registers.valid !== true || !fencing.valid || !overlaps.valid || lost.length > 0 || regressions.length > 0;
    if (failed) console.log(`[faults] history saved to ${saveHistory('kill', { counts, faults, indexed, regressions, lost, diverged })}`);
    expect(capped, `time cap of ${knobs.minutes} min passed first: ${JSON.stringify(counts)}, kills ${faults.length}`).toBe(false);
    expect(counts.pairs).toBeGreaterThanOrEqual(knobs.pairs);
    expect(faults.length).toBeGreaterThanOrEqual(minKills);
    expect(locks.valid, summarize('mutex', locks)).toBe(true);
    expect(registers.valid, summarize('registers', registers)).toBe(true);
    expect(fencing.writes, 'every successful acquire carried its fencing token (X-Consul-Index)').toBe(counts.acquired);
    expect(fencing.violations).toEqual([]);
    expect(fencing.sharedTokens).toEqual([]);
    expect(overlaps.overlaps).toEqual([]);
    expect(lost).toEqual([]);
    expect(regressions.slice(0, 10)).toEqual([]);
    expect(diverged.slice(0, 10), 'every node agrees on the registers and on the index of a fresh write').toEqual([]);
  }, (knobs.minutes + 10) * 60_000);

  test('losing two of three nodes (Roster and nats-server): the survivor answers 503 or times out, never a false success', async () => {
    const survivor = cluster.node('n1');
    // A session bound to no check, so the dead nodes' gossip failure does not end it.
    const created = await http(survivor.url, 'PUT', '/v1/session/create', { body: { LockDelay: '0s', NodeChecks: [] }, timeoutMs: requestTimeoutMs });
    expect(created.status, created.text).toBe(200);
    const sid = created.json<{ ID: string }>().ID;
    expect((await http(survivor.url, 'PUT', '/v1/kv/faults/loss/before', { body: 'before', timeoutMs: requestTimeoutMs })).status).toBe(200);

    await Promise.all([cluster.node('n2').kill(), cluster.node('n3').kill(), cluster.natsNode('n2').kill(), cluster.natsNode('n3').kill()]);
    const kinds = ['write', 'acquire', 'consistent-read', 'session-create'] as const;
    const answers: { kind: (typeof kinds)[number]; value: string; status: number; text: string; error?: string }[] = [];
    let staleReads = 0;
    for (let round = 0; round < 4; round++) {
      await Promise.all(kinds.map(async (kind) => {
        const value = `loss-${round}-${kind}`;
        const a = kind === 'write' ? await http(survivor.url, 'PUT', `/v1/kv/faults/loss/${value}`, { body: value, timeoutMs: 4_000 })
          : kind === 'acquire' ? await http(survivor.url, 'PUT', `/v1/kv/faults/loss/lock?acquire=${sid}`, { body: value, timeoutMs: 4_000 })
            : kind === 'consistent-read' ? await http(survivor.url, 'GET', '/v1/kv/faults/loss/before?consistent', { timeoutMs: 4_000 })
              : await http(survivor.url, 'PUT', '/v1/session/create', { body: { Name: value, NodeChecks: [] }, timeoutMs: 4_000 });
        answers.push({ kind, value, status: a.status, text: a.text.slice(0, 200), error: a.error });
      }));
      // The default read still answers from the survivor's state (not linearizable: it says so by design).
      if ((await http(survivor.url, 'GET', '/v1/kv/faults/loss/before', { timeoutMs: 4_000 })).status === 200) staleReads++;
    }
    const byStatus = answers.reduce<Record<string, number>>((m, a) => ({ ...m, [a.status === 0 ? 'timeout' : String(a.status)]: (m[a.status === 0 ? 'timeout' : String(a.status)] ?? 0) + 1 }), {});
    const falseSuccesses = answers.filter((a) => a.status >= 200 && a.status < 300);
    console.log(`[faults] two of three lost: ${answers.length} requests to the survivor: ${JSON.stringify(byStatus)}; default reads answered ${staleReads}/4`);

    await cluster.heal();
    // Any success would have to be durable; none is expected.
    for (const a of falseSuccesses.filter((x) => x.kind === 'write')) {
      expect((await http(survivor.url, 'GET', `/v1/kv/faults/loss/${a.value}?consistent`, { timeoutMs: requestTimeoutMs })).status).toBe(200);
    }
    expect(falseSuccesses).toEqual([]);
    expect(answers.every((a) => a.status === 0 || a.status === 503 || a.status >= 500), JSON.stringify(answers)).toBe(true);
    // Afterwards the cluster takes writes again and the acknowledged write from before is there.
    const before = await http(cluster.node('n3').url, 'GET', '/v1/kv/faults/loss/before?consistent', { timeoutMs: requestTimeoutMs });
    expect(decode(before)).toBe('before');
  }, 5 * 60_000);

  test('a full-cluster crash (every Roster node and nats-server SIGKILLed) and restart loses nothing acknowledged; indexes keep growing', async () => {
    const acked: { key: string; value: string; index: number }[] = [];
    let stop = false;
    const writer = async (node: RosterNode) => {
      for (let i = 0; i < 100_000 && !stop; i++) {
        const key = `faults/restart/${node.name}/${i}`;
        const a = await http(node.url, 'PUT', `/v1/kv/${key}`, { body: `v${i}`, timeoutMs: 4_000 });
        if (a.status === 200) acked.push({ key, value: `v${i}`, index: indexOf(a)! });
        else break;
      }
    };
    const writers = cluster.nodes.map(writer);
    await sleep(1_500);
    stop = true;
    await Promise.all([...cluster.nodes.map((n) => n.kill()), ...cluster.nats.map((s) => s.kill())]);
    await Promise.all(writers);
    const maxBefore = Math.max(...acked.map((a) => a.index));
    expect(acked.length).toBeGreaterThan(0);

    const t0 = Date.now();
    await cluster.heal();
    const healMs = Date.now() - t0;
    const missing: string[] = [];
    const wrongIndex: string[] = [];
    for (const node of cluster.nodes) {
      const all = await http(node.url, 'GET', '/v1/kv/faults/restart/?recurse&consistent', { timeoutMs: requestTimeoutMs });
      expect(all.status, all.text).toBe(200);
      const stored = new Map(all.json<{ Key: string; Value: string; ModifyIndex: number }[]>().map((e) => [e.Key, e]));
      for (const a of acked) {
        const e = stored.get(a.key);
        if (e === undefined || Buffer.from(e.Value, 'base64').toString() !== a.value) missing.push(`${node.name}:${a.key}`);
        else if (e.ModifyIndex !== a.index) wrongIndex.push(`${node.name}:${a.key} ${e.ModifyIndex}≠${a.index}`);
      }
    }
    const after = await http(cluster.node('n2').url, 'PUT', '/v1/kv/faults/restart/after', { body: 'after', timeoutMs: requestTimeoutMs });
    expect(after.status).toBe(200);
    const diverged = await divergence('faults/restart/');
    if (diverged.length > 0) keepStores = true;
    console.log(`[faults] full-cluster crash: ${acked.length} writes acknowledged before it (max index ${maxBefore}); `
      + `back in ${Math.round(healMs / 1000)} s; missing ${missing.length}; acknowledged with another index ${wrongIndex.length}; `
      + `first index after ${indexOf(after)}; nodes disagreeing ${diverged.length}`);
    if (missing.length + wrongIndex.length + diverged.length > 0) {
      console.log(`[faults] outputs saved next to ${saveHistory('restart', { acked, missing, wrongIndex, diverged })}`);
    }
    expect(missing.slice(0, 20)).toEqual([]);
    expect(wrongIndex.slice(0, 20)).toEqual([]);
    expect(indexOf(after)!).toBeGreaterThan(maxBefore);
    expect(diverged.slice(0, 10)).toEqual([]);
  }, 5 * 60_000);
});
