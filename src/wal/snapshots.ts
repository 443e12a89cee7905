/**
 * Snapshot files: one frame each (record.ts), written aside and renamed into place so a crash leaves
 * the old or the new one whole; the newest readable one loaded at open(); the newest two kept.
 */
import { readdir, readFile, rm, unlink, type FileHandle } from 'node:fs/promises';
import { join } from 'node:path';
import { crc32 } from 'node:zlib';
import { constants } from 'node:buffer';
import type { Logger } from '../ports/logger.ts';
import type { Snapshot } from '../ports/log.ts';
import { parseSnapshot, snapshotPayloadChunks } from '../log/index.ts';
import { listIndexed, snapName, snapPattern, syncDir, writeAll, writeAside } from './files.ts';
import { decodeSingle, headerBytes } from './record.ts';

/** The longest string V8 makes (and so the largest snapshot payload recovery can decode). */
const snapshotPayloadBytesMax = Math.min(constants.MAX_STRING_LENGTH, 0xffff_ffff);

/** Unfinished `.tmp` snapshot files a crash left: never loaded, removed once recovery has decided to open. */
export async function removeUnfinishedSnapshots(snapDir: string, logger: Logger): Promise<void> {
  for (const name of (await readdir(snapDir)).filter((n) => n.endsWith('.tmp'))) {
    await rm(join(snapDir, name), { force: true });
    logger.info({ file: join(snapDir, name) }, 'WAL: removed an unfinished snapshot');
  }
}

/** The newest snapshot that reads back whole (`.tmp` files are never read). */
export async function loadSnapshot(snapDir: string, logger: Logger): Promise<Snapshot | undefined> {
  const snaps = await listIndexed(snapDir, snapPattern);
  for (const { first: index, path } of snaps.reverse()) {
    const s = await readSnapshotFile(path, index);
    if (typeof s !== 'string') return s;
    logger.warn({ file: path, reason: s }, 'WAL: skipping an invalid snapshot');
  }
  return undefined;
}

async function readSnapshotFile(path: string, index: number): Promise<Snapshot | string> {
  const rec = decodeSingle(await readFile(path));
  if (!rec.ok) return rec.reason;
  const s = parseSnapshot(rec.payload);
  if (typeof s !== 'string' && s.index !== index) return `index ${s.index} does not match the file name`;
  return s;
}

/** Write aside, sync, rename into place, sync the directory: a crash leaves the old or the new, whole. */
export async function writeSnapshotFile(snapDir: string, s: Snapshot): Promise<void> {
  await writeAside(join(snapDir, snapName(s.index)), (fh) => writeFrame(fh, s));
  await syncDir(snapDir);
}

/** One frame, streamed: the payload in pieces with a running crc, then the header in front of it. */
async function writeFrame(fh: FileHandle, s: Snapshot): Promise<void> {
  let bytes = 0;
  let crc = 0;
  for (const chunk of snapshotPayloadChunks(s)) {
    const buf = Buffer.from(chunk, 'utf8');
    crc = crc32(buf, crc);
    bytes += buf.length;
    // Recovery reads the payload as one string: never write one it could not read back.
    if (bytes > snapshotPayloadBytesMax) throw new RangeError(`snapshot payload passes ${snapshotPayloadBytesMax} bytes, more than recovery can read as one string`);
    await writeAll(fh, buf, headerBytes + bytes - buf.length);
  }
  const header = Buffer.alloc(headerBytes);
  header.writeUInt32LE(bytes, 0);
  header.writeUInt32LE(crc, 4);
  await writeAll(fh, header, 0);
}

/**
 * Keeps the newest snapshot and the one before it (a fallback if the newest turns out unreadable); returns
 * the fallback's index, or undefined when there is none.
 */
export async function pruneSnapshots(snapDir: string, newest: number): Promise<number | undefined> {
  const snaps = await listIndexed(snapDir, snapPattern);
  const previous = snaps.filter((s) => s.first < newest).at(-1)?.first;
  for (const s of snaps) {
    if (s.first !== newest && s.first !== previous) await unlink(s.path);
  }
  return previous;
}
