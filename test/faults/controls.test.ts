// Goal: the checker's control runs against real processes find the violations planted in them,
// and the same setups done right check valid.
// (a) Reads that skip the barrier: a node whose nats-server is SIGSTOPped stops receiving entries but still
//     answers HTTP from its frozen state while the other nodes write. Its default and ?stale reads MUST make
//     the register history non-linearizable; its ?consistent reads, taken at the same time, time out
//     (unknown) or answer fresh, and that history checks valid.
// (b) An unfenced resource with a paused holder: a holder stops renewing and sleeps past its TTL; its session
//     is invalidated, no acquire succeeds within its LockDelay, another client acquires; the paused one wakes
//     and writes with its old fencing token. An unfenced ProtectedResource accepts it and checkFencing reports
//     the violation; a fenced one rejects it and checks valid. The lock's history (lock-delay model) is
//     linearizable.
import { writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, test } from 'vitest';
import { HistoryRecorder, type Op, type OpHandle } from '../checker/history.ts';
import { checkLinearizable, formatOp, type Report } from '../checker/linearizability.ts';
import { casRegister, makeMutex } from '../checker/models.ts';
import { ProtectedResource, checkFencing } from '../checker/fencing.ts';
import { FaultCluster, errorCode, http, indexOf, sleep, verdictOf, type Answer, type NatsNode, type RosterNode } from './cluster-harness.ts';
import { until } from '../support/until.ts';

const requestTimeoutMs = 3_000;
let cluster: FaultCluster;
const now = () => performance.now();

beforeAll(async () => {
  // Each node talks to its own nats-server first, so pausing one server cuts off one known node.
  cluster = await FaultCluster.start({ homeServers: true });
}, 180_000);

afterAll(async () => {
  await cluster?.shutdown();
});

function saveHistory(tag: string, history: HistoryRecorder, extra: Record<string, unknown> = {}): string {
  const path = join(tmpdir(), `roster-controls-${tag}-${Date.now()}.json`);
  writeFileSync(path, JSON.stringify({ ...extra, history: history.toJSON() }));
  return path;
}

function summarize(name: string, r: Report): string {
  const bad = r.keys.filter((k) => k.valid !== true).map((k) => k.valid === false
    ? `${k.key}: ${k.reason}\n    ${k.witness.map(formatOp).join('\n    ')}`
    : `${k.key}: ${k.reason}`);
  return `${name}: valid=${r.valid} ops=${r.ops} unknown=${r.unknownOps} ${Math.round(r.elapsedMs)} ms${bad.length > 0 ? `\n  ${bad.join('\n  ')}` : ''}`;
}

const decode = (a: Answer): string | null => {
  const v = a.json<{ Value: string | null }[]>()[0]?.Value ?? null;
  return v === null ? null : Buffer.from(v, 'base64').toString();
};

/**
 * The node to cut off: one whose nats-server does not lead the stream (so writes go on without an election)
 * and that no other node uses; undefined when none is.
 */
async function nodeToCutOff(leader: string): Promise<RosterNode | undefined> {
  for (const n of cluster.nodes) {
    const server = await cluster.natsServerOf(n.name);
    const others = await Promise.all(cluster.nodes.filter((x) => x !== n).map((x) => cluster.natsServerOf(x.name)));
    if (server !== undefined && server !== leader && !others.includes(server)) return n;
  }
  return undefined;
}

/** Writes through one node and reads through any, each call recorded in `history` as a register op. */
function registerCalls(history: HistoryRecorder, key: string, writerNode: RosterNode, lagging: RosterNode) {
  const write = async (value: string): Promise<boolean> => {
    const h = history.invoke('writer', key, 'write', value);
    const a = await http(writerNode.url, 'PUT', `/v1/kv/${key}`, { body: value, timeoutMs: 10_000 });
    if (a.status === 200) { h.ok(true); return true; }
    if (verdictOf(a) === 'invalid') h.fail(); else h.unknown();
    return false;
  };
  const read = async (process: string, query: string, node = lagging): Promise<void> => {
    const h = history.invoke(process, key, 'read', null);
    const a = await http(node.url, 'GET', `/v1/kv/${key}${query}`, { timeoutMs: requestTimeoutMs });
    if (a.status === 200) h.ok(decode(a));
    else if (a.status === 404 && errorCode(a) === 1006) h.ok(null);
    else h.unknown();
  };
  return { write, read };
}

/**
 * With `server` paused, writes every 50 ms while four readers read every 100 ms (default, ?stale and
 * ?consistent through the lagging node, ?consistent through `healthyNode`) until at least 10 writes are
 * acknowledged and 4 s have passed; then resumes the server. Returns the acknowledged writes.
 */
async function writeAndReadWhileCutOff(server: NatsNode, calls: ReturnType<typeof registerCalls>, lagging: RosterNode, healthyNode: RosterNode): Promise<number> {
  const { write, read } = calls;
  await server.pause();
  const pausedAt = now();
  let writing = true;
  let written = 0;
  const writer = (async () => {
    for (let i = 0; i < 1_000 && writing; i++) {
      if (await write(`w${i}`)) written++;
      await sleep(50);
    }
  })();
  const reader = async (process: string, query: string, node = lagging) => {
    while (writing) {
      await read(process, query, node);
      await sleep(100);
    }
  };
  const readers = Promise.all([reader('default', ''), reader('stale', '?stale'), reader('consistent', '?consistent'),
    reader('consistent-healthy', '?consistent', healthyNode)]);
  // Long enough for the writer to get past an election if there is one, and for reads after acked writes.
  await until('writes acknowledged while the node is cut off', async () => (written >= 10 && now() - pausedAt > 4_000 ? true : undefined), 40_000);
  writing = false;
  await Promise.all([writer, readers]);
  server.resume();
  return written;
}

/** Each reader's reads checked together with every write, as a register. */
function checkReads(history: HistoryRecorder) {
  const ops = history.ops();
  const writes = ops.filter((op) => op.process === 'writer');
  const readsBy = (p: string) => ops.filter((op) => op.process === p);
  const check = (list: Op[]) => checkLinearizable([...writes, ...list], casRegister, { budgetMs: 30_000 });
  const dflt = check(readsBy('default'));
  const stale = check(readsBy('stale'));
  const consistent = check(readsBy('consistent'));
  const healthy = check(readsBy('consistent-healthy'));
  return { readsBy, dflt, stale, consistent, healthy };
}

const outcomes = (list: Op[]) => `${list.filter((o) => o.outcome === 'ok').length} answered, ${list.filter((o) => o.outcome === 'unknown').length} unknown`;

/** An acquire or release of `key` through `node`, recorded in `history` as a lock op. */
function lockCalls(history: HistoryRecorder, key: string) {
  return async (process: string, node: RosterNode, f: 'acquire' | 'release', sid: string): Promise<Answer> => {
    const h = history.invoke(process, key, f, sid);
    const a = await http(node.url, 'PUT', `/v1/kv/${key}?${f}=${sid}`, { body: process, timeoutMs: 10_000 });
    if (a.status === 200) h.ok(a.text === 'true');
    else if (a.status === 409) h.ok(false);
    else if (verdictOf(a) === 'invalid') h.fail();
    else h.unknown();
    return a;
  };
}

/**
 * Watches session `sid` through a ?consistent read (linearizable) every 20 ms until it is gone (then
 * completes `invalidated`): when it was last seen alive, first seen gone.
 */
async function watchSession(node: RosterNode, sid: string, createdAt: number, invalidated: OpHandle) {
  let lastAliveCallMs = createdAt;
  let goneReturnMs: number | undefined;
  for (let k = 0; k < 2_000 && goneReturnMs === undefined; k++) {
    const callMs = now();
    const a = await http(node.url, 'GET', `/v1/session/info/${sid}?consistent`, { timeoutMs: requestTimeoutMs });
    if (a.status === 200 && a.json<unknown[]>().length > 0) lastAliveCallMs = callMs;
    else if (a.status === 200 || a.status === 404) { goneReturnMs = now(); invalidated.ok(true); }
    await sleep(20);
  }
  return { lastAliveCallMs, goneReturnMs };
}

/** Tries to acquire every 25 ms until it gets the lock, and notes why it was refused (reason → count). */
async function acquireUntilGranted(lockOp: ReturnType<typeof lockCalls>, process: string, node: RosterNode, sid: string) {
  const refusals = new Map<string, number>();
  let acquired: { answer: Answer; returnMs: number } | undefined;
  for (let k = 0; k < 600 && acquired === undefined; k++) {
    const a = await lockOp(process, node, 'acquire', sid);
    if (a.status === 200 && a.text === 'true') acquired = { answer: a, returnMs: now() };
    else {
      const reason = a.status === 409 ? String(a.json<{ details?: { reason?: string } }>().details?.reason) : `status ${a.status}`;
      refusals.set(reason, (refusals.get(reason) ?? 0) + 1);
      await sleep(25);
    }
  }
  return { acquired, refusals };
}

describe.sequential('checker controls against real processes', () => {
  test('(a) reads that skip the barrier on a node cut off from new entries are caught; ?consistent reads check valid', async () => {
    const key = 'faults/control/register';
    const leader = await until('a stream leader', () => cluster.streamLeader(), 30_000);
    const lagging = await nodeToCutOff(leader);
    expect(lagging, 'a node alone on a nats-server that is not the stream leader').toBeDefined();
    const server = cluster.natsNode((await cluster.natsServerOf(lagging!.name))!);
    const writerNode = cluster.nodes.find((n) => n !== lagging)!;

    const history = new HistoryRecorder();
    const calls = registerCalls(history, key, writerNode, lagging!);
    // ?consistent reads through the writer's node answer (its writes return only once applied there, so it
    // is not cut off) and must check valid too. Not the third node: its log consumer (an R1 ordered consumer)
    // may live on the paused server, which cuts it off as well until the consumer watchdog replaces it.
    const healthyNode = writerNode;
    expect(await calls.write('before-pause')).toBe(true);
    // The lagging node has applied it (its own reads see it) before its server stops.
    await until('the lagging node caught up', async () => {
      const a = await http(lagging!.url, 'GET', `/v1/kv/${key}`);
      return a.status === 200 && decode(a) === 'before-pause' ? true : undefined;
    }, 30_000);

    const written = await writeAndReadWhileCutOff(server, calls, lagging!, healthyNode);

    const { readsBy, dflt, stale, consistent, healthy } = checkReads(history);
    console.log(`[controls] (a) node ${lagging!.name} cut off (nats-server ${server.name} SIGSTOPped, stream leader ${leader}); `
      + `writes via ${writerNode.name}: ${written} acknowledged\n`
      + `  default reads ${outcomes(readsBy('default'))}; ${summarize('default', dflt)}\n`
      + `  ?stale reads ${outcomes(readsBy('stale'))}; ${summarize('stale', stale)}\n`
      + `  ?consistent reads ${outcomes(readsBy('consistent'))}; ${summarize('consistent', consistent)}\n`
      + `  ?consistent reads via ${healthyNode.name} (not cut off) ${outcomes(readsBy('consistent-healthy'))}; ${summarize('consistent (healthy node)', healthy)}`);
    if (dflt.valid !== false || stale.valid !== false || consistent.valid !== true || healthy.valid !== true) {
      console.log(`[controls] history saved to ${saveHistory('barrier', history)}`);
    }
    expect(dflt.valid, 'default reads from a cut-off node: the planted violation').toBe(false);
    expect(stale.valid, '?stale reads from a cut-off node: the planted violation').toBe(false);
    expect(readsBy('consistent').length).toBeGreaterThan(0);
    expect(consistent.valid, summarize('consistent', consistent)).toBe(true);
    expect(readsBy('consistent-healthy').filter((o) => o.outcome === 'ok').length).toBeGreaterThanOrEqual(5);
    expect(healthy.valid, summarize('consistent (healthy node)', healthy)).toBe(true);
    await cluster.heal();
  }, 180_000);

  test('(b) a paused holder writing with its old token: the unfenced resource accepts it and the check reports it; the fenced one rejects it; lock-delay holds', async () => {
    const key = 'faults/control/lock';
    const lockDelayMs = 3_000;
    const ttlMs = 2_000;
    const history = new HistoryRecorder();
    const fenced = new ProtectedResource(true);
    const unfenced = new ProtectedResource(false);
    const write = (holder: string, token: number) => ({ fenced: fenced.write(holder, key, token), unfenced: unfenced.write(holder, key, token) });
    const nodeA = cluster.node('n1');
    const nodeB = cluster.node('n2');
    const lockOp = lockCalls(history, key);

    const createdAt = now();
    const ca = await http(nodeA.url, 'PUT', '/v1/session/create', { body: { Name: 'paused-holder', TTL: `${ttlMs / 1000}s`, LockDelay: `${lockDelayMs / 1000}s` } });
    expect(ca.status, ca.text).toBe(200);
    const sa = ca.json<{ ID: string }>().ID;
    const cb = await http(nodeB.url, 'PUT', '/v1/session/create', { body: { Name: 'next-holder', LockDelay: '0s' } });
    const sb = cb.json<{ ID: string }>().ID;
    const acquiredA = await lockOp('A', nodeA, 'acquire', sa);
    expect(acquiredA.text).toBe('true');
    const tokenA = indexOf(acquiredA)!;
    expect(tokenA).toBeGreaterThan(0);
    expect(write('A', tokenA)).toEqual({ fenced: true, unfenced: true });

    // A pauses: no renew, no request, past its TTL. The model may end its session from now on.
    const invalidated = history.invoke('A', key, 'invalidate', sa);
    const watcher = watchSession(nodeB, sa, createdAt, invalidated);
    // B tries to acquire until it gets the lock.
    const { acquired: acquiredB, refusals } = await acquireUntilGranted(lockOp, 'B', nodeB, sb);
    const { lastAliveCallMs, goneReturnMs } = await watcher;
    expect(acquiredB, 'B acquired after A\'s session ended').toBeDefined();
    expect(goneReturnMs).toBeDefined();
    const tokenB = indexOf(acquiredB!.answer)!;
    expect(tokenB).toBeGreaterThan(tokenA);
    expect(write('B', tokenB)).toEqual({ fenced: true, unfenced: true });

    // A wakes up, still believing it holds the lock, and writes with its old token.
    const late = write('A', tokenA);
    const releaseA = await lockOp('A', nodeA, 'release', sa);
    await lockOp('B', nodeB, 'release', sb);

    const fencedReport = checkFencing(fenced.writes());
    const unfencedReport = checkFencing(unfenced.writes());
    const locks = checkLinearizable(history.ops(), makeMutex({ lockDelay: true }), { budgetMs: 30_000 });
    // Lock-delay is measured from the invalidation entry's time, which the client cannot see; a sound lower
    // bound is the create's call plus 2 × TTL (README: the server invalidates 2 × TTL after the last
    // create/renew). B's acquire took effect no later than its answer, so an answer earlier than that bound
    // plus LockDelay proves the delay was cut short. (A was last seen alive shortly before: the bound is tight.)
    const invalidatedNoEarlierMs = createdAt + 2 * ttlMs;
    const delaySeenMs = acquiredB!.returnMs - invalidatedNoEarlierMs;
    console.log(`[controls] (b) A held token ${tokenA}; session gone ${Math.round(goneReturnMs! - createdAt)} ms after create `
      + `(last seen alive at ${Math.round(lastAliveCallMs - createdAt)} ms); B acquired with token ${tokenB} `
      + `${Math.round(acquiredB!.returnMs - goneReturnMs!)} ms after it was seen gone and ${Math.round(delaySeenMs)} ms after the earliest `
      + `invalidation time (LockDelay ${lockDelayMs} ms); refusals ${JSON.stringify(Object.fromEntries(refusals))}\n`
      + `  A's late write: fenced ${late.fenced ? 'accepted' : 'rejected'}, unfenced ${late.unfenced ? 'accepted' : 'rejected'}; A's release ${releaseA.status}\n`
      + `  fenced: valid=${fencedReport.valid} rejected=${fencedReport.rejected}; unfenced: valid=${unfencedReport.valid} violations=${unfencedReport.violations.length}\n`
      + `  ${summarize('mutex (lock-delay)', locks)}`);
    if (locks.valid !== true) console.log(`[controls] history saved to ${saveHistory('fencing', history)}`);
    expect(late).toEqual({ fenced: false, unfenced: true });
    expect(unfencedReport.valid, 'the unfenced resource: the planted violation').toBe(false);
    expect(unfencedReport.violations).toHaveLength(1);
    expect(unfencedReport.violations[0]!.after.token).toBe(tokenA);
    expect(fencedReport.valid).toBe(true);
    expect(fencedReport.rejected).toBe(1);
    // 10 ms of tolerance: the server's entry times are Date.now() in other processes, ours performance.now().
    expect(delaySeenMs, 'no acquire succeeds within LockDelay after the invalidation').toBeGreaterThanOrEqual(lockDelayMs - 10);
    expect(refusals.get('lock-delay') ?? 0, 'refusals during the delay say lock-delay').toBeGreaterThan(0);
    expect(releaseA.status, 'the woken holder cannot release: its session is gone').not.toBe(200);
    expect(locks.valid, summarize('mutex (lock-delay)', locks)).toBe(true);
  }, 120_000);

  test('(c) lock-delay holds when the acquire goes through a node that stayed idle while another wrote', async () => {
    // Entry time is stamped by whichever node commits; a node idle for a while must stamp the time now, not
    // its last commit's time plus everything since on top of the other node's newest entry (which moved the
    // log's time on by half the idle time and ended lock delays early).
    const key = 'faults/control/idle-delay';
    const lockDelayMs = 3_000;
    const idleMs = 10_000;
    const history = new HistoryRecorder();
    const lockOp = lockCalls(history, key);
    const writer = cluster.node('n1');
    const idle = cluster.node('n3');
    const ca = await http(writer.url, 'PUT', '/v1/session/create', { body: { Name: 'first-holder', LockDelay: `${lockDelayMs / 1000}s` } });
    const sa = ca.json<{ ID: string }>().ID;
    const cb = await http(idle.url, 'PUT', '/v1/session/create', { body: { Name: 'idle-node-holder', LockDelay: '0s' } });
    const sb = cb.json<{ ID: string }>().ID;
    expect((await lockOp('A', writer, 'acquire', sa)).text).toBe('true');
    const idleUntil = now() + idleMs;
    for (let k = 0; k < 1_000 && now() < idleUntil; k++) {
      expect((await http(writer.url, 'PUT', `/v1/kv/faults/control/busy/${k % 10}`, { body: String(k) })).status).toBe(200);
      await sleep(50);
    }
    const destroyCallMs = now();
    const destroyed = history.invoke('A', key, 'invalidate', sa);
    expect((await http(writer.url, 'PUT', `/v1/session/destroy/${sa}`)).status).toBe(200);
    destroyed.ok(true);
    const { acquired, refusals } = await acquireUntilGranted(lockOp, 'B', idle, sb);
    expect(acquired, 'the idle node\'s session acquires once the delay is over').toBeDefined();
    const delaySeenMs = acquired!.returnMs - destroyCallMs;
    console.log(`[controls] (c) acquired through the idle node ${Math.round(delaySeenMs)} ms after the destroy was called `
      + `(LockDelay ${lockDelayMs} ms); refusals ${JSON.stringify(Object.fromEntries(refusals))}`);
    await lockOp('B', idle, 'release', sb);
    expect(delaySeenMs, 'no acquire succeeds within LockDelay after the destroy').toBeGreaterThanOrEqual(lockDelayMs - 10);
    expect(refusals.get('lock-delay') ?? 0).toBeGreaterThan(0);
    const locks = checkLinearizable(history.ops(), makeMutex({ lockDelay: true }), { budgetMs: 30_000 });
    expect(locks.valid, summarize('mutex (lock-delay)', locks)).toBe(true);
  }, 120_000);
});
