/**
 * `roster snapshot save|restore|inspect`, as `consul snapshot` does them. `save` asks the agent for a
 * snapshot (GET /v1/snapshot), checks it and writes it atomically (a temporary file in the same
 * directory, flushed, then renamed over the target, which must be absent or a regular file); `restore`
 * checks the file here, then sends it (PUT /v1/snapshot), which replaces the whole state; `inspect` reads
 * a file offline and says what it holds, whether its checksum holds and whether its records are ones an
 * agent restores (exit 1 when either does not, or when it is no snapshot at all).
 */
import type { Stats } from 'node:fs';
import { lstat, open, readFile, readlink, rename, rm } from 'node:fs/promises';
import { openSnapshotFile, readSnapshotFile, SnapshotFileError, type OpenedSnapshot } from '../state/snapshot-file.ts';
import { snapshotRecordsProblem } from '../state/snapshot-records.ts';
import { failureOf } from './client.ts';
import type { CliContext } from './context.ts';
import { CliError, exitCodes } from './errors.ts';
import { fields, stringifyExact } from './output.ts';
import { writeOut } from './stdout.ts';

/** A snapshot of a large state takes a while to write or to apply. */
const snapshotTimeoutMs = 10 * 60_000;

export async function snapshotSave(ctx: CliContext, file: string, o: { stale?: boolean }): Promise<void> {
  await refuseUnlessRegular(file);
  const a = await ctx.client.get('/v1/snapshot', { query: { stale: o.stale === true }, timeoutMs: snapshotTimeoutMs });
  if (a.status !== 200) throw failureOf(a);
  const opened = openedOf(a.body, 'the agent\'s answer');
  if (!opened.checksumOk) throw new CliError('the agent\'s answer is damaged (checksum mismatch); nothing written');
  await writeAtomically(file, a.body);
  const saved = { file, index: opened.meta.index, bytes: a.body.length, sha256: opened.sha256 };
  if (ctx.json) ctx.outJson(saved);
  else ctx.out(`Saved snapshot to ${file}: index ${saved.index}, ${saved.bytes} bytes\n`);
}

export async function snapshotRestore(ctx: CliContext, file: string): Promise<void> {
  const body = await readSnapshot(file);
  const opened = openedOf(body, file);
  if (!opened.checksumOk) throw new CliError(`${file}: checksum mismatch, the file is damaged; nothing sent`);
  const a = await ctx.client.put('/v1/snapshot', { body, timeoutMs: snapshotTimeoutMs });
  if (a.status !== 200) throw failureOf(a);
  const index = a.json<{ Index: number }>().Index;
  if (ctx.json) ctx.outJson({ file, snapshotIndex: opened.meta.index, index });
  else ctx.out(`Restored snapshot ${file} (taken at index ${opened.meta.index}); the state is now at index ${index}\n`);
}

/**
 * Prints what the file holds; resolves with the exit code: 1 when its checksum does not hold or its records
 * are not ones an agent restores (the first problem is printed, as PUT /v1/snapshot would answer it).
 */
export async function snapshotInspect(file: string, o: { json?: boolean }): Promise<number> {
  const body = await readSnapshot(file);
  const s = openedOf(body, file);
  const { meta } = s;
  const records = s.checksumOk ? recordsOf(body) : 'not checked: the checksum does not hold';
  if (o.json === true) {
    writeOut(`${stringifyExact({ ...meta, size: body.length, bytes: s.bytes, sha256: s.sha256, checksum: s.checksumOk ? 'OK' : 'BAD', records })}\n`);
  } else {
    writeOut(fields([
      ['Format', `${meta.format} version ${meta.version}`], ['Index', String(meta.index)], ['Created', meta.createdAt],
      ['Node', meta.node], ['Keys', String(meta.counts.keys)], ['Sessions', String(meta.counts.sessions)],
      ['Checks', String(meta.counts.checks)], ['Services', String(meta.counts.services)], ['Nodes', String(meta.counts.nodes)],
      ['Size', `${body.length} bytes (${s.bytes} uncompressed)`], ['SHA-256', s.sha256], ['Checksum', s.checksumOk ? 'OK' : 'BAD'],
      ['Records', records],
    ]));
  }
  return s.checksumOk && records === 'OK' ? exitCodes.ok : exitCodes.failed;
}

/** `OK` when the payload parses and every record is one an agent restores, else the first problem. */
function recordsOf(body: Buffer): string {
  try {
    return snapshotRecordsProblem(readSnapshotFile(body).data) ?? 'OK';
  } catch (err) {
    if (err instanceof SnapshotFileError) return err.message;
    throw err;
  }
}

function openedOf(body: Buffer, what: string): OpenedSnapshot {
  // Every snapshot is gzip: a file that does not even open as one is some other file, not a damaged snapshot.
  if (body.length < 2 || body[0] !== 0x1f || body[1] !== 0x8b) {
    throw new CliError(`${what}: not a snapshot file (a snapshot is the gzip archive roster snapshot save or GET /v1/snapshot writes)`);
  }
  try {
    return openSnapshotFile(body);
  } catch (err) {
    if (err instanceof SnapshotFileError) throw new CliError(`${what}: ${err.message}`);
    throw err;
  }
}

async function readSnapshot(file: string): Promise<Buffer> {
  try {
    return await readFile(file);
  } catch (err) {
    throw new CliError(`cannot read ${file}: ${(err as NodeJS.ErrnoException).code ?? (err as Error).message}`);
  }
}

/**
 * Writes `file` so that it is either the old file or the whole new one, never a part: a new temporary file
 * beside it (never an existing one opened), flushed, then renamed over it. Only a regular file is replaced:
 * see refuseUnlessRegular.
 */
async function writeAtomically(file: string, body: Buffer): Promise<void> {
  await refuseUnlessRegular(file); // again: taking a large snapshot takes a while
  const tmp = `${file}.${process.pid}.tmp`;
  let created = false;
  try {
    const handle = await open(tmp, 'wx', 0o600);
    created = true;
    try {
      await handle.writeFile(body);
      await handle.sync();
    } finally {
      await handle.close();
    }
    await rename(tmp, file);
  } catch (err) {
    // Only our own temporary file is removed; failing to remove it does not hide why the write failed.
    if (created) await rm(tmp, { force: true }).catch(() => undefined);
    throw new CliError(`cannot write ${file}: ${codeOf(err)}`);
  }
}

/**
 * Refuses a path that exists and is not a regular file. The rename would replace the entry itself: a
 * symbolic link would become a file of its own (its target left as it was), and a device such as
 * /dev/null or a pipe a regular file; and a device or a pipe cannot be written all or nothing anyway.
 */
async function refuseUnlessRegular(file: string): Promise<void> {
  let stats: Stats;
  try {
    stats = await lstat(file);
  } catch (err) {
    if ((err as NodeJS.ErrnoException).code === 'ENOENT') return;
    throw new CliError(`cannot write ${file}: ${codeOf(err)}`);
  }
  if (stats.isFile()) return;
  if (stats.isSymbolicLink()) {
    const target = await readlink(file).catch(() => '?');
    throw new CliError(`cannot write ${file}: it is a symbolic link (to ${target}); snapshot save replaces only a regular file, give the path of the file itself`);
  }
  throw new CliError(`cannot write ${file}: it is ${kindOf(stats)}, not a regular file; snapshot save writes a new file or replaces a regular one`);
}

function kindOf(s: Stats): string {
  if (s.isDirectory()) return 'a directory';
  if (s.isCharacterDevice()) return 'a character device';
  if (s.isBlockDevice()) return 'a block device';
  if (s.isFIFO()) return 'a named pipe';
  return s.isSocket() ? 'a socket' : 'a file of an unknown kind';
}

function codeOf(err: unknown): string {
  return (err as NodeJS.ErrnoException).code ?? (err as Error).message;
}
