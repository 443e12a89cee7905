// Goal (pause and clock skew), on one three-node cluster:
// 1. SIGSTOP of a Roster node: the others detect its gossip failure (member failed, its gossipHealth
//    critical), invalidate the sessions bound to it (lock released, lock-delay applied); after SIGCONT its
//    late TTL timers are harmless (sessions renewed elsewhere live on: session.expire carries renewIndex)
//    and it rejoins.
// 2. A node started under libfaketime 30 s ahead: no session is invalidated before its TTL elapsed in real
//    time after the client's last successful renew, whoever owns its timer or stamps its entries.
// Every scenario prints its counts.
import { existsSync } from 'node:fs';
import { afterAll, beforeAll, describe, expect, test } from 'vitest';
import { ownerOf } from '../../src/runtime/ownership.ts';
import { FaultCluster, http, sleep, type RosterNode } from './cluster-harness.ts';

const libfaketime = '/usr/lib/x86_64-linux-gnu/faketime/libfaketime.so.1';
const skew = '+30s';
const names = ['n1', 'n2', 'n3'];

let cluster: FaultCluster;
/** Pids this file stopped with SIGSTOP: always continued in afterAll. */
const stopped = new Set<number>();

beforeAll(async () => {
  if (!existsSync(libfaketime)) throw new Error(`the skew test needs libfaketime at ${libfaketime} (Debian: apt-get install -y faketime)`);
  cluster = await FaultCluster.start({ homeServers: true });
}, 180_000);

afterAll(async () => {
  for (const pid of stopped) { try { process.kill(pid, 'SIGCONT'); } catch { /* gone */ } }
  await cluster?.shutdown();
}, 60_000);

const url = (name: string) => cluster.node(name).url;

async function session(name: string, body: Record<string, unknown>): Promise<string> {
  const r = await http(url(name), 'PUT', '/v1/session/create', { body });
  if (r.status !== 200) throw new Error(`session create on ${name}: ${r.status} ${r.text}`);
  return r.json<{ ID: string }>().ID;
}

async function sessionAlive(name: string, id: string): Promise<boolean | undefined> {
  const r = await http(url(name), 'GET', `/v1/session/info/${id}`, { timeoutMs: 3_000 });
  return r.status === 200 ? r.json<unknown[]>().length > 0 : undefined;
}

async function until<T>(what: string, f: () => Promise<T | undefined>, ms: number): Promise<T> {
  const deadline = Date.now() + ms;
  for (;;) {
    const v = await f().catch(() => undefined);
    if (v !== undefined) return v;
    if (Date.now() > deadline) throw new Error(`timed out after ${ms} ms waiting for ${what}`);
    await sleep(100);
  }
}

/**
 * TTL sessions bound to nothing, made through n1 until n2 owns the timers of a few: ownership hashes the
 * random ID (12 fixed ones missed it 1 in 130).
 */
async function ttlSessionsSomeOwnedByN2(ttlMs: number): Promise<{ ttl: string[]; ownedByVictim: string[] }> {
  const ttl: string[] = [];
  const ownedByVictim: string[] = [];
  for (let i = 0; i < 60 && (ttl.length < 12 || ownedByVictim.length < 3); i++) {
    const id = await session('n1', { TTL: `${ttlMs / 1000}s`, NodeChecks: [], LockDelay: '0s' });
    ttl.push(id);
    if (ownerOf(`session:${id}`, names) === 'n2') ownedByVictim.push(id);
  }
  return { ttl, ownedByVictim };
}

/** Renews every session through n1, all of them every 500 ms, until the returned stop; it resolves with the failed renews. */
function renewThroughN1(ids: string[]): () => Promise<number> {
  let renewing = true;
  let renewFailures = 0;
  const renewer = (async () => {
    while (renewing) {
      for (const id of ids) {
        const r = await http(url('n1'), 'PUT', `/v1/session/renew/${id}`, { timeoutMs: 3_000 });
        if (r.status !== 200) renewFailures++;
      }
      await sleep(500);
    }
  })();
  return async () => {
    renewing = false;
    await renewer;
    return renewFailures;
  };
}

/**
 * SIGSTOPs n2 (pid) for at least 10 s and SIGCONTs it. While it is paused: n1 fails it, the session bound
 * to it is invalidated, its gossipHealth is critical and its lock released, then a new holder is refused
 * for about LockDelay and granted. Returns when each happened (ms after the pause, or -1).
 */
async function pauseN2(pid: number, bound: string) {
  process.kill(pid, 'SIGSTOP');
  stopped.add(pid);
  const pausedAt = Date.now();
  let failedAfterMs = -1, invalidatedAfterMs = -1, lockDelayRefusals = 0, acquiredAfterMs = -1;
  try {
    failedAfterMs = await until('n2 failed in n1\'s members', async () => {
      const m = await http(url('n1'), 'GET', '/v1/agent/members');
      return m.json<{ Name: string; Status: number }[]>().find((x) => x.Name === 'n2')?.Status === 4 ? Date.now() - pausedAt : undefined;
    }, 30_000);
    invalidatedAfterMs = await until('the session bound to n2 invalidated', async () =>
      ((await sessionAlive('n1', bound)) === false ? Date.now() - pausedAt : undefined), 30_000);
    const invalidatedAt = Date.now();
    const health = await http(url('n1'), 'GET', '/v1/health/node/n2');
    expect(health.json<{ CheckID: string; Status: string }[]>().find((c) => c.CheckID === 'gossipHealth')?.Status).toBe('critical');
    expect((await http(url('n1'), 'GET', '/v1/kv/pause/lock')).json()[0].Session).toBeUndefined();
    // Lock-delay: refused for about LockDelay after the invalidation, then granted.
    const taker = await session('n1', { Name: 'taker', LockDelay: '0s' });
    for (let i = 0; i < 200; i++) {
      const r = await http(url('n1'), 'PUT', `/v1/kv/pause/lock?acquire=${taker}`, { body: 'n1' });
      if (r.status === 200) { acquiredAfterMs = Date.now() - invalidatedAt; break; }
      if (r.json<{ details?: { reason?: string } }>()?.details?.reason === 'lock-delay') lockDelayRefusals++;
      await sleep(100);
    }
    await sleep(Math.max(0, 10_000 - (Date.now() - pausedAt))); // paused at least 10 s
  } finally {
    process.kill(pid, 'SIGCONT');
    stopped.delete(pid);
  }
  return { pausedAt, failedAfterMs, invalidatedAfterMs, lockDelayRefusals, acquiredAfterMs };
}

describe('a paused Roster node (SIGSTOP)', () => {
  test('is failed by the others, its sessions end with lock-delay; after SIGCONT its late timers change nothing and it rejoins', async () => {
    const victim = cluster.node('n2');
    const lockDelayMs = 3_000;
    const bound = await session('n2', { Name: 'bound-to-n2', LockDelay: `${lockDelayMs}ms` });
    expect((await http(url('n2'), 'PUT', `/v1/kv/pause/lock?acquire=${bound}`, { body: 'n2' })).text).toBe('true');
    const others = { n1: await session('n1', { Name: 'bound-to-n1' }), n3: await session('n3', { Name: 'bound-to-n3' }) };
    // TTL sessions bound to nothing; the ones whose timers n2 owns matter most. Renewed through n1 all along.
    const ttlMs = 3_000;
    const { ttl, ownedByVictim } = await ttlSessionsSomeOwnedByN2(ttlMs);
    const stopRenewing = renewThroughN1(ttl);
    await sleep(ttlMs); // n2 has armed timers for all of them

    const { pausedAt, failedAfterMs, invalidatedAfterMs, lockDelayRefusals, acquiredAfterMs } = await pauseN2(victim.pid!, bound);
    const resumedAt = Date.now();
    // Its overdue timers fire now; keep renewing through n1 for three TTLs and see nothing expire.
    await sleep(3 * ttlMs);
    const ttlAlive = (await Promise.all(ttl.map((id) => sessionAlive('n1', id)))).filter((x) => x === true).length;
    let rejoinedAfterMs = -1;
    try {
      await cluster.allAlive(30_000);
      rejoinedAfterMs = Date.now() - resumedAt;
    } catch { /* reported below */ }
    const renewFailures = await stopRenewing();
    const othersAlive = { n1: await sessionAlive('n1', others.n1), n3: await sessionAlive('n1', others.n3) };
    const crit = (await http(url('n1'), 'GET', '/v1/health/state/critical?consistent')).json<{ CheckID: string; Node: string }[]>()
      .filter((c) => c.CheckID === 'gossipHealth').map((c) => c.Node);
    console.log(`pause: n2 SIGSTOPped ${((resumedAt - pausedAt) / 1000).toFixed(1)} s; failed in n1's view after ${failedAfterMs} ms, `
      + `its bound session invalidated after ${invalidatedAfterMs} ms, lock re-acquired ${acquiredAfterMs} ms after that `
      + `(LockDelay ${lockDelayMs} ms, ${lockDelayRefusals} lock-delay refusals); after SIGCONT: ${ttlAlive}/${ttl.length} renewed TTL sessions alive `
      + `(${ownedByVictim.length} had timers on n2; ${renewFailures} renew failures), rejoined ${rejoinedAfterMs >= 0 ? `after ${rejoinedAfterMs} ms` : 'NOT within 30 s'}, `
      + `sessions bound to n1/n3 alive ${othersAlive.n1}/${othersAlive.n3}, gossipHealth critical now: [${crit.join(',')}]`);
    expect(failedAfterMs).toBeGreaterThan(0);
    expect(invalidatedAfterMs).toBeLessThan(15_000);
    expect(lockDelayRefusals).toBeGreaterThan(0);
    expect(acquiredAfterMs).toBeGreaterThanOrEqual(0);
    expect(ownedByVictim.length).toBeGreaterThan(0);
    expect(ttlAlive).toBe(ttl.length);
    pauseOutcome = { rejoined: rejoinedAfterMs >= 0, othersAlive: othersAlive.n1 === true && othersAlive.n3 === true, critical: crit };
  }, 120_000);

  // On SIGCONT the paused node's gossip view is 10 s old: were it to judge n1 and n3 failed before their
  // heartbeats reach it, it would propose their gossipHealth critical and invalidate their sessions. A node
  // reports failures only while it sees a majority alive (src/runtime/node-health.ts).
  test('after SIGCONT the paused node does not fail the others (their sessions live) and the cluster is whole again', () => {
    expect(pauseOutcome).toBeDefined();
    expect(pauseOutcome!.othersAlive).toBe(true);
    expect(pauseOutcome!.critical).toEqual([]);
    expect(pauseOutcome!.rejoined).toBe(true);
  });
});

let pauseOutcome: { rejoined: boolean; othersAlive: boolean; critical: string[] } | undefined;

describe('a Roster node whose clock is 30 s ahead (libfaketime)', () => {
  let skewed: RosterNode;
  const ttlMs = 3_000;
  interface Tracked { id: string; owner: string; via: string; lastRenewAt: number; goneAt?: number; lastAliveAt: number }
  const tracked: Tracked[] = [];

  test('no session is invalidated before its TTL after the client\'s last successful renew', async () => {
    skewed = cluster.node('n3');
    await skewed.stop();
    // RosterNode.start passes the runner's environment on; the spawn happens synchronously inside start(),
    // so the preload is set for that one child only.
    process.env.LD_PRELOAD = libfaketime;
    process.env.FAKETIME = skew;
    const starting = skewed.start();
    delete process.env.LD_PRELOAD;
    delete process.env.FAKETIME;
    await starting;
    const serverTime = (await http(skewed.url, 'GET', '/v1/status/leader')).headers.get('x-server-time');
    const skewMs = Date.parse(serverTime ?? '') - Date.now();
    console.log(`skew: n3 restarted under libfaketime FAKETIME=${skew}: its x-server-time is ${(skewMs / 1000).toFixed(1)} s ahead`);
    expect(skewMs).toBeGreaterThan(25_000);
    // Members alive in every view (not allAlive: after the pause above, gossip checks may stay critical — bug).
    for (const n of names) {
      await until(`all members alive in ${n}'s view`, async () => {
        const m = await http(url(n), 'GET', '/v1/agent/members');
        return m.status === 200 && m.json<{ Status: number }[]>().filter((x) => x.Status === 1).length === 3 ? true : undefined;
      }, 60_000);
    }
    await cluster.writable(60_000);

    // Sessions created and renewed through every node; the last renew of each through a chosen node.
    for (let i = 0; i < 18; i++) {
      const via = names[i % 3]!;
      const id = await session(names[(i + 1) % 3]!, { TTL: `${ttlMs / 1000}s`, NodeChecks: [], LockDelay: '0s' });
      tracked.push({ id, owner: ownerOf(`session:${id}`, names)!, via, lastRenewAt: 0, lastAliveAt: 0 });
    }
    for (let round = 0; round < 3; round++) {
      for (const t of tracked) {
        const node = round < 2 ? names[(round + tracked.indexOf(t)) % 3]! : t.via;
        const r = await http(url(node), 'PUT', `/v1/session/renew/${t.id}`, { timeoutMs: 3_000 });
        expect(r.status, r.text).toBe(200);
        t.lastRenewAt = Date.now();
      }
      await sleep(500);
    }
    // Watch every session through n1 until it is gone (bounded: 2 × TTL + suspicion + generous slack).
    const watchUntil = Date.now() + 2 * ttlMs + 20_000;
    while (Date.now() < watchUntil && tracked.some((t) => t.goneAt === undefined)) {
      for (const t of tracked.filter((x) => x.goneAt === undefined)) {
        const alive = await sessionAlive('n1', t.id);
        if (alive === false) t.goneAt = Date.now();
        else if (alive === true) t.lastAliveAt = Date.now();
      }
      await sleep(100);
    }
    const early = tracked.filter((t) => t.goneAt !== undefined && t.goneAt - t.lastRenewAt < ttlMs);
    const never = tracked.filter((t) => t.goneAt === undefined);
    const fmt = (t: Tracked) => `${t.id.slice(0, 8)}(owner ${t.owner}, last renew via ${t.via}): ${t.goneAt === undefined ? 'never' : `${t.goneAt - t.lastRenewAt} ms`}`;
    console.log(`skew: ${tracked.length} TTL ${ttlMs} ms sessions; invalidated after last renew: ${tracked.map(fmt).join('; ')}`);
    console.log(`skew: ${early.length} invalidated before TTL, ${never.length} not invalidated within ${2 * ttlMs + 20_000} ms `
      + `(by last renew via n3: ${never.filter((t) => t.via === 'n3').length}, by owner n3: ${never.filter((t) => t.owner === 'n3').length})`);
    expect(early.map(fmt)).toEqual([]);
  }, 150_000);

  // Liveness under the skew: a renew through the skewed node carries its clock into the log's entry time,
  // yet the expiry proposed later by an owner with a true clock must still go through.
  test('every session is invalidated within 2 × TTL + 20 s of its last renew, whichever node took the renew', () => {
    expect(tracked.length).toBeGreaterThan(0);
    expect(tracked.filter((t) => t.goneAt === undefined).map((t) => `${t.id} owner ${t.owner} via ${t.via}`)).toEqual([]);
  });
});
