// Goal: damage on disk is detected and never applied, against real agent processes: a torn last
// commit is cut, damage to an acknowledged commit stops the agent with the file and offset, a damaged
// snapshot is skipped for the one before it. Kills under load are in wal-crash.test.ts.
//
// Replay a run: ROSTER_FAULT_SEED=<seed printed below>; soak: ROSTER_FAULT_ROUNDS=<n>.
import { cpSync, existsSync, readFileSync, rmSync, truncateSync, writeFileSync } from 'node:fs';
import { basename, join } from 'node:path';
import { describe, expect, test } from 'vitest';
import { client, sleep, startAgent, type Agent } from '../support/agent.ts';
import { readKv, type Client } from './wal-crash-ledger.ts';
import { faultRun, valueOf } from './wal-crash-run.ts';
import {
  encodeFrame, exitCodeOf, flipBytes, logLines, readFrames, report, segmentPaths, snapNames, type Rng,
} from './wal-crash-support.ts';

const { seed, rounds, root, budgetMs, dataDir, start, track } = faultRun('test/faults/wal-crash-damage.test.ts');

// ---- 3. torn tails and flipped bytes put on disk by hand --------------------------------------

/** Damage cases of each kind per run (the soak knob scales them too). */
const damageCases = Math.max(2, Math.ceil(rounds / 4));

interface WalBase {
  dir: string;
  /** The segment, relative to the data dir. */
  seg: string;
  /** Every key the clients wrote, with its acknowledged value (each key written once). */
  values: Map<string, string>;
  /** The whole commit frames on disk, and the keys each one set. */
  frames: { start: number; end: number; keys: string[]; last: number }[];
}

let walBase: Promise<WalBase> | undefined;

/**
 * A data dir of acknowledged writes, one commit each (sequential PUTs of unique keys, sizes from a
 * few bytes to several pages), left by SIGKILL with no snapshot: every case below damages a copy.
 */
function buildWalBase(): Promise<WalBase> {
  walBase ??= (async () => {
    const rng = root.child('wal-base');
    const dir = dataDir();
    const agent = await start(dir);
    const c = client(agent);
    const values = new Map<string, string>();
    for (let i = 0; i < 40; i++) {
      const key = `dmg/k${i}`;
      const value = valueOf(`dmg-${i}`, rng.int(0, 9000));
      expect((await c.put(`/v1/kv/${key}`, value)).text).toBe('true');
      values.set(key, value);
    }
    await agent.kill9();
    const [segPath, ...more] = segmentPaths(dir);
    expect(more).toEqual([]);
    const frames = readFrames(segPath!).map((f) => ({
      start: f.start, end: f.end, last: f.entries.at(-1)!.i,
      keys: f.entries.filter((e) => e.c.t === 'kv.set').map((e) => e.c.key!),
    }));
    // The last commit is the last acknowledged PUT alone: what the truncation cases drop.
    expect(frames.at(-1)!.keys).toEqual(['dmg/k39']);
    return { dir, seg: segPath!.slice(dir.length + 1), values, frames };
  })();
  return walBase;
}

function copyOf(base: { dir: string }): string {
  const dir = dataDir();
  cpSync(base.dir, dir, { recursive: true });
  return dir;
}

/** The restarted agent serves exactly `expected` under `prefix`: each value whole, nothing else. */
async function expectKv(c: Client, prefix: string, expected: Map<string, string>, why: string): Promise<void> {
  const { entries } = await readKv(c, prefix);
  const got = new Map([...entries].map(([k, v]) => [k, v.value]));
  const wrong = [...new Set([...got.keys(), ...expected.keys()])].filter((k) => got.get(k) !== expected.get(k));
  expect(wrong, why).toEqual([]);
}

/** A commit nobody was told about, for index `index`: its key must never show up. */
function ghostCommit(index: number, bytes: number): Buffer {
  const value = Buffer.from(valueOf('ghost', bytes)).toString('base64');
  return encodeFrame(JSON.stringify([{ i: index, t: Date.now(), p: 'ghost-1', c: { t: 'kv.set', key: 'dmg/ghost', value, flags: '0' } }]));
}

// A whole commit on disk with flipped bytes is not what a crash leaves: recovery takes it as an
// acknowledged commit damaged afterwards and refuses (the flipped-bytes test below covers the last commit).
// Nor is a file that ends inside a commit: the WAL writes its zeros past a commit before the commit, so a
// crash leaves them after it; the truncation test below is refused.
type TornKind = 'unacknowledged commit cut short' | 'unacknowledged commit with a lost page';
const tornKinds: TornKind[] = ['unacknowledged commit cut short', 'unacknowledged commit with a lost page'];

/** Puts a torn tail on the segment; returns the offset recovery must cut at and the keys that must vanish. */
function tear(path: string, base: WalBase, kind: TornKind, rng: Rng): { cutAt: number; dropped: string[]; detail: string } {
  const last = base.frames.at(-1)!;
  // A commit in flight at a crash: written (in part) after the last acknowledged one, over the zeros the WAL
  // wrote and synced before it, past its end too (the file grown as the WAL grows it for a large commit).
  const ghost = ghostCommit(last.last + 1, rng.int(9000, 20000));
  const file = readFileSync(path);
  const buf = Buffer.concat([file, Buffer.alloc(Math.max(0, last.end + ghost.length + 1024 * 1024 - file.length))]);
  let detail: string;
  if (kind === 'unacknowledged commit cut short') {
    const n = rng.int(1, ghost.length - 1);
    ghost.copy(buf, last.end, 0, n);
    detail = `${n} of ${ghost.length} bytes landed`;
  } else {
    ghost.copy(buf, last.end);
    const pages = [];
    for (let p = Math.floor(last.end / 4096) * 4096; p < last.end + ghost.length; p += 4096) pages.push(p);
    const page = rng.pick(pages);
    buf.fill(0, Math.max(page, last.end), page + 4096);
    detail = `page ${page} lost (commit ${last.end}..${last.end + ghost.length})`;
  }
  writeFileSync(path, buf);
  return { cutAt: last.end, dropped: ['dmg/ghost'], detail };
}

describe('damage on disk is detected, never applied', () => {
  test('a torn tail is cut at its commit: exactly that commit is dropped, every earlier one is served whole', async () => {
    const rng = root.child('torn');
    const base = await buildWalBase();
    let cases = 0;
    for (let n = 0; n < damageCases; n++) {
      for (const kind of tornKinds) {
        const dir = copyOf(base);
        const seg = join(dir, base.seg);
        const { cutAt, dropped, detail } = tear(seg, base, kind, rng.child(`${n}-${kind}`));
        const agent = await start(dir);
        const why = `${kind}: ${detail} (seed ${seed})`;
        // Recovery says what it cut, where: the start of the torn commit, nothing before it.
        const cut = logLines(agent.output()).filter((l) => /truncated a torn last commit/.test(l.msg ?? ''));
        expect(cut.map((l) => [basename(String(l.file)), l.offset]), why).toEqual([[basename(seg), cutAt]]);
        const expected = new Map([...base.values].filter(([k]) => !dropped.includes(k)));
        await expectKv(client(agent), 'dmg/', expected, why);
        // It serves writes again, and the log on disk goes on with whole commits at consecutive indexes.
        expect((await client(agent).put('/v1/kv/dmg/after', 'after')).text).toBe('true');
        await agent.kill9();
        const indexes = readFrames(seg).flatMap((f) => f.entries.map((e) => e.i));
        expect(indexes, why).toEqual(indexes.map((_, k) => k + 1));
        report('torn tail', { kind, detail, cutAt, dropped: dropped.length, kept: expected.size });
        rmSync(dir, { recursive: true, force: true });
        cases += 1;
      }
    }
    report('torn tail', { seed, cases, commitsInBase: base.frames.length });
  }, budgetMs(20_000, 3 * 4_000, damageCases));

  test('a segment truncated inside its last commit: the agent refuses to start (exit 2), naming file and offset, and leaves it alone', async () => {
    const rng = root.child('truncated');
    const base = await buildWalBase();
    for (let n = 0; n < damageCases; n++) {
      const dir = copyOf(base);
      const seg = join(dir, base.seg);
      const last = base.frames.at(-1)!;
      // At least one byte of the commit stays (every other case inside its header): a cut at its very start
      // is a commit boundary, refused as well (test/http/log-end-cut.test.ts).
      const at = rng.int(last.start + 1, n % 2 === 0 ? last.start + 7 : last.end - 1);
      truncateSync(seg, at);
      const why = `truncated at ${at} (frame ${last.start}..${last.end}, seed ${seed})`;
      const err: unknown = await startAgent({ dataDir: dir }).then(async (a) => { track(a); return undefined; }, (e: unknown) => e);
      expect(exitCodeOf(err), why).toBe(2);
      expect((err as Error).message, why).toContain(`the last segment ${seg} ends inside a commit at offset ${last.start}`);
      expect(readFileSync(seg).length, why).toBe(at);
      report('truncated last commit', { at, frame: `${last.start}..${last.end}`, exit: 2 });
      rmSync(dir, { recursive: true, force: true });
    }
  }, budgetMs(20_000, 4_000, damageCases));

  test('flipped bytes in an acknowledged commit: the agent refuses to start, naming file and offset, and leaves the file alone', async () => {
    const rng = root.child('flipped');
    const base = await buildWalBase();
    for (let n = 0; n < damageCases * 3; n++) {
      const dir = copyOf(base);
      const seg = join(dir, base.seg);
      const buf = readFileSync(seg);
      // Any commit, the last one too: each was acknowledged (the base has no snapshot holding any).
      const k = rng.int(0, base.frames.length - 1);
      const frame = base.frames[k]!;
      // Every other case hits the header (length or crc field), the rest anywhere in the commit.
      const headerOnly = n % 2 === 1;
      const flipped = flipBytes(buf, frame.start, headerOnly ? frame.start + 8 : frame.end, rng.int(1, 4), rng);
      writeFileSync(seg, buf);
      const why = `commit ${k} at ${frame.start}..${frame.end}, bytes ${flipped.join(',')} flipped (seed ${seed})`;
      const err: unknown = await startAgent({ dataDir: dir }).then(
        async (a) => { track(a); return undefined; },
        (e: unknown) => e,
      );
      expect(err, `the agent started on ${why}`).toBeInstanceOf(Error);
      const code = exitCodeOf(err);
      expect(code, why).toBeDefined();
      expect(code, why).not.toBe(0);
      const message = (err as Error).message;
      expect(message, why).toContain(`corrupt commit frame in ${seg} at offset ${frame.start}:`);
      expect(message, why).toMatch(/refusing to open, acknowledged entries would be lost/);
      // Refusing means touching nothing: the damaged segment is byte for byte what it was, and
      // (first cases) with the bytes put back the agent starts and serves every acknowledged write.
      expect(readFileSync(seg).equals(buf), why).toBe(true);
      if (n < 2) {
        cpSync(join(base.dir, base.seg), seg);
        const agent = await start(dir);
        await expectKv(client(agent), 'dmg/', base.values, `repaired: ${why}`);
        await agent.kill9();
      }
      report('flipped bytes', { commit: k, headerOnly, frame: `${frame.start}..${frame.end}`, flipped, exit: code, reason: /offset \d+: ([^;,]*)/.exec(message)?.[1] });
      rmSync(dir, { recursive: true, force: true });
    }
    report('flipped bytes', { seed, cases: damageCases * 3, refused: damageCases * 3 });
  }, budgetMs(20_000, 3 * 4_000, damageCases));

  test('a damaged newest snapshot is skipped for the one before it (+ the log); a whole-looking .tmp is never loaded', async () => {
    const rng = root.child('snapshot-damage');
    const base = await buildSnapshotBase();
    const [previous, newest] = base.snaps;
    const kinds = ['newest flipped', 'newest truncated', 'both flipped', 'forged .tmp beside them'] as const;
    for (const kind of kinds) {
      const dir = copyOf(base);
      const snap = (name: string) => join(dir, 'snap', name);
      let skipped: string[] = [];
      let forged: string | undefined;
      if (kind === 'newest flipped' || kind === 'both flipped') {
        const targets = kind === 'both flipped' ? [newest, previous] : [newest];
        for (const name of targets) {
          const buf = readFileSync(snap(name));
          flipBytes(buf, 0, buf.length, rng.int(1, 4), rng);
          writeFileSync(snap(name), buf);
        }
        skipped = targets;
      } else if (kind === 'newest truncated') {
        truncateSync(snap(newest), rng.int(0, readFileSync(snap(newest)).length - 1));
        skipped = [newest];
      } else {
        // What a kill between the fsync and the rename leaves, only with a different state in it:
        // were it loaded, the forged value would show.
        forged = `${newest}.tmp`;
        const payload = JSON.parse(readFileSync(snap(newest)).subarray(8).toString('utf8')) as { data: { kv: { key: string; value: string }[] } };
        for (const e of payload.data.kv) e.value = Buffer.from('FORGED').toString('base64');
        writeFileSync(snap(forged), encodeFrame(JSON.stringify(payload)));
      }
      const agent = await start(dir);
      const why = `${kind} (seed ${seed})`;
      const lines = logLines(agent.output());
      expect(lines.filter((l) => /skipping an invalid snapshot/.test(l.msg ?? '')).map((l) => basename(String(l.file))), why).toEqual(skipped);
      expect(lines.filter((l) => /removed an unfinished snapshot/.test(l.msg ?? '')).map((l) => basename(String(l.file))), why).toEqual(forged ? [forged] : []);
      expect(existsSync(snap(forged ?? 'none')), why).toBe(false);
      await expectKv(client(agent), 'snapdmg/', base.values, why);
      expect((await client(agent).put('/v1/kv/snapdmg-after', 'x')).text).toBe('true');
      report('snapshot damage', { kind, skipped, removedTmp: forged ?? null, keys: base.values.size });
      await agent.kill9();
      rmSync(dir, { recursive: true, force: true });
    }
    report('snapshot damage', { seed, cases: kinds.length, snapshots: base.snaps, walLast: base.walLast });
  }, 45_000);

  test('a damaged newest snapshot after a compaction: never applied; the agent serves every acknowledged write or refuses naming what is missing', async () => {
    const { dir, agent, err, base } = await startOnDamagedNewest(root.child('compacted-safe'));
    const why = `snapshots ${base.snaps.join(', ')}, oldest segment ${base.oldestSegment} (seed ${seed})`;
    if (agent !== undefined) {
      await expectKv(client(agent), 'compacted/', base.values, why);
    } else {
      expect(exitCodeOf(err), why).not.toBe(0);
      expect(err!.message, why).toMatch(/skipping an invalid snapshot/);
      expect(err!.message, why).toMatch(/entries \d+\.\.\d+ are missing: the oldest segment .* starts at \d+, the snapshot is at \d+/);
    }
    report('snapshot damage after compaction', { snapshots: base.snaps, oldestSegment: base.oldestSegment, outcome: agent ? 'fell back' : 'refused' });
    rmSync(dir, { recursive: true, force: true });
  }, 90_000);

  // Compaction keeps the log from the fallback snapshot on, so the fallback wal.ts keeps has the log
  // after it and a damaged newest snapshot does not stop the agent.
  test('a damaged newest snapshot after a compaction falls back to the previous snapshot + the log (the fallback wal.ts promises)', async () => {
    const { dir, agent, err, base } = await startOnDamagedNewest(root.child('compacted-fallback'));
    expect(err?.message, 'the agent refused to start').toBeUndefined();
    await expectKv(client(agent!), 'compacted/', base.values, `snapshots ${base.snaps.join(', ')}`);
    rmSync(dir, { recursive: true, force: true });
  }, 90_000);
});

let compactedBase: Promise<{ dir: string; values: Map<string, string>; snaps: [string, string]; oldestSegment: string }> | undefined;

/**
 * A data dir right after the first compaction: one key overwritten with ~0.5 MB values until the
 * 64 MiB segment rolls and the next snapshot deletes the first segment. The snapshot kept as the
 * fallback was taken before the roll, so the log it needs went with that segment.
 */
function buildCompactedBase(): NonNullable<typeof compactedBase> {
  compactedBase ??= (async () => {
    const dir = dataDir();
    const agent = await start(dir, ['--snapshot-every', '8']);
    const c = client(agent);
    const values = new Map<string, string>();
    const firstSegment = `${'1'.padStart(20, '0')}.seg`;
    // Bounded: 64 MiB of base64 values rolls the segment after about 100 writes.
    for (let i = 0; i < 300 && existsSync(join(dir, 'wal', firstSegment)); i++) {
      const value = valueOf(`big-${i}`, 500 * 1024);
      expect((await c.put('/v1/kv/compacted/big', value)).text).toBe('true');
      values.set('compacted/big', value);
    }
    expect(existsSync(join(dir, 'wal', firstSegment)), 'the first segment was never compacted').toBe(false);
    for (let i = 0; i < 100 && !(snapNames(dir).length === 2 && snapNames(dir).every((n) => n.endsWith('.snap'))); i++) await sleep(20);
    await agent.kill9();
    const snaps = snapNames(dir);
    expect(snaps).toHaveLength(2);
    return { dir, values, snaps: snaps as [string, string], oldestSegment: segmentPaths(dir).map((p) => basename(p))[0]! };
  })();
  return compactedBase;
}

/** Copies the compacted base, damages its newest snapshot, starts an agent: the agent, or why it would not start. */
async function startOnDamagedNewest(rng: Rng): Promise<{ dir: string; agent?: Agent; err?: Error; base: Awaited<ReturnType<typeof buildCompactedBase>> }> {
  const base = await buildCompactedBase();
  const dir = copyOf(base);
  const newest = join(dir, 'snap', base.snaps[1]);
  const buf = readFileSync(newest);
  flipBytes(buf, 0, buf.length, rng.int(1, 4), rng);
  writeFileSync(newest, buf);
  try {
    return { dir, base, agent: await start(dir) };
  } catch (err) {
    return { dir, base, err: err as Error };
  }
}

let snapshotBase: Promise<{ dir: string; values: Map<string, string>; snaps: [string, string]; walLast: number }> | undefined;

/**
 * A data dir with two snapshots (the newest and the fallback the WAL keeps) and log entries after
 * them: ten keys overwritten 120 times with --snapshot-every 8 (spacing is at least the state's size).
 */
function buildSnapshotBase(): NonNullable<typeof snapshotBase> {
  snapshotBase ??= (async () => {
    const rng = root.child('snapshot-base');
    const dir = dataDir();
    const agent = await start(dir, ['--snapshot-every', '8']);
    const c = client(agent);
    const values = new Map<string, string>();
    for (let i = 0; i < 120; i++) {
      const key = `snapdmg/k${i % 10}`;
      const value = valueOf(`snapdmg-${i}`, rng.int(0, 2000));
      expect((await c.put(`/v1/kv/${key}`, value)).text).toBe('true');
      values.set(key, value);
    }
    // Let the last snapshot finish (written, renamed, the one before the fallback pruned).
    for (let i = 0; i < 100 && !(snapNames(dir).length === 2 && snapNames(dir).every((n) => n.endsWith('.snap'))); i++) await sleep(20);
    await agent.kill9();
    const snaps = snapNames(dir);
    expect(snaps).toHaveLength(2);
    expect(snaps.every((n) => n.endsWith('.snap'))).toBe(true);
    const walLast = readFrames(segmentPaths(dir)[0]!).at(-1)!.entries.at(-1)!.i;
    expect(walLast).toBeGreaterThan(Number(snaps[1]!.slice(0, 20)));
    return { dir, values, snaps: snaps as [string, string], walLast };
  })();
  return snapshotBase;
}
