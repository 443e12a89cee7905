/**
 * What the JetStream log writes and reads back: commit messages, snapshot records, and the
 * seq ↔ index marks that tie them together. Pure functions, private to cluster/jetstream.
 *
 * Commit message payload (UTF-8 JSON), one per group commit, at least one proposal:
 *
 *     [{"p":"n1-42","c":{...},"t":1718000000000,"v":1},{"p":"n1-43","c":{...},"t":1718000000000,"v":1}]
 *
 * `p` the proposal id, `c` the command (the log does not judge it: an unknown tag is the applier's to
 * refuse), `t` the proposer's clock when it formed the batch, `v` the format version (absent: 1; see
 * src/log/format-version.ts). No index: readers count. A snapshot record carries `v` too.
 */
import type { Command } from '../../src/domain/index.ts';
import { entryFormatVersion, formatVersionOf, type EncodedProposal } from '../../src/log/index.ts';
import type { LogEntry } from '../../src/ports/index.ts';

/** A consumed message: its stream sequence, the index of its last command, and the atMs there. */
export interface Mark {
  seq: number;
  index: number;
  atMs: number;
}

/** One proposal as carried in a commit message. */
export interface CommitItem {
  p: string;
  c: Command;
  t: number;
}

/**
 * A snapshot as stored in the object store. `seq`/`seqIndex`/`seqAtMs` are the mark at or before
 * `index`: a node opening from it consumes from `seq + 1`, numbering from `seqIndex`, and drops the
 * commands up to `index` that the state already holds.
 */
export interface SnapshotRecord {
  index: number;
  seq: number;
  seqIndex: number;
  seqAtMs: number;
  stream: string;
  /** The stream's creation time: a stream deleted and created again starts over at seq 1. */
  streamCreated: string;
  /** The node that wrote it (for the logs; any node's snapshot at an index is the same state). */
  node: string;
  /** The format version; absent means 1 (a record written before the field existed). */
  v?: number;
  data: unknown;
}

/** One proposal of a commit message as JSON text (a commit is `[item,item,...]`). */
export function commitItemJson(item: EncodedProposal, atMs: number): string {
  return `{"p":${item.pidJson},"c":${item.cmdJson},"t":${atMs},"v":${entryFormatVersion(item.cmd)}}`;
}

/**
 * Parses a commit message, or returns why it is not one (every node skips it alike); throws
 * FormatVersionError for a proposal of a newer format than this code reads (the node must stop). An
 * empty commit (`[]`, published to learn whether the nats-servers store writes again: storage-full.ts)
 * holds no entries.
 */
export function parseCommitMessage(data: Uint8Array): CommitItem[] | string {
  let v: unknown;
  try {
    v = JSON.parse(Buffer.from(data.buffer, data.byteOffset, data.byteLength).toString('utf8'));
  } catch {
    return 'bad JSON';
  }
  if (!Array.isArray(v)) return 'payload is not an array of proposals';
  const items: CommitItem[] = [];
  for (const [k, item] of v.entries()) {
    if (!isObject(item)) return `proposal ${k}: not an object`;
    const { p, c, t } = item;
    if (typeof p !== 'string') return `proposal ${k}: bad pid`;
    if (!isObject(c)) return `proposal ${k}: bad cmd`;
    if (typeof t !== 'number' || !Number.isFinite(t)) return `proposal ${k}: bad time`;
    const version = formatVersionOf(`proposal ${k} of a commit message`, item.v);
    if (typeof version === 'string') return `proposal ${k}: ${version}`;
    items.push({ p, c: c as unknown as Command, t });
  }
  return items;
}

/** Parses a stored snapshot record, or returns why it is not one; throws FormatVersionError for a newer format. */
export function parseSnapshotRecord(text: string): SnapshotRecord | string {
  let v: unknown;
  try {
    v = JSON.parse(text);
  } catch {
    return 'bad JSON';
  }
  if (!isObject(v)) return 'not an object';
  const version = formatVersionOf(`snapshot record at index ${JSON.stringify(v.index)}`, v.v);
  if (typeof version === 'string') return version;
  for (const key of ['index', 'seq', 'seqIndex'] as const) {
    const n = v[key];
    if (typeof n !== 'number' || !Number.isSafeInteger(n) || n < 0) return `bad ${key}`;
  }
  if (typeof v.seqAtMs !== 'number' || !Number.isFinite(v.seqAtMs)) return 'bad seqAtMs';
  if ((v.seqIndex as number) > (v.index as number)) return 'its mark is past its index';
  if (typeof v.stream !== 'string' || typeof v.streamCreated !== 'string') return 'bad stream';
  return {
    index: v.index as number, seq: v.seq as number, seqIndex: v.seqIndex as number, seqAtMs: v.seqAtMs,
    stream: v.stream, streamCreated: v.streamCreated, node: typeof v.node === 'string' ? v.node : '', v: version, data: v.data,
  };
}

/**
 * Numbers the proposals of the message at `seq` after `cursor`: index = previous index + 1 for each,
 * atMs = max(previous atMs, t). Returns the message's mark and the entries past `skipThrough` (the
 * ones a snapshot the node opened from does not already cover). A message that is not a commit
 * (`items` empty) still moves the mark to its sequence.
 */
export function numberCommit(cursor: Mark, seq: number, items: readonly CommitItem[], skipThrough: number): { mark: Mark; entries: LogEntry[] } {
  let index = cursor.index;
  let atMs = cursor.atMs;
  const entries: LogEntry[] = [];
  for (const item of items) {
    atMs = Math.max(atMs, item.t);
    index += 1;
    if (index > skipThrough) entries.push({ index, atMs, pid: item.p, cmd: item.c });
  }
  return { mark: { seq, index, atMs }, entries };
}

function isObject(v: unknown): v is Record<string, unknown> {
  return typeof v === 'object' && v !== null && !Array.isArray(v);
}
