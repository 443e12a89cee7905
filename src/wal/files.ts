/**
 * The WAL's files: the names of segment and snapshot files, listing them by index, whole writes, the
 * directory sync that makes a created, renamed or deleted name durable, and the errors that mean the
 * disk is full or file descriptors are short.
 *
 * On disk: `<dir>/wal/<20-digit first index>.seg` and `<dir>/snap/<20-digit index>.snap`.
 */
// The default export, so a test can make one write fail (vi.spyOn on this object).
import fs from 'node:fs';
import { open, readdir, rename, rm, type FileHandle } from 'node:fs/promises';
import { dirname, join } from 'node:path';
import { unavailableError, type LogShortage } from '../ports/log-errors.ts';
import { dataDirFault } from '../util/data-dir-unusable.ts';

/** What the WAL can be short of (a stream is the cluster log's). */
export type WalShortage = Exclude<LogShortage, 'stream' | 'storage'>;

/** The name the WAL's errors start with. */
export const kind = 'WalLog';
export const MiB = 1024 * 1024;
const indexDigits = 20;
export const segmentPattern = /^(\d{20})\.seg$/;
export const snapPattern = /^(\d{20})\.snap$/;

/** A segment (or snapshot) file and the index its name holds: a segment's first entry, a snapshot's index. */
export interface SegmentRef {
  first: number;
  path: string;
}

/** The current segment, open for writing. */
export interface ActiveSegment extends SegmentRef {
  fh: FileHandle;
  /** Bytes of acknowledged records; the next commit writes here. */
  bytes: number;
  /** Bytes of the file known to be written (frames, then synced zeros); at least `bytes`. */
  allocated: number;
}

export function segmentName(first: number): string {
  return `${String(first).padStart(indexDigits, '0')}.seg`;
}

export function snapName(index: number): string {
  return `${String(index).padStart(indexDigits, '0')}.snap`;
}

/** Files named by a 20-digit index, sorted by it; other names are not ours and are left alone. */
export async function listIndexed(dir: string, pattern: RegExp): Promise<SegmentRef[]> {
  const found: SegmentRef[] = [];
  for (const name of await readdir(dir)) {
    const m = pattern.exec(name);
    const first = m === null ? NaN : Number(m[1]);
    if (Number.isSafeInteger(first)) found.push({ first, path: join(dir, name) });
  }
  return found.sort((a, b) => a.first - b.first);
}

export function writeAllSync(fd: number, buf: Buffer, position: number): void {
  for (let done = 0; done < buf.length;) {
    const written = fs.writeSync(fd, buf, done, buf.length - done, position + done);
    if (written <= 0) throw new Error(`write made no progress at offset ${position + done}`);
    done += written;
  }
}

export async function writeAll(fh: FileHandle, buf: Buffer, position: number): Promise<void> {
  for (let done = 0; done < buf.length;) {
    const { bytesWritten } = await fh.write(buf, done, buf.length - done, position + done);
    if (bytesWritten <= 0) throw new Error(`write made no progress at offset ${position + done}`);
    done += bytesWritten;
  }
}

/**
 * Writes a file whole: a temporary file, flushed, renamed into place, the directory flushed, so a crash
 * leaves no file, the old one or the new one, never part of one.
 */
export async function writeFileWhole(path: string, data: string | Buffer): Promise<void> {
  await writeAside(path, (fh) => fh.writeFile(data));
  await syncDir(dirname(path));
}

/**
 * Writes `path` aside: `write` fills the temporary file `<path>.tmp`, which is flushed and renamed into
 * place; the caller syncs the directory. A write that fails (a full disk) removes the temporary file, which
 * would take space on a disk that has none; best effort, so that the removal's own failure hides no cause.
 */
export async function writeAside(path: string, write: (fh: FileHandle) => Promise<void>): Promise<void> {
  const tmp = `${path}.tmp`;
  try {
    const fh = await open(tmp, 'w');
    try {
      await write(fh);
      await fh.sync();
    } catch (err) {
      await fh.close().catch(() => undefined);
      throw err;
    }
    await fh.close();
    await rename(tmp, path);
  } catch (err) {
    await rm(tmp, { force: true }).catch(() => undefined);
    throw err;
  }
}

/**
 * The file `path` names, or undefined when it names none: nothing there (ENOENT), or a file where one of
 * its directories goes (ENOTDIR: the dir moved away and a file put at its path). Any other error (EACCES:
 * a directory of it the agent may no longer search) throws: whether a file is there is not known.
 */
export function namedFile(path: string): fs.Stats | undefined {
  try {
    return fs.statSync(path, { throwIfNoEntry: false });
  } catch (err) {
    if ((err as NodeJS.ErrnoException).code === 'ENOTDIR') return undefined;
    throw err;
  }
}

/** Makes created, renamed or deleted names durable. */
export async function syncDir(path: string): Promise<void> {
  const fh = await open(path, 'r');
  try {
    await fh.sync();
  } finally {
    await fh.close();
  }
}

/**
 * What a failed file operation ran short of, when it is a shortage the log waits out instead of failing
 * for good: the disk or the user's quota full (ENOSPC, EDQUOT), or file descriptors, of the process or of
 * the system (EMFILE, ENFILE), which connections held open elsewhere in the agent can use up. Both pass:
 * space is freed, connections close. With `dir`, the data dir: also a data dir the agent cannot use for a
 * reason of the filesystem's that an operator mends (dataDirFault: EACCES, EPERM, ENOTDIR, EEXIST, EROFS on
 * a path inside it: its permissions taken away, a file where a directory of it goes). Undefined for any
 * other error, and for an error of a write to a file already open (no path), which fails the log.
 */
export function shortageOf(err: unknown, dir?: string): WalShortage | undefined {
  if (err instanceof SegmentLost) return 'files';
  switch ((err as NodeJS.ErrnoException | undefined)?.code) {
    case 'ENOSPC': case 'EDQUOT': return 'space';
    case 'EMFILE': case 'ENFILE': return 'descriptors';
    default: return dir !== undefined && dataDirFault(err, dir) !== undefined ? 'dir' : undefined;
  }
}

/** Why appends are refused, by what the log is short of (the error's text). */
export const shortageText: Record<WalShortage, string> = {
  space: 'no space left on the disk of the data dir',
  descriptors: 'the agent is out of file descriptors',
  files: 'the data dir was removed or damaged; the agent is writing its state there afresh',
  dir: 'the agent cannot use its data dir (see its log for the path and what to mend)',
};

/**
 * The error writes are refused with while the log is short of `shortage` (LOG_UNAVAILABLE: the HTTP front
 * end answers 503 with Retry-After and the shortage's code); its message names no path.
 */
export function shortageError(shortage: WalShortage): Error {
  return unavailableError(kind, shortageText[shortage], shortage);
}

/**
 * The line logged once when appends start being refused (a lost segment's: afresh.ts, lossLog; an unusable
 * data dir's: dirFaultLog).
 */
export const shortageLog: Record<Exclude<WalShortage, 'files' | 'dir'>, string> = {
  space: 'WAL: out of disk space; writes are refused until space is back',
  descriptors: 'WAL: out of file descriptors; writes are refused until descriptors are free again (see ulimit -n and the connections held)',
};

/** The line logged when appends are refused for a data dir the agent cannot use (`err`: see shortageOf). */
export function dirFaultLog(err: unknown, dir: string): string {
  return `WAL: ${dataDirFault(err, dir)?.message ?? String(err)}; writes are refused until the agent can use it again`;
}

/**
 * How the current segment was lost from outside while the log ran: removed (with its data dir, or alone),
 * moved (its dir renamed), or cut short (truncated below the commits written and synced to it).
 */
export type SegmentLoss = 'removed' | 'moved' | 'cut';

/** The current segment no longer holds what the log wrote to it (see SegmentLoss). */
export class SegmentLost extends Error {
  constructor(readonly dir: string, readonly loss: SegmentLoss, segment: string) {
    super(loss === 'cut'
      ? `${kind}: the current segment ${segment} was cut short while the agent ran (truncated below the commits written and synced to it)`
      : `${kind}: the data dir ${dir} was removed or moved while the agent ran`);
  }
}
