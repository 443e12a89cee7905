/**
 * One agent per data dir. Node has no flock, so the lock is a file, `<dir>/LOCK`, created with O_EXCL
 * and holding `{"pid","startTicks","host"}` of the agent that holds it. It is removed when the process
 * exits (any exit that runs Node's `exit` handlers: a signal handled, a fatal error, process.exit).
 *
 * A lock left behind by a process that died without exiting (SIGKILL, power loss) is stale: its pid no
 * longer runs, or runs a different process (pid reuse, told apart by the process's start time, field
 * 22 of /proc/<pid>/stat). A stale lock is replaced; a live one refuses the start.
 */
import { closeSync, openSync, readFileSync, unlinkSync, writeSync } from 'node:fs';
import { hostname } from 'node:os';
import { join } from 'node:path';

export const lockFileName = 'LOCK';

export interface LockHolder {
  pid: number;
  /** Start time of the process in clock ticks since boot (Linux); undefined where /proc is absent. */
  startTicks?: number;
  host?: string;
}

/** The data dir is held by a live process. */
export class DataDirLocked extends Error {
  constructor(readonly dir: string, readonly holder: LockHolder) {
    super(`--data-dir ${dir}: in use by another roster agent (pid ${holder.pid}${holder.host ? ` on ${holder.host}` : ''}); `
      + 'stop that agent first, or give this one another --data-dir');
  }
}

export interface DataDirLock {
  readonly path: string;
  /** Removes the lock file (only while it is still this process's). Idempotent. */
  release(): void;
}

/** Attempts to take over a stale lock before giving up: another starter may be replacing it at the same moment. */
const takeoverAttemptsMax = 3;

/** Takes the lock of `dir` (which must exist) for this process's lifetime, or throws DataDirLocked. */
export function lockDataDir(dir: string): DataDirLock {
  const path = join(dir, lockFileName);
  const me: LockHolder = { pid: process.pid, startTicks: startTicksOf(process.pid), host: hostname() };
  const text = `${JSON.stringify(me)}\n`;
  for (let attempt = 0; attempt < takeoverAttemptsMax; attempt++) {
    if (createExclusive(path, text)) {
      const lock = { path, release: () => releaseIfOurs(path, text) };
      process.once('exit', lock.release);
      return lock;
    }
    const seen = readLock(path);
    if (seen === undefined) continue; // removed between our create and our read: try again
    const holder = parseHolder(seen);
    if (holder !== undefined && isAlive(holder)) throw new DataDirLocked(dir, holder);
    // Stale (or unreadable: a crash while writing it). Remove it only if it is still the same file
    // content we judged, so a lock just taken by another starter is not removed.
    if (readLock(path) === seen) removeQuietly(path);
  }
  const holder = parseHolder(readLock(path) ?? '');
  throw new DataDirLocked(dir, holder ?? { pid: 0 });
}

/** True when this call created the file; false when it exists. Other errors propagate. */
function createExclusive(path: string, text: string): boolean {
  let fd: number;
  try {
    fd = openSync(path, 'wx', 0o644);
  } catch (err) {
    if ((err as NodeJS.ErrnoException).code === 'EEXIST') return false;
    throw err;
  }
  try {
    writeSync(fd, text);
  } catch (err) {
    // An empty lock would read as stale to the next starter: leave none (a full disk, say).
    closeSync(fd);
    removeQuietly(path);
    throw err;
  }
  closeSync(fd);
  return true;
}

function readLock(path: string): string | undefined {
  try {
    return readFileSync(path, 'utf8');
  } catch (err) {
    if ((err as NodeJS.ErrnoException).code === 'ENOENT') return undefined;
    throw err;
  }
}

function parseHolder(text: string): LockHolder | undefined {
  try {
    const v = JSON.parse(text) as Partial<LockHolder>;
    if (!Number.isSafeInteger(v.pid) || v.pid! <= 0) return undefined;
    return {
      pid: v.pid!,
      ...(Number.isSafeInteger(v.startTicks) ? { startTicks: v.startTicks } : {}),
      ...(typeof v.host === 'string' ? { host: v.host } : {}),
    };
  } catch {
    return undefined;
  }
}

/**
 * Whether the holder still runs: its pid exists (signal 0; EPERM means it exists under another user)
 * and, where both start times are known, it is the same process that wrote the lock.
 */
function isAlive(holder: LockHolder): boolean {
  if (holder.pid === process.pid) return false; // our own pid: a lock left by an earlier process that had it
  try {
    process.kill(holder.pid, 0);
  } catch (err) {
    if ((err as NodeJS.ErrnoException).code !== 'EPERM') return false;
  }
  const now = startTicksOf(holder.pid);
  return holder.startTicks === undefined || now === undefined || now === holder.startTicks;
}

/** Field 22 of /proc/<pid>/stat (the process start time, in clock ticks since boot); undefined without /proc. */
export function startTicksOf(pid: number): number | undefined {
  try {
    const stat = readFileSync(`/proc/${pid}/stat`, 'utf8');
    // Field 2 (the command name) is in parentheses and may hold spaces or parentheses itself.
    const fields = stat.slice(stat.lastIndexOf(')') + 2).split(' ');
    const ticks = Number(fields[22 - 3]);
    return Number.isSafeInteger(ticks) ? ticks : undefined;
  } catch {
    return undefined;
  }
}

function releaseIfOurs(path: string, text: string): void {
  try {
    if (readLock(path) === text) unlinkSync(path);
  } catch {
    // Exiting: nothing better to do; the next start sees the lock stale (this pid is gone).
  }
}

function removeQuietly(path: string): void {
  try {
    unlinkSync(path);
  } catch (err) {
    if ((err as NodeJS.ErrnoException).code !== 'ENOENT') throw err;
  }
}
