/**
 * One agent per data dir. Node has no flock, so the lock is `<dir>/LOCK`, a symbolic link whose target
 * is the holder, `<pid>:<startTicks>:<host>` (not a path). It is removed when the process exits (any
 * exit that runs Node's `exit` handlers: a signal handled, a fatal error, process.exit).
 *
 * A symlink because symlink() creates the name and its content in one step and fails when the name
 * exists: the lock appears atomically, never empty or half written (another starter would judge such a
 * lock unreadable, so stale); and a short target is kept in the inode, so an agent starts on a full disk
 * (tmpfs and ext4 keep targets that short without a data block). A regular file holding
 * `{"pid","startTicks","host"}` (older versions) is read too.
 *
 * A lock left behind by a process that died without exiting (SIGKILL, power loss) is stale: its pid no
 * longer runs, or runs a different process (pid reuse, told apart by the process's start time, field
 * 22 of /proc/<pid>/stat). Replacing it is where two starters could both win (both judge it stale, one
 * replaces it, the other then removes the new lock), so takeovers of one stale lock are serialized: see
 * `replaceStale`. A live lock refuses the start.
 */
import { createHash } from 'node:crypto';
import { readFileSync, readlinkSync, renameSync, symlinkSync, unlinkSync } from 'node:fs';
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
  /**
   * Takes the lock again in a data dir made again after it was removed while the agent ran: kept when
   * the lock still names this process, taken as at start otherwise (DataDirLocked when another live
   * agent holds it now).
   */
  reclaim(): void;
}

/** Attempts to take the lock before giving up: another starter may be taking it over at the same moment. */
const takeoverAttemptsMax = 3;

/** Levels of abandoned takeover guards (a taker that died mid-takeover) taken over in turn. */
const guardDepthMax = 4;

/** Test seams: another holder identity, and a hook at each step of a takeover (to interleave a rival). */
export interface LockOptions {
  holder?: LockHolder;
  onStep?: (step: 'judged-stale' | 'guard-taken' | 'verified') => void;
}

/** Takes the lock of `dir` (which must exist) for this process's lifetime, or throws DataDirLocked. */
export function lockDataDir(dir: string, o: LockOptions = {}): DataDirLock {
  const path = join(dir, lockFileName);
  const me: LockHolder = o.holder ?? { pid: process.pid, startTicks: startTicksOf(process.pid), host: hostname() };
  const text = holderText(me);
  take(dir, path, text, o);
  return held(dir, path, text, o);
}

function take(dir: string, path: string, text: string, o: LockOptions): void {
  let rival: LockHolder | undefined;
  for (let attempt = 0; attempt < takeoverAttemptsMax; attempt++) {
    if (createExclusive(path, text)) return;
    const seen = readLock(path);
    if (seen === undefined) continue; // released between our create and our read: try again
    const holder = parseHolder(seen);
    if (holder !== undefined && isAlive(holder)) throw new DataDirLocked(dir, holder);
    // Stale (or unreadable: a file an older version crashed while writing).
    o.onStep?.('judged-stale');
    const outcome = replaceStale(path, seen, text, guardDepthMax, o);
    if (outcome === true) return;
    rival = outcome ?? rival;
  }
  const holder = parseHolder(readLock(path) ?? '');
  throw new DataDirLocked(dir, holder !== undefined && isAlive(holder) ? holder : rival ?? holder ?? { pid: 0 });
}

/** What keepLock tells. */
export interface LockKeeping {
  /** Another live agent holds the lock by now: two agents write one log. Told once; the keeping stops. */
  taken: (err: DataDirLocked) => void;
  /**
   * The data dir itself is gone (removed, or moved away). Without it the dir is left to the log, which
   * makes it again and takes the lock then. Not called again while one call runs.
   */
  gone?: () => Promise<void>;
}

/**
 * Keeps the lock while the agent runs. Once every `everyMs` it is taken again if it was removed (by hand,
 * taken for a stale one), so that an agent started on the dir afterwards is refused. The timer does not
 * keep the process alive.
 */
export function keepLock(lock: DataDirLock, keeping: LockKeeping, everyMs = 1000): void {
  let remaking = false;
  const timer = setInterval(() => {
    try {
      lock.reclaim();
    } catch (err) {
      if (err instanceof DataDirLocked) {
        clearInterval(timer);
        keeping.taken(err);
      } else if (keeping.gone !== undefined && !remaking) {
        remaking = true;
        void keeping.gone().finally(() => { remaking = false; });
      }
    }
  }, everyMs);
  timer.unref();
}

function held(dir: string, path: string, text: string, o: LockOptions): DataDirLock {
  const lock = {
    path, release: () => releaseIfOurs(path, text),
    reclaim: () => { if (readLock(path) !== text) take(dir, path, text, o); },
  };
  process.once('exit', lock.release);
  return lock;
}

/**
 * Replaces `path`, found holding `stale`, with our text, only while it still holds `stale`. Takers of
 * one stale content are serialized by a guard named after that content (`<path>.takeover-<hash>`),
 * created exclusively with our text: only the guard's holder may replace `path`. It checks that `path`
 * still holds `stale` — nobody can change it after that check: its writer is dead and every other taker
 * of that content needs the guard — then renames the guard (holding our text) onto `path`, atomically.
 * A later taker that judged the same content stale gets the guard name again but finds `path` changed,
 * and drops its guard. A guard left by a taker that died holding it is stale in turn and taken over the
 * same way one level down (at most `depth` levels).
 *
 * True when `path` now holds our text; else the live taker in the way, if one was seen.
 */
function replaceStale(path: string, stale: string, text: string, depth: number, o: LockOptions): true | LockHolder | undefined {
  const guard = `${path}.takeover-${createHash('sha256').update(stale).digest('hex').slice(0, 16)}`;
  if (!createExclusive(guard, text)) {
    const seen = readLock(guard);
    if (seen === undefined) return undefined; // its taker is done: look at the lock again
    const taker = parseHolder(seen);
    if (taker !== undefined && isAlive(taker)) return taker;
    if (depth <= 1) return undefined;
    const outcome = replaceStale(guard, seen, text, depth - 1, o);
    if (outcome !== true) return outcome;
  }
  o.onStep?.('guard-taken');
  if (readLock(path) !== stale) {
    if (readLock(guard) === text) removeQuietly(guard);
    return undefined;
  }
  o.onStep?.('verified');
  renameSync(guard, path);
  return true;
}

/** True when this call created `path` holding `text`; false when `path` exists. Other errors propagate. */
function createExclusive(path: string, text: string): boolean {
  try {
    symlinkSync(text, path);
    return true;
  } catch (err) {
    if ((err as NodeJS.ErrnoException).code === 'EEXIST') return false;
    throw err;
  }
}

/** The holder text of the lock at `path` (a symlink's target, or an older version's file); undefined when absent. */
export function readLock(path: string): string | undefined {
  try {
    return readlinkSync(path, 'utf8');
  } catch (err) {
    const code = (err as NodeJS.ErrnoException).code;
    if (code === 'ENOENT') return undefined;
    if (code !== 'EINVAL') throw err; // EINVAL: not a symlink
  }
  try {
    return readFileSync(path, 'utf8');
  } catch (err) {
    if ((err as NodeJS.ErrnoException).code === 'ENOENT') return undefined;
    throw err;
  }
}

/** Holds the host name to 32 characters: the whole target then stays short enough to live in the inode. */
function holderText(h: LockHolder): string {
  return `${h.pid}:${h.startTicks ?? ''}:${(h.host ?? '').slice(0, 32)}`;
}

export function parseHolder(text: string): LockHolder | undefined {
  const m = /^(\d+):(\d*):(.*)$/s.exec(text);
  if (m !== null) {
    const pid = Number(m[1]);
    if (!Number.isSafeInteger(pid) || pid <= 0) return undefined;
    return { pid, ...(m[2] !== '' ? { startTicks: Number(m[2]) } : {}), ...(m[3] !== '' ? { host: m[3] } : {}) };
  }
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
