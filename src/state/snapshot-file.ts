/**
 * The backup file of GET/PUT /v1/snapshot and `roster snapshot`: the state at one index, gzip-compressed,
 * as three lines of UTF-8 text:
 *
 * 1. the header, JSON: `format` ("roster-snapshot"), `version` (of this file layout), `index`, `atMs`
 *    (the log's time at that index), `createdAt`, `node` (who wrote it) and `counts` of each table;
 * 2. the payload, JSON: `{"index":n,"data":...,"v":1}`, the snapshot format the logs store for their own
 *    compaction (`v` its format version, src/log/format-version.ts; data.version guards the state's format,
 *    src/state/snapshot.ts);
 * 3. the trailer, JSON: `sha256` (hex) and `bytes` of lines 1 and 2 with their newlines.
 *
 * The checksum comes last so the file is written in one pass, the payload in pieces (never one string of
 * the whole state). A reader checks the layout version, then the checksum, before it believes anything.
 */
import { constants } from 'node:buffer';
import { createHash } from 'node:crypto';
import { once } from 'node:events';
import { createGzip, gunzipSync } from 'node:zlib';
import { parseSnapshot, snapshotPayloadChunks } from '../log/index.ts';
import type { StateRestore } from '../domain/commands.ts';
import { checkedSnapshotData, snapshotCounts, type SnapshotData } from './snapshot.ts';

export const snapshotFileFormat = 'roster-snapshot';
/** The file layout this code writes and reads. */
export const snapshotFileVersion = 1;
/** gzip level: 1 compresses a state of short keys almost as well as 6 in a third of the time. */
const gzipLevel = 1;
/** Room for the header and trailer lines beside the payload (a header is some hundreds of bytes). */
const snapshotFileLinesBytesMax = 64 * 1024;
/**
 * The most a snapshot file may inflate to: a payload as long as V8's longest string (what a log's recovery
 * reads back as one string, src/wal/snapshots.ts, and what the payload is parsed from here) plus its header
 * and trailer lines. Inflating stops there, so a small file that would inflate to gigabytes of memory
 * (a gzip bomb) is refused after at most this much, not once it has taken the process's memory.
 */
const snapshotFileInflatedBytesMax = Math.min(constants.MAX_STRING_LENGTH, 0xffff_ffff) + snapshotFileLinesBytesMax;

export interface SnapshotMeta {
  format: string;
  version: number;
  index: number;
  atMs: number;
  createdAt: string;
  node: string;
  counts: ReturnType<typeof snapshotCounts>;
}

/** A file taken apart: its header, whether its checksum holds, and its payload bytes. */
export interface OpenedSnapshot {
  meta: SnapshotMeta;
  sha256: string;
  checksumOk: boolean;
  /** Uncompressed bytes of header and payload. */
  bytes: number;
  payload: Buffer;
}

/** Why a file is not a snapshot this agent can restore; the message says what is wrong with it. */
export class SnapshotFileError extends Error {}

/** Writes `data` as a snapshot file: gzip output in pieces, the checksum computed on the way. */
export async function encodeSnapshotFile(data: SnapshotData, node: string, createdAtMs: number): Promise<{ file: Buffer; meta: SnapshotMeta; sha256: string }> {
  const meta: SnapshotMeta = {
    format: snapshotFileFormat, version: snapshotFileVersion, index: data.index, atMs: data.atMs,
    createdAt: new Date(createdAtMs).toISOString(), node, counts: snapshotCounts(data),
  };
  const hash = createHash('sha256');
  const gzip = createGzip({ level: gzipLevel });
  const out: Buffer[] = [];
  gzip.on('data', (b: Buffer) => out.push(b));
  const ended = once(gzip, 'end');
  let bytes = 0;
  const write = async (text: string): Promise<void> => {
    const b = Buffer.from(text, 'utf8');
    hash.update(b);
    bytes += b.length;
    if (!gzip.write(b)) await once(gzip, 'drain');
  };
  await write(`${JSON.stringify(meta)}\n`);
  for (const chunk of snapshotPayloadChunks({ index: data.index, data })) await write(chunk);
  await write('\n');
  const sha256 = hash.digest('hex');
  gzip.end(`${JSON.stringify({ sha256, bytes })}\n`);
  await ended;
  return { file: Buffer.concat(out), meta, sha256 };
}

/**
 * Takes a file apart without trusting its payload (what `roster snapshot inspect` shows); throws when it
 * has no such shape, or when it inflates past snapshotFileInflatedBytesMax (inflating stops there).
 */
export function openSnapshotFile(file: Buffer): OpenedSnapshot {
  const text = inflated(file, snapshotFileInflatedBytesMax);
  const headerEnd = text.indexOf(0x0a);
  const trailerStart = text.lastIndexOf(0x0a, text.length - 2) + 1;
  if (headerEnd < 0 || trailerStart <= headerEnd + 1 || text[text.length - 1] !== 0x0a) {
    throw new SnapshotFileError('not a Roster snapshot: expected a header, a payload and a trailer line');
  }
  const meta = jsonLine(text.subarray(0, headerEnd), 'header') as unknown as SnapshotMeta;
  if (meta.format !== snapshotFileFormat) throw new SnapshotFileError(`not a Roster snapshot: format ${JSON.stringify(meta.format)}`);
  if (meta.version !== snapshotFileVersion) {
    throw new SnapshotFileError(`unsupported snapshot file version ${JSON.stringify(meta.version)} (this agent reads version ${snapshotFileVersion})`);
  }
  const trailer = jsonLine(text.subarray(trailerStart, text.length - 1), 'trailer') as { sha256?: unknown; bytes?: unknown };
  const sha256 = createHash('sha256').update(text.subarray(0, trailerStart)).digest('hex');
  const checksumOk = trailer.sha256 === sha256 && trailer.bytes === trailerStart;
  return { meta, sha256, checksumOk, bytes: trailerStart, payload: text.subarray(headerEnd + 1, trailerStart - 1) };
}

/** The state data of a file whose layout, checksum and payload all hold; a SnapshotFileError says which did not. */
export function readSnapshotFile(file: Buffer): { meta: SnapshotMeta; data: SnapshotData; bytes: number } {
  const opened = openSnapshotFile(file);
  if (!opened.checksumOk) throw new SnapshotFileError('checksum mismatch: the file is damaged');
  try {
    const parsed = parseSnapshot(opened.payload.toString('utf8'));
    if (typeof parsed === 'string') throw new Error(parsed);
    const data = checkedSnapshotData(parsed.data);
    if (data.index !== opened.meta.index) throw new Error(`payload index ${data.index} differs from the header's ${opened.meta.index}`);
    return { meta: opened.meta, data, bytes: opened.bytes };
  } catch (err) {
    throw new SnapshotFileError(`bad payload: ${(err as Error).message}`);
  }
}

/** The file's gzip stream inflated, refused once it passes `bytesMax`. */
function inflated(file: Buffer, bytesMax: number): Buffer {
  try {
    return gunzipSync(file, { maxOutputLength: bytesMax });
  } catch (err) {
    if ((err as NodeJS.ErrnoException).code === 'ERR_BUFFER_TOO_LARGE') {
      throw new SnapshotFileError(`too large: it inflates to more than ${bytesMax} bytes, more than a snapshot can hold (its payload is read back as one string)`);
    }
    throw new SnapshotFileError(`not a complete gzip stream (damaged or truncated): ${(err as Error).message}`);
  }
}

function jsonLine(line: Buffer, what: string): Record<string, unknown> {
  try {
    const v = JSON.parse(line.toString('utf8')) as unknown;
    if (v !== null && typeof v === 'object' && !Array.isArray(v)) return v as Record<string, unknown>;
  } catch {
    // reported below
  }
  throw new SnapshotFileError(`not a Roster snapshot: the ${what} line is not a JSON object`);
}

/**
 * The command a restore entry applies: as proposed when it carries its data, else with the data of the
 * snapshot file it names, loaded through `load` and checked against the SHA-256 the entry carries.
 */
export function restoreCommand(cmd: StateRestore, load: ((name: string) => Buffer) | undefined): StateRestore {
  if (cmd.attachment === undefined) return cmd;
  if (load === undefined) throw new Error(`state.restore: the entry names attachment ${cmd.attachment.name}, and this log stores none`);
  const file = load(cmd.attachment.name);
  const sha256 = createHash('sha256').update(file).digest('hex');
  if (sha256 !== cmd.attachment.sha256) throw new Error(`state.restore: attachment ${cmd.attachment.name} is damaged (sha256 ${sha256})`);
  return { t: 'state.restore', data: readSnapshotFile(file).data };
}
