// Goal: crash safety of the embedded log, against real agent processes. SIGKILL at seeded random
// points of a mixed write load and of snapshotting, round after round on the same data dir: every
// acknowledged write survives whole, nothing unacknowledged appears half-applied, indexes never go
// back, the agent serves again. Damage put on disk by hand is in wal-crash-damage.test.ts.
//
// Replay a run: ROSTER_FAULT_SEED=<seed printed below>; soak: ROSTER_FAULT_ROUNDS=<n>.
import { basename, join } from 'node:path';
import { describe, expect, test } from 'vitest';
import { client, sleep, type Agent } from '../support/agent.ts';
import { appliedIndex, Ledger, readKv, type Client } from './wal-crash-ledger.ts';
import { faultRun, tornTailsIn, valueOf } from './wal-crash-run.ts';
import { logLines, report, snapNames, snapshotIsWhole, type Rng } from './wal-crash-support.ts';

const { seed, rounds, root, budgetMs, dataDir, start } = faultRun('test/faults/wal-crash.test.ts');

// ---- 1. random kill points during a mixed write load ----------------------------------------

type Op = 'kv' | 'cas' | 'session' | 'lock';
const opWeights: [Op, number][] = [['kv', 4], ['cas', 2], ['session', 1.5], ['lock', 2.5]];

function pickOp(rng: Rng): Op {
  let x = rng.next() * opWeights.reduce((s, [, w]) => s + w, 0);
  for (const [op, w] of opWeights) if ((x -= w) < 0) return op;
  return 'kv';
}

/** Most operations one writer makes in a round (the kill ends it long before). */
const writerOpsMax = 100_000;

/**
 * One client writing sequentially until the agent dies under it: unique KV PUTs, a CAS counter of its
 * own, session creates, acquire/release of a lock key of its own with its session.
 */
async function writer(c: Client, ledger: Ledger, rng: Rng, round: number, w: number, session: string, stopped: () => boolean): Promise<void> {
  const lockKey = `crash/lock/r${round}/w${w}`;
  let held = false;
  try {
    for (let i = 0; i < writerOpsMax && !stopped(); i++) {
      const tag = `r${round}-w${w}-${i}`;
      const pad = rng.int(0, 3000);
      switch (pickOp(rng)) {
        case 'kv':
          await ledger.putUnique(c, `crash/kv/r${round}/w${w}/${i}`, valueOf(`kv-${tag}`, pad));
          break;
        case 'cas': {
          const key = `crash/cas/w${w}`;
          const g = await c.get(`/v1/kv/${key}`);
          ledger.sawIndex(Number(g.headers.get('x-consul-index')));
          const modify = g.status === 200 ? g.json<{ ModifyIndex: number }[]>()[0]!.ModifyIndex : 0;
          await ledger.putSeq(c, key, `/v1/kv/${key}?cas=${modify}`, valueOf(`cas-${tag}`, pad), undefined);
          break;
        }
        case 'session':
          await ledger.createSession(c, `crash-s-${tag}`);
          break;
        case 'lock': {
          const op = held ? 'release' : 'acquire';
          if (await ledger.putSeq(c, lockKey, `/v1/kv/${lockKey}?${op}=${session}`, valueOf(`${op}-${tag}`, pad), held ? undefined : session)) held = !held;
          break;
        }
      }
    }
  } catch {
    // The agent died under this request: it stays in the ledger as in flight, judged at the restart.
  }
}

/** Polls the applied index while the load runs: the highest one a client saw before the kill. */
async function watchIndex(c: Client, ledger: Ledger, stopped: () => boolean): Promise<void> {
  try {
    for (let i = 0; i < 100_000 && !stopped(); i++) {
      ledger.sawIndex(await appliedIndex(c));
      await sleep(20);
    }
  } catch {
    // killed
  }
}

// ---- 2. kills while snapshots are written ----------------------------------------------------

/** Snapshot test state: big values make each snapshot take long enough (~8 MB) to be hit mid-write. */
const bigKeys = 256;
const bigValueBytes = 24 * 1024;
const snapshotEvery = 64;
const bigValue = (key: string, version: string): string => valueOf(`${key}@${version}`, bigValueBytes);

/** Overwrites its own keys again and again: small counters (many entries) or big values (big snapshots). */
async function overwriter(c: Client, ledger: Ledger, rng: Rng, keys: string[], big: boolean, tag: string, stopped: () => boolean): Promise<void> {
  try {
    for (let i = 0; i < writerOpsMax && !stopped(); i++) {
      const key = rng.pick(keys);
      const value = big ? bigValue(key, `${tag}-${i}`) : `${key}@${tag}-${i}`;
      await ledger.putSeq(c, key, `/v1/kv/${key}`, value, undefined);
    }
  } catch {
    // killed: in flight
  }
}

type Aim = 'tmp-appears' | 'snapshot-saved';

/**
 * Resolves when it is time to kill: `tmp-appears` a seeded delay after a snapshot's .tmp file shows up
 * (the snapshot is being written, synced or renamed), `snapshot-saved` just after the agent logs a
 * saved snapshot (old snapshots and segments being pruned, the next snapshot due soon). Bounded:
 * gives up after `giveUpMs` (a miss, counted).
 */
async function aim(agent: Agent, how: Aim, delayMs: number, giveUpMs: number): Promise<boolean> {
  const savedBefore = (agent.output().match(/snapshot saved/g) ?? []).length;
  const until = Date.now() + giveUpMs;
  while (Date.now() < until) {
    const hit = how === 'tmp-appears'
      ? snapNames(agent.dataDir).some((n) => n.endsWith('.tmp'))
      : (agent.output().match(/snapshot saved/g) ?? []).length > savedBefore;
    if (hit) {
      if (delayMs > 0) await sleep(delayMs);
      return true;
    }
    await sleep(1);
  }
  return false;
}

/** The state that makes snapshots big: every big key written once, acknowledged (8 writers). */
async function writeBigKeys(c: Client, ledger: Ledger, big: string[]): Promise<void> {
  await Promise.all(Array.from({ length: 8 }, async (_, w) => {
    for (let k = w; k < bigKeys; k += 8) await ledger.putSeq(c, big[k]!, `/v1/kv/${big[k]!}`, bigValue(big[k]!, 'init'), undefined);
  }));
}

/**
 * Where a round's kill aims. A .tmp lives about 40-60 ms here (8 MB written, synced, renamed). Early
 * delays land inside the write, late ones around the rename and the pruning; the first and, if nothing
 * has hit yet (`killsWithTmp`), the last round aim early so every run kills at least once mid-write.
 */
function killPoint(rng: Rng, round: number, killsWithTmp: number) {
  const forceEarly = round === 0 || (round === rounds - 1 && killsWithTmp === 0);
  const phase = forceEarly ? 'early' : rng.pick(['early', 'early', 'late', 'saved'] as const);
  const how: Aim = phase === 'saved' ? 'snapshot-saved' : 'tmp-appears';
  const delayMs = phase === 'early' ? rng.int(0, forceEarly ? 10 : 30) : phase === 'late' ? rng.int(30, 90) : rng.int(0, 5);
  return { phase, how, delayMs };
}

describe('crash safety of the embedded log', () => {
  test('SIGKILL at seeded random points of a mixed write load, round after round on one data dir', async () => {
    const rng = root.child('write-load');
    const dir = dataDir();
    const ledger = new Ledger('crash/');
    const totals = { rounds: 0, acked: 0, inflight: 0, verified: 0, inflightApplied: 0, inflightAbsent: 0, tornTails: 0 };
    for (let round = 0; round <= rounds; round++) {
      const agent = await start(dir);
      const c = client(agent);
      if (round > 0) {
        const v = await ledger.verify(c);
        expect(v.violations, `round ${round} (seed ${seed})`).toEqual([]);
        totals.verified = v.verified;
        totals.inflightApplied += v.inflightApplied;
        totals.inflightAbsent += v.inflightAbsent;
        totals.tornTails += tornTailsIn(agent);
      }
      // It serves writes again, at an index past everything seen before the kill.
      await ledger.putUnique(c, `crash/alive/r${round}`, `alive-${round}`);
      const alive = (await readKv(c, `crash/alive/r${round}`)).entries.get(`crash/alive/r${round}`);
      expect(alive?.modifyIndex).toBeGreaterThan(ledger.indexSeen);
      if (round === rounds) {
        await agent.kill9();
        break;
      }

      const writers = rng.int(3, 8);
      const killAfterMs = rng.int(50, 1500);
      let stop = false;
      const stopped = () => stop;
      const sessions: string[] = [];
      for (let w = 0; w < writers; w++) sessions.push((await ledger.createSession(c, `crash-holder-r${round}-w${w}`))!);
      const before = { acked: ledger.acked, attempted: ledger.attempted };
      const load = [
        ...sessions.map((s, w) => writer(c, ledger, rng.child(`r${round}w${w}`), round, w, s, stopped)),
        watchIndex(c, ledger, stopped),
      ];
      await sleep(killAfterMs);
      await agent.kill9();
      stop = true;
      await Promise.all(load);
      const acked = ledger.acked - before.acked;
      const inflight = ledger.attempted - before.attempted - acked;
      totals.rounds += 1;
      totals.acked += acked;
      totals.inflight += inflight;
      report('write load', { round, writers, killAfterMs, acked, inflight });
    }
    expect(ledger.anomalies).toEqual([]);
    report('write load', { seed, ...totals });
    expect(totals.acked).toBeGreaterThan(0);
  }, budgetMs(30_000, 10_000));

  test('SIGKILL while snapshots are written: no acknowledged write lost, no .tmp applied, the agent starts', async () => {
    const rng = root.child('snapshots');
    const dir = dataDir();
    const args = ['--snapshot-every', String(snapshotEvery)];
    const ledger = new Ledger('snap/');
    const big = Array.from({ length: bigKeys }, (_, k) => `snap/big/${k}`);
    const counters = Array.from({ length: 4 }, (_, w) => `snap/ctr/${w}`);
    const totals = { rounds: 0, acked: 0, inflight: 0, verified: 0, inflightApplied: 0, killsWithTmp: 0, tmpRemoved: 0, misses: 0, tornTails: 0 };
    let tmpAtLastKill: string[] = [];
    for (let round = 0; round <= rounds; round++) {
      const agent = await start(dir, args);
      const c = client(agent);
      if (round === 0) {
        await writeBigKeys(c, ledger, big);
      } else {
        const v = await ledger.verify(c);
        expect(v.violations, `round ${round} (seed ${seed})`).toEqual([]);
        expect(snapNames(dir).filter((n) => n.endsWith('.tmp')), 'a .tmp left after recovery').toEqual([]);
        totals.verified = v.verified;
        totals.inflightApplied += v.inflightApplied;
        // Recovery removed exactly the unfinished snapshots the kill left (and loaded none of them).
        const removed = logLines(agent.output()).filter((l) => /removed an unfinished snapshot/.test(l.msg ?? ''));
        expect(removed.map((l) => basename(String(l.file)))).toEqual(tmpAtLastKill);
        totals.tmpRemoved += removed.length;
        totals.tornTails += tornTailsIn(agent);
      }
      if (round === rounds) {
        await agent.kill9();
        break;
      }

      const { phase, how, delayMs } = killPoint(rng, round, totals.killsWithTmp);
      let stop = false;
      const stopped = () => stop;
      const before = { acked: ledger.acked, attempted: ledger.attempted };
      const load = [
        ...counters.map((key, w) => overwriter(c, ledger, rng.child(`r${round}c${w}`), [key], false, `r${round}`, stopped)),
        ...[0, 1].map((h) => overwriter(c, ledger, rng.child(`r${round}b${h}`), big.filter((_, k) => k % 2 === h), true, `r${round}`, stopped)),
        watchIndex(c, ledger, stopped),
      ];
      const hit = await aim(agent, how, delayMs, 5_000);
      await agent.kill9();
      stop = true;
      await Promise.all(load);
      const atKill = snapNames(dir);
      const tmpAtKill = atKill.filter((n) => n.endsWith('.tmp'));
      tmpAtLastKill = tmpAtKill;
      // A kill is not a power loss: a .snap exists only once renamed from a synced, whole .tmp.
      for (const n of atKill.filter((x) => x.endsWith('.snap'))) expect(snapshotIsWhole(join(dir, 'snap', n)), `${n} at the kill`).toBe(true);
      const acked = ledger.acked - before.acked;
      totals.rounds += 1;
      totals.acked += acked;
      totals.inflight += ledger.attempted - before.attempted - acked;
      totals.killsWithTmp += tmpAtKill.length > 0 ? 1 : 0;
      totals.misses += hit ? 0 : 1;
      report('snapshots', { round, phase, delayMs, hit, acked, snapDirAtKill: atKill });
    }
    expect(ledger.anomalies).toEqual([]);
    report('snapshots', { seed, ...totals });
    expect(totals.acked).toBeGreaterThan(0);
    // The point of the test: some kill found an unfinished snapshot on disk, and recovery removed it.
    expect(totals.killsWithTmp).toBeGreaterThan(0);
    expect(totals.tmpRemoved).toBe(totals.killsWithTmp);
  }, budgetMs(30_000, 12_000));
});
