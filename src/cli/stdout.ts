/**
 * The command's standard output, with every write checked. A write that fails (a full disk, an I/O
 * error, stdout closed when the command started) is kept: nothing more is written, the commands that
 * stream (`watch`, `monitor`) are told to stop, and once the command is done `roster` exits 1 with
 * `cannot write output: <reason>` (see outputFailure). A reader that closed the pipe early (EPIPE, as
 * `roster … | head -1` does) is not a failure: it had what it wanted, and the command ends quietly.
 */
import { fstatSync, readFileSync } from 'node:fs';

/** Linux's `/dev/null` (character device 1:3). */
const devNullRdev = (1 << 8) | 3;
/** The access mode bits of an open file's flags: O_RDWR is 2. */
const accessModeMask = 3;
const readWrite = 2;

let failure: NodeJS.ErrnoException | undefined;
let started = false;
let pendingWrites = 0;
let drained: (() => void)[] = [];
const failureListeners = new Set<() => void>();

function fail(err: NodeJS.ErrnoException): void {
  if (failure !== undefined) return;
  failure = err;
  for (const listener of failureListeners) listener();
}

/**
 * Whether stdout was closed when the process started (`roster … >&-`). Node then opens `/dev/null`
 * read-write in its place, where a shell redirection to `/dev/null` opens it write-only; Linux tells
 * the two apart through /proc. Elsewhere the output is discarded as `>/dev/null` would.
 */
function closedAtStart(): boolean {
  try {
    if (fstatSync(1).rdev !== devNullRdev) return false;
    const flags = /^flags:\s*([0-7]+)$/m.exec(readFileSync('/proc/self/fdinfo/1', 'utf8'));
    return flags !== null && (parseInt(flags[1]!, 8) & accessModeMask) === readWrite;
  } catch {
    return false;
  }
}

function start(): void {
  started = true;
  process.stdout.on('error', fail);
  if (closedAtStart()) fail(Object.assign(new Error('stdout is closed'), { code: 'EBADF' }));
}

/** Writes to stdout; after a failed write, nothing more is written. */
export function writeOut(chunk: string | Buffer): void {
  if (!started) start();
  if (failure !== undefined) return;
  pendingWrites += 1;
  process.stdout.write(chunk, (err) => {
    if (err) fail(err);
    pendingWrites -= 1;
    if (pendingWrites === 0) { const waiting = drained; drained = []; for (const done of waiting) done(); }
  });
}

/** Calls `listener` once a write fails (a streaming command stops); returns the way to stop listening. */
export function onOutputFailure(listener: () => void): () => void {
  if (failure !== undefined) { listener(); return () => {}; }
  failureListeners.add(listener);
  return () => failureListeners.delete(listener);
}

/** Whether the reader of stdout went away (EPIPE): the command ends quietly with 0. */
export function readerGone(err: NodeJS.ErrnoException): boolean {
  return err.code === 'EPIPE';
}

/** Once every write so far is done: the first failure, if one failed. */
export async function outputFailure(): Promise<NodeJS.ErrnoException | undefined> {
  if (pendingWrites > 0 && failure === undefined) await new Promise<void>((resolve) => drained.push(resolve));
  return failure;
}

/** A failure as `cannot write output` names it: the system's words and code. */
export function failureReason(err: NodeJS.ErrnoException): string {
  const words = err.message.replace(/^[A-Z]+: /, '').replace(/, write$/, '');
  return err.code === undefined ? words : `${words} (${err.code})`;
}
