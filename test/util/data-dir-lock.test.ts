// Goal: two starters taking over the same stale data-dir lock never both hold it. The race needs two
// starters interleaved inside a few synchronous file operations, which two started agents cannot be
// made to hit reliably; so here one takeover runs a whole rival takeover at each of its steps (the
// module's test seam), with holder identities of two live processes, and exactly one of them must hold
// the lock afterwards. Also: a guard left by a taker that died mid-takeover does not block the next start;
// a holder in another PID namespace or on another host is judged by its heartbeat (the lock's mtime).
import { spawn, type ChildProcess } from 'node:child_process';
import { createHash } from 'node:crypto';
import { lstatSync, lutimesSync, mkdirSync, mkdtempSync, readdirSync, readFileSync, rmSync, symlinkSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, test, vi } from 'vitest';
import { DataDirLocked, DataDirUnusable, heartbeatStaleMs, keepLock, lockDataDir, lockFileName, parseHolder, readLock, startTicksOf, type LockHolder } from '../../src/util/data-dir-lock.ts';

const sleepers: ChildProcess[] = [];
let holderA: LockHolder;
let holderB: LockHolder;
const dirs: string[] = [];

/** A holder identity of a live process of ours (a `sleep`), so the lock module judges it alive. */
function liveHolder(): LockHolder {
  const proc = spawn('sleep', ['600'], { stdio: 'ignore' });
  sleepers.push(proc);
  return { pid: proc.pid!, startTicks: startTicksOf(proc.pid!), host: 'test' };
}

/** A holder that no longer runs: a pid that cannot be live with start time 1. */
const dead = (pid: number): string => `${JSON.stringify({ pid, startTicks: 1, host: 'gone' })}\n`;

function staleDir(): string {
  const dir = mkdtempSync(join(tmpdir(), 'roster-lock-'));
  dirs.push(dir);
  writeFileSync(join(dir, lockFileName), dead(2 ** 22 + 7));
  return dir;
}

/** Takes the lock as `holder`: 'held' or 'refused' (DataDirLocked). */
function take(dir: string, holder: LockHolder, onStep?: (step: string) => void): 'held' | 'refused' {
  try {
    lockDataDir(dir, { holder, ...(onStep ? { onStep } : {}) });
    return 'held';
  } catch (err) {
    if (err instanceof DataDirLocked) return 'refused';
    throw err;
  }
}

beforeAll(() => {
  holderA = liveHolder();
  holderB = liveHolder();
});
afterAll(() => {
  for (const p of sleepers) p.kill('SIGKILL');
  for (const d of dirs) rmSync(d, { recursive: true, force: true });
});

describe('taking over a stale lock', () => {
  test.each(['judged-stale', 'guard-taken', 'verified'])('a rival taking it over while one takeover is at "%s": exactly one holds it', (at) => {
    const dir = staleDir();
    let rival: 'held' | 'refused' | undefined;
    const first = take(dir, holderA, (step) => {
      if (step === at && rival === undefined) rival = take(dir, holderB);
    });
    expect(rival, `the rival ran at ${at}`).toBeDefined();
    expect([first, rival].sort()).toEqual(['held', 'refused']);
    const winner = first === 'held' ? holderA : holderB;
    expect(parseHolder(readLock(join(dir, lockFileName))!)?.pid).toBe(winner.pid);
    expect(readdirSync(dir)).toEqual([lockFileName]);
  });

  test('a guard left by a taker that died mid-takeover is taken over in turn; nothing is left behind', () => {
    const dir = staleDir();
    const stale = readFileSync(join(dir, lockFileName), 'utf8');
    const guard = `${lockFileName}.takeover-${createHash('sha256').update(stale).digest('hex').slice(0, 16)}`;
    writeFileSync(join(dir, guard), dead(2 ** 22 + 9));
    expect(take(dir, holderA)).toBe('held');
    expect(parseHolder(readLock(join(dir, lockFileName))!)?.pid).toBe(holderA.pid);
    expect(readdirSync(dir)).toEqual([lockFileName]);
    expect(take(dir, holderB)).toBe('refused');
  });
});

describe('taking the lock again in a data dir made again', () => {
  test('keepLock: a removed dir is told to `gone` (one call at a time) and the lock is kept after it; a rival holder to `taken`', async () => {
    const dir = mkdtempSync(join(tmpdir(), 'roster-lock-'));
    dirs.push(dir);
    const lock = lockDataDir(dir, { holder: holderA });
    const mine = readLock(join(dir, lockFileName));
    const told: string[] = [];
    let finishGone = () => {};
    keepLock(lock, {
      taken: (err) => void told.push(`taken by ${err.holder.pid}`),
      gone: () => new Promise<void>((resolve) => {
        told.push('gone');
        finishGone = () => { mkdirSync(dir, { recursive: true }); lock.reclaim(); resolve(); };
      }),
    }, 20);
    rmSync(dir, { recursive: true, force: true });
    await vi.waitFor(() => expect(told).toEqual(['gone']));
    await new Promise((r) => setTimeout(r, 100));
    expect(told).toEqual(['gone']); // not again while the first call runs
    finishGone();
    expect(readLock(join(dir, lockFileName))).toBe(mine);
    rmSync(join(dir, lockFileName));
    await vi.waitFor(() => expect(readLock(join(dir, lockFileName))).toBe(mine));
    rmSync(join(dir, lockFileName));
    expect(take(dir, holderB)).toBe('held');
    await vi.waitFor(() => expect(told).toEqual(['gone', `taken by ${holderB.pid}`]));
  });


  test('kept while it names this holder, made again once removed, refused when another live agent took it', () => {
    const dir = mkdtempSync(join(tmpdir(), 'roster-lock-'));
    dirs.push(dir);
    const lock = lockDataDir(dir, { holder: holderA });
    const mine = readLock(join(dir, lockFileName));
    lock.reclaim();
    expect(readLock(join(dir, lockFileName))).toBe(mine);
    rmSync(join(dir, lockFileName));
    lock.reclaim();
    expect(readLock(join(dir, lockFileName))).toBe(mine);
    rmSync(join(dir, lockFileName));
    expect(take(dir, holderB)).toBe('held');
    expect(() => lock.reclaim()).toThrow(DataDirLocked);
    expect(parseHolder(readLock(join(dir, lockFileName))!)?.pid).toBe(holderB.pid);
    // Released by this process only while it is still its own: the other agent's lock stays.
    lock.release();
    expect(parseHolder(readLock(join(dir, lockFileName))!)?.pid).toBe(holderB.pid);
  });
});

test('a holder that exited but is not yet reaped (a zombie) is stale: its lock is taken over', async () => {
  // `sleep 600` is exec'd over the shell and never waits: the background `sleep 0.3` it inherits, which ends
  // after the shell is gone (a shell still there could reap it), stays a zombie.
  const parent = spawn('sh', ['-c', 'sleep 0.3 & echo $!; exec sleep 600'], { stdio: ['ignore', 'pipe', 'ignore'] });
  sleepers.push(parent);
  const pid = Number(await new Promise<string>((res) => parent.stdout!.once('data', (d: Buffer) => res(d.toString().trim()))));
  await vi.waitFor(() => expect(readFileSync(`/proc/${pid}/stat`, 'utf8')).toMatch(/\) Z /));
  const dir = mkdtempSync(join(tmpdir(), 'roster-lock-zombie-'));
  dirs.push(dir);
  lockDataDir(dir, { holder: { pid, startTicks: startTicksOf(pid), host: 'test' } });
  expect(take(dir, holderA)).toBe('held');
  expect(parseHolder(readLock(join(dir, lockFileName))!)?.pid).toBe(holderA.pid);
});

describe('a holder whose pid says nothing here (another PID namespace, another host)', () => {
  /** A lock naming pid 1 of a namespace this process is not in, as another container's agent writes it. */
  const foreign = (dir: string) => symlinkSync(`1:${startTicksOf(process.pid) ?? ''}:4026539999:other-box`, join(dir, lockFileName));
  const freshDir = () => {
    const dir = mkdtempSync(join(tmpdir(), 'roster-lock-ns-'));
    dirs.push(dir);
    return dir;
  };

  test('is live while its heartbeat moves: refused, however long ago it took the lock', async () => {
    const dir = freshDir();
    foreign(dir);
    const old = new Date(Date.now() - 60_000);
    lutimesSync(join(dir, lockFileName), old, old);
    // Another process beats for it: sets the mtime every 300 ms.
    const beater = spawn(process.execPath, ['-e', `const fs=require('fs');setInterval(()=>{const t=new Date();fs.lutimesSync(${JSON.stringify(join(dir, lockFileName))},t,t)},300)`], { stdio: 'ignore' });
    sleepers.push(beater);
    try {
      await vi.waitFor(() => expect(Date.now() - lstatSync(join(dir, lockFileName)).mtimeMs).toBeLessThan(1000), { timeout: 5000 });
      const started = Date.now();
      expect(take(dir, { pid: process.pid, startTicks: startTicksOf(process.pid), pidNs: 4026530001, host: 'this-box' })).toBe('refused');
      expect(Date.now() - started).toBeLessThan(heartbeatStaleMs);
    } finally {
      beater.kill('SIGKILL');
    }
  });

  test('is stale once its heartbeat has been still for the stale time: taken over, at once when it is older', () => {
    const dir = freshDir();
    foreign(dir);
    const old = new Date(Date.now() - heartbeatStaleMs - 1000);
    lutimesSync(join(dir, lockFileName), old, old);
    const started = Date.now();
    expect(take(dir, holderA)).toBe('held');
    expect(Date.now() - started).toBeLessThan(1000);
    // A lock just left by a holder that died: taken over once it has been still for the stale time.
    const second = freshDir();
    foreign(second);
    const t0 = Date.now();
    expect(take(second, holderB)).toBe('held');
    expect(Date.now() - t0).toBeGreaterThanOrEqual(heartbeatStaleMs - 200);
  });

  test('keepLock beats: the held lock\'s mtime moves every interval', async () => {
    const dir = freshDir();
    const lock = lockDataDir(dir);
    const old = new Date(Date.now() - 60_000);
    lutimesSync(join(dir, lockFileName), old, old);
    keepLock(lock, { taken: () => {} }, 50);
    await vi.waitFor(() => expect(Date.now() - lstatSync(join(dir, lockFileName)).mtimeMs).toBeLessThan(1000));
    lock.release();
  });
});

test('a lock that cannot be taken for the filesystem\'s reason is named plainly: a directory in its place', () => {
  const dir = mkdtempSync(join(tmpdir(), 'roster-lock-dir-'));
  dirs.push(dir);
  mkdirSync(join(dir, lockFileName));
  expect(() => lockDataDir(dir)).toThrow(new DataDirUnusable(dir, join(dir, lockFileName), 'EISDIR'));
  expect(new DataDirUnusable(dir, join(dir, lockFileName), 'EISDIR').message).toBe(`--data-dir ${dir}: cannot take its lock ${join(dir, lockFileName)}: LOCK is a directory: remove it`);
});
