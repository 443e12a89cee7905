/**
 * A data dir the agent cannot use for a reason of the filesystem's, said so that the operator knows what
 * to mend: the start stops with exit code 2 (src/agent-main.ts).
 */
import { basename, isAbsolute, relative, resolve } from 'node:path';

/** What a filesystem error on a path of the data dir says to the operator. */
const unusableBecause: Record<string, string> = {
  EROFS: 'the filesystem is read-only', EACCES: 'permission denied: give the agent\'s user access to it',
  EPERM: 'operation not permitted: give the agent\'s user access to it', ENOSPC: 'no space left on the device',
  EDQUOT: 'disk quota exceeded', EISDIR: 'a directory is where the agent keeps a file: move it out of the data dir',
  EEXIST: 'a file is where the agent keeps a directory: move it out of the data dir',
  ENOTDIR: 'a file is where the agent keeps a directory: move it out of the data dir',
};

/**
 * The data dir cannot be used for a reason of the filesystem's: its lock cannot be taken (read-only,
 * permissions, a directory in its place), or a path inside it cannot be (a file where a directory goes).
 */
export class DataDirUnusable extends Error {
  constructor(readonly dir: string, readonly path: string, readonly code: string, what = 'take its lock') {
    const why = code === 'EISDIR' && what === 'take its lock' ? `${basename(path)} is a directory: remove it` : unusableBecause[code] ?? code;
    super(`--data-dir ${dir}: cannot ${what} ${path}: ${why}`);
  }
}

/**
 * A start's failure as DataDirUnusable when it is a filesystem error the operator must mend on a path
 * inside the data dir (see unusableBecause), else undefined.
 */
export function dataDirFault(err: unknown, dir: string): DataDirUnusable | undefined {
  if (err instanceof DataDirUnusable) return err;
  const { code, path } = (err ?? {}) as NodeJS.ErrnoException;
  if (code === undefined || path === undefined || !(code in unusableBecause)) return undefined;
  const inside = relative(resolve(dir), resolve(path));
  if (inside.startsWith('..') || isAbsolute(inside)) return undefined;
  return new DataDirUnusable(dir, path, code, 'use');
}
