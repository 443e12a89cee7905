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
 *
 * A pid says something only within its PID namespace on its host: two containers sharing a volume may
 * both run the agent as pid 1, and neither sees the other's processes. The target therefore also names
 * the holder's PID namespace (`<pid>:<startTicks>:<pidNs>:<host>`), and a holder in another namespace,
 * or on another host, is judged by its heartbeat instead: a running agent sets the lock's mtime every
 * second (`keepLock`), so a lock whose mtime moves, or moved less than `heartbeatStaleMs` ago, is live.
 * At start a fresh but unconfirmed lock is watched until it either moves (live: refused) or goes quiet
 * for that long (stale: taken over).
 */
import { createHash } from 'node:crypto';
import { lstatSync, lutimesSync, readFileSync, readlinkSync, renameSync, symlinkSync, unlinkSync } from 'node:fs';
import { hostname } from 'node:os';
import { join } from 'node:path';
import { DataDirUnusable } from './data-dir-unusable.ts';
import { setLongInterval } from './timer.ts';

export { DataDirUnusable, dataDirFault } from './data-dir-unusable.ts';

export const lockFileName = 'LOCK';

export interface LockHolder {
  pid: number;
  /** Start time of the process in clock ticks since boot (Linux); undefined where /proc is absent. */
  startTicks?: number;
  host?: string;
  /** The holder's PID namespace (the inode number of /proc/self/ns/pid); undefined in older locks. */
  pidNs?: number;
}

/** A holder in another PID namespace or on another host is live while its heartbeat is younger than this. */
export const heartbeatStaleMs = 4_000;

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
  /** Sets the lock's mtime to now while it is still this process's: the heartbeat. */
  beat(): void;
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

/** How a holder is judged: by its pid where that can be trusted, by its heartbeat otherwise. */
type Liveness = 'alive' | 'dead' | 'heartbeat';

/** Takes the lock of `dir` (which must exist) for this process's lifetime, or throws DataDirLocked. */
export function lockDataDir(dir: string, o: LockOptions = {}): DataDirLock {
  const path = join(dir, lockFileName);
  const me: LockHolder = o.holder ?? { pid: process.pid, startTicks: startTicksOf(process.pid), pidNs: pidNamespace(), host: hostname() };
  const text = holderText(me);
  try {
    take(dir, path, text, o, true);
  } catch (err) {
    const code = (err as NodeJS.ErrnoException).code;
    if (err instanceof DataDirLocked || code === undefined) throw err;
    throw new DataDirUnusable(dir, path, code);
  }
  return held(dir, path, text, o);
}

/** `watch`: a holder judged by its heartbeat is watched until that is settled (at start), else judged at once. */
function take(dir: string, path: string, text: string, o: LockOptions, watch: boolean): void {
  let rival: LockHolder | undefined;
  for (let attempt = 0; attempt < takeoverAttemptsMax; attempt++) {
    if (createExclusive(path, text)) return;
    const seen = readLock(path);
    if (seen === undefined) continue; // released between our create and our read: try again
    const holder = parseHolder(seen);
    const liveness = holder === undefined ? 'dead' : judge(holder);
    if (liveness === 'alive') throw new DataDirLocked(dir, holder!);
    if (liveness === 'heartbeat') {
      const beating = watch ? heartbeatWatched(path, seen) : heartbeatFresh(path, seen);
      if (beating === 'changed') continue;
      if (beating) throw new DataDirLocked(dir, holder!);
    }
    // Stale (or unreadable: a file an older version crashed while writing).
    o.onStep?.('judged-stale');
    const outcome = replaceStale(path, seen, text, guardDepthMax, o);
    if (outcome === true) return;
    rival = outcome ?? rival;
  }
  const holder = parseHolder(readLock(path) ?? '');
  throw new DataDirLocked(dir, holder !== undefined && judge(holder) === 'alive' ? holder : rival ?? holder ?? { pid: 0 });
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
 * taken for a stale one), so that an agent started on the dir afterwards is refused, and its mtime is
 * set: the heartbeat by which a starter in another PID namespace or on another host knows it is live.
 * The timer does not keep the process alive.
 */
export function keepLock(lock: DataDirLock, keeping: LockKeeping, everyMs = 1000): void {
  let remaking = false;
  const timer = setLongInterval(() => {
    try {
      lock.reclaim();
      lock.beat();
    } catch (err) {
      if (err instanceof DataDirLocked) {
        timer.clear();
        keeping.taken(err);
      } else if (keeping.gone !== undefined && !remaking) {
        remaking = true;
        void keeping.gone().finally(() => { remaking = false; });
      }
    }
  }, everyMs);
}

function held(dir: string, path: string, text: string, o: LockOptions): DataDirLock {
  const lock = {
    path, release: () => releaseIfOurs(path, text),
    reclaim: () => { if (readLock(path) !== text) take(dir, path, text, o, false); },
    beat: () => {
      try {
        const now = new Date();
        if (readLock(path) === text) lutimesSync(path, now, now);
      } catch {
        // A data dir being made again, or a filesystem refusing times: the next beat tries again.
      }
    },
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
    const liveness = taker === undefined ? 'dead' : judge(taker);
    // A takeover lasts moments: a guard of another namespace's taker is live while it is fresh.
    if (liveness === 'alive' || (liveness === 'heartbeat' && heartbeatFresh(guard, seen) === true)) return taker;
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

/**
 * Holds the host name to 24 characters (32 without a namespace): the whole target then stays short
 * enough to live in the inode (under 60 bytes).
 */
function holderText(h: LockHolder): string {
  if (h.pidNs === undefined) return `${h.pid}:${h.startTicks ?? ''}:${(h.host ?? '').slice(0, 32)}`;
  return `${h.pid}:${h.startTicks ?? ''}:${h.pidNs}:${(h.host ?? '').slice(0, 24)}`;
}

export function parseHolder(text: string): LockHolder | undefined {
  // Host names hold no ':', so a fourth field is the namespace.
  const ns = /^(\d+):(\d*):(\d+):([^:]*)$/s.exec(text);
  if (ns !== null) {
    const pid = Number(ns[1]);
    const pidNs = Number(ns[3]);
    if (!Number.isSafeInteger(pid) || pid <= 0 || !Number.isSafeInteger(pidNs)) return undefined;
    return { pid, ...(ns[2] !== '' ? { startTicks: Number(ns[2]) } : {}), pidNs, ...(ns[4] !== '' ? { host: ns[4] } : {}) };
  }
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
 * Whether the holder still runs. In this PID namespace on this host (an older lock, naming no namespace,
 * is taken to be): its pid exists (signal 0; EPERM means it exists under another user), is not a zombie
 * and, where both start times are known, is the same process that wrote the lock. Elsewhere its pid says nothing
 * here, and its heartbeat decides.
 */
function judge(holder: LockHolder): Liveness {
  if (holder.pidNs !== undefined && (holder.pidNs !== pidNamespace() || (holder.host ?? '') !== hostname().slice(0, 24))) return 'heartbeat';
  if (holder.pid === process.pid) return 'dead'; // our own pid: a lock left by an earlier process that had it
  try {
    process.kill(holder.pid, 0);
  } catch (err) {
    if ((err as NodeJS.ErrnoException).code !== 'EPERM') return 'dead';
  }
  // A zombie has exited (its writes are done, its descriptors closed); only its parent has not reaped it yet.
  const fields = statFieldsOf(holder.pid);
  if (fields?.[0] === 'Z' || fields?.[0] === 'X') return 'dead';
  const now = startTicksOf(holder.pid);
  return holder.startTicks === undefined || now === undefined || now === holder.startTicks ? 'alive' : 'dead';
}

/** The inode number of this process's PID namespace; undefined without /proc. */
function pidNamespace(): number | undefined {
  try {
    const m = /\[(\d+)\]/.exec(readlinkSync('/proc/self/ns/pid', 'utf8'));
    return m === null ? undefined : Number(m[1]);
  } catch {
    return undefined;
  }
}

/** The lock's mtime in ms; undefined when it is gone. */
function mtimeOf(path: string): number | undefined {
  try {
    return lstatSync(path).mtimeMs;
  } catch (err) {
    if ((err as NodeJS.ErrnoException).code === 'ENOENT') return undefined;
    throw err;
  }
}

/** Whether the lock holding `seen` beat less than heartbeatStaleMs ago; 'changed' when it holds `seen` no longer. */
function heartbeatFresh(path: string, seen: string): boolean | 'changed' {
  const mtime = mtimeOf(path);
  if (mtime === undefined || readLock(path) !== seen) return 'changed';
  return Date.now() - mtime < heartbeatStaleMs;
}

/**
 * Watches the lock holding `seen` until its holder is known: true once its mtime moves (it beats), false
 * once it has been still for heartbeatStaleMs, 'changed' when it holds `seen` no longer. Blocks (the
 * start waits for it, at most heartbeatStaleMs).
 */
function heartbeatWatched(path: string, seen: string): boolean | 'changed' {
  const first = mtimeOf(path);
  const pause = new Int32Array(new SharedArrayBuffer(4));
  for (;;) {
    const mtime = mtimeOf(path);
    if (first === undefined || mtime === undefined || readLock(path) !== seen) return 'changed';
    if (mtime !== first) return true;
    if (Date.now() - mtime >= heartbeatStaleMs) return false;
    Atomics.wait(pause, 0, 0, 100);
  }
}

/** Field 22 of /proc/<pid>/stat (the process start time, in clock ticks since boot); undefined without /proc. */
export function startTicksOf(pid: number): number | undefined {
  const ticks = Number(statFieldsOf(pid)?.[22 - 3]);
  return Number.isSafeInteger(ticks) ? ticks : undefined;
}

/** The fields of /proc/<pid>/stat from field 3 (the process state) on; undefined without it. */
function statFieldsOf(pid: number): string[] | undefined {
  try {
    const stat = readFileSync(`/proc/${pid}/stat`, 'utf8');
    // Field 2 (the command name) is in parentheses and may hold spaces or parentheses itself.
    return stat.slice(stat.lastIndexOf(')') + 2).split(' ');
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
