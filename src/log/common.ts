/**
 * What every log shares: the commit payload format (its on-disk framing is in src/wal/record.ts), the
 * size limits and the argument checks, so the WAL, its in-memory twin and the cluster log behave alike
 * (a cmd that does not survive JSON fails in all, an append too large for one commit is refused by all).
 */
import type { Command } from '../domain/commands.ts';
import { logUnavailableCode, type LogEntry, type Proposal, type Snapshot } from '../ports/log.ts';
export { isLogUnavailable } from '../ports/log.ts';

const MiB = 1024 * 1024;
/** Largest commit payload; a larger length in a segment frame header is corruption, not a frame. */
export const frameBytesMax = 64 * MiB;
/** Largest single entry (as JSON) a proposal may produce. */
export const entryBytesMax = 16 * MiB;

/** Counters that make group commit visible: `commits` is the number of fdatasyncs (WAL). */
export interface LogStats {
  commits: number;
  entries: number;
}

export type Phase = 'new' | 'open' | 'closing' | 'closed';

/** A proposal serialised at append time, so a bad one fails its own append, not the whole batch. */
export interface EncodedProposal {
  pidJson: string;
  cmdJson: string;
  /** Upper bound of the bytes this entry takes in a commit payload, separator included (bounds a batch). */
  bytes: number;
}

/**
 * Bytes an entry adds around pid and cmd in a commit payload: braces, keys and punctuation (21),
 * the index (at most 16 digits), atMs (at most 24 characters) and the comma before the next entry.
 */
const envelopeBytesMax = 64;
/** The brackets around a commit payload's entries. */
const commitFramingBytes = 2;
/**
 * Most entry bytes (sum of `EncodedProposal.bytes`) one commit may carry, so its frame stays within
 * `frameBytesMax`. An append above it can never be committed (appends are never split) and is refused.
 */
export const commitBytesMax = frameBytesMax - commitFramingBytes;
/** Entries handed to the listener in one call during replay. */
export const replayBatchEntriesMax = 1024;
/** Entries that may wait for the next commit unless the options say otherwise. */
export const queuedEntriesMaxDefault = 65_536;
/** `code` of the error an append gets when the queue of appends waiting for a commit is full. */
export const logOverloadedCode = 'LOG_OVERLOADED' as const;

export function encodeProposal(p: Proposal, payloadBytesMax: number): EncodedProposal {
  if (typeof p.pid !== 'string') throw new TypeError('proposal pid must be a string');
  if (p.cmd === null || typeof p.cmd !== 'object') throw new TypeError(`proposal ${p.pid}: cmd must be an object`);
  const pidJson = JSON.stringify(p.pid);
  const cmdJson = JSON.stringify(p.cmd);
  const bytes = Buffer.byteLength(pidJson) + Buffer.byteLength(cmdJson) + envelopeBytesMax;
  if (bytes > payloadBytesMax) {
    throw new RangeError(`proposal ${p.pid} needs ${bytes} bytes, above the ${payloadBytesMax}-byte entry limit`);
  }
  return { pidJson, cmdJson, bytes };
}

/** Encodes one append's proposals; throws if one is invalid or all together cannot fit one commit frame. */
export function encodeAppend(proposals: readonly Proposal[]): { items: EncodedProposal[]; bytes: number } {
  const items = proposals.map((p) => encodeProposal(p, entryBytesMax));
  const bytes = items.reduce((sum, p) => sum + p.bytes, 0);
  if (bytes > commitBytesMax) {
    throw new RangeError(`an append of ${items.length} proposals needs ${bytes} bytes, above the `
      + `${commitBytesMax}-byte commit limit (one append is one commit); split it`);
  }
  return { items, bytes };
}

/** The error for an append refused because `queued` entries already wait and at most `max` may. */
export function overloadedError(kind: string, queued: number, adding: number, max: number): Error {
  const err = new Error(`${kind}: log is overloaded: ${queued} entries already wait for the next commit and `
    + `${adding} more would pass queuedEntriesMax (${max}); retry later`);
  return Object.assign(err, { code: logOverloadedCode });
}

/** True for the error an append gets when the log is overloaded (its queue of waiting appends is full). */
export function isLogOverloaded(err: unknown): err is Error & { code: 'LOG_OVERLOADED' } {
  return err instanceof Error && (err as { code?: unknown }).code === logOverloadedCode;
}

/** The error for appends refused until the log can store them again; the message names no path. */
export function unavailableError(kind: string, why: string): Error {
  return Object.assign(new Error(`${kind}: cannot store writes now: ${why}; retry later`), { code: logUnavailableCode });
}

/** `code` of the error appends get once the log has failed for good (a write or fsync error other than a full disk). */
export const logFailedCode = 'LOG_FAILED' as const;

export function isLogFailed(err: unknown): err is Error & { code: 'LOG_FAILED' } {
  return err instanceof Error && (err as { code?: unknown }).code === logFailedCode;
}

/** `code` of the error open() throws when the data on disk is damaged or incomplete and it refuses to open. */
export const logDamagedCode = 'LOG_DAMAGED' as const;

export function damagedError(message: string): Error {
  return Object.assign(new Error(message), { code: logDamagedCode });
}

export function isLogDamaged(err: unknown): err is Error & { code: 'LOG_DAMAGED' } {
  return err instanceof Error && (err as { code?: unknown }).code === logDamagedCode;
}

/** A positive integer option, or its default. */
export function positiveIntOption(kind: string, name: string, value: number | undefined, fallback: number,
  max = Number.MAX_SAFE_INTEGER): number {
  const v = value ?? fallback;
  if (!Number.isSafeInteger(v) || v < 1 || v > max) throw new RangeError(`${kind}: ${name} must be an integer in 1..${max}, got ${v}`);
  return v;
}

/** The entry time: the clock, but never before the previous entry (the port's promise). */
export function stampMs(lastAtMs: number, nowMs: number): number {
  if (!Number.isFinite(nowMs)) throw new Error(`clock returned ${nowMs}, not a time`);
  return Math.max(lastAtMs, nowMs);
}

/** One entry inside a commit payload: `{"i":index,"t":atMs,"p":pid,"c":cmd}`. */
export function entryPayload(index: number, atMs: number, p: EncodedProposal): string {
  return `{"i":${index},"t":${atMs},"p":${p.pidJson},"c":${p.cmdJson}}`;
}

/**
 * Gives a batch consecutive indexes after `last` and one entry time, as one commit payload (the
 * JSON array of record.ts) plus the entries parsed back from it, so live delivery sees exactly what
 * a replay from disk would.
 */
export function stampBatch(
  batch: readonly { items: readonly EncodedProposal[] }[],
  last: number,
  atMs: number,
): { payload: string; entries: LogEntry[] } {
  let index = last;
  const payload = `[${batch.flatMap((p) => p.items.map((item) => entryPayload(++index, atMs, item))).join(',')}]`;
  const entries = parseCommit(payload, last + 1);
  if (typeof entries === 'string') throw new Error(`commit of entries ${last + 1}..${index} does not survive JSON: ${entries}`);
  return { payload, entries };
}

/** Parses a commit payload whose first entry must be `first`, or returns why it is not one. */
export function parseCommit(payload: string, first: number): LogEntry[] | string {
  let v: unknown;
  try {
    v = JSON.parse(payload);
  } catch {
    return 'bad JSON';
  }
  if (!Array.isArray(v)) return 'payload is not an array of entries';
  if (v.length === 0) return 'commit without entries';
  const entries: LogEntry[] = [];
  for (const [k, item] of v.entries()) {
    const entry = toEntry(item);
    if (typeof entry === 'string') return `entry ${k} of the commit: ${entry}`;
    if (entry.index !== first + k) return `index ${entry.index}, expected ${first + k}`;
    entries.push(entry);
  }
  return entries;
}

/** Checks one parsed entry, or returns why it is not one. */
function toEntry(v: unknown): LogEntry | string {
  if (!isObject(v)) return 'not an object';
  const { i, t, p, c } = v;
  if (typeof i !== 'number' || !Number.isSafeInteger(i) || i < 1) return 'bad index';
  if (typeof t !== 'number' || !Number.isFinite(t)) return 'bad atMs';
  if (typeof p !== 'string') return 'bad pid';
  if (!isObject(c)) return 'bad cmd';
  // The log does not judge commands: an unknown tag is the applier's to refuse (wire format rule).
  return { index: i, atMs: t, pid: p, cmd: c as unknown as Command };
}

/** The snapshot payload: `{"index":n,"data":...}`; data must survive JSON. */
export function snapshotPayload(s: Snapshot): string {
  return JSON.stringify({ index: s.index, data: s.data });
}

/**
 * The same text as snapshotPayload, in pieces of about `chunkChars` characters: the arrays of the
 * data object (a million KV entries, say) are written element by element, so no single string of the
 * whole state is ever built (at 1M keys that was a 256 MB string plus a buffer of it).
 */
export function* snapshotPayloadChunks(s: Snapshot, chunkChars = 1 << 20): Generator<string> {
  let pending = `{"index":${JSON.stringify(s.index)},"data":`;
  const out = function* (text: string): Generator<string> {
    pending += text;
    if (pending.length >= chunkChars) {
      yield pending;
      pending = '';
    }
  };
  const data = s.data;
  if (data === null || typeof data !== 'object' || Array.isArray(data)) {
    yield* out(JSON.stringify(data) ?? 'null');
  } else {
    yield* out('{');
    let first = true;
    for (const [k, v] of Object.entries(data as Record<string, unknown>)) {
      // JSON.stringify leaves out undefined, function and symbol members; so does this.
      if (v === undefined || typeof v === 'function' || typeof v === 'symbol') continue;
      yield* out(`${first ? '' : ','}${JSON.stringify(k)}:`);
      first = false;
      if (!Array.isArray(v)) {
        yield* out(JSON.stringify(v));
        continue;
      }
      yield* out('[');
      for (let i = 0; i < v.length; i++) yield* out(`${i === 0 ? '' : ','}${JSON.stringify(v[i]) ?? 'null'}`);
      yield* out(']');
    }
    yield* out('}');
  }
  pending += '}';
  yield pending;
}

export function parseSnapshot(payload: string): Snapshot | string {
  let v: unknown;
  try {
    v = JSON.parse(payload);
  } catch {
    return 'bad JSON';
  }
  if (!isObject(v) || typeof v.index !== 'number' || !Number.isSafeInteger(v.index)) return 'bad snapshot index';
  return { index: v.index, data: v.data };
}

/** Why an append must be refused now, if it must. */
export function refusal(kind: string, phase: Phase, failure: Error | undefined): Error | undefined {
  if (failure !== undefined) return failure;
  if (phase === 'new') return new Error(`${kind}: not open yet, call open() first`);
  if (phase !== 'open') return new Error(`${kind}: log is closed`);
  return undefined;
}

/** subscribe(afterIndex) must not ask past the end: a consumer ahead of its log has lost data. */
export function checkAfterIndex(kind: string, afterIndex: number, last: number): void {
  if (!Number.isSafeInteger(afterIndex) || afterIndex < 0 || afterIndex > last) {
    throw new RangeError(`${kind}.subscribe: afterIndex ${afterIndex} is outside 0..${last} (lastIndex)`);
  }
}

/** A snapshot covers applied entries, so it cannot pass the log's end or go back before the newest one. */
export function snapshotRefusal(kind: string, s: Snapshot, last: number, newest: number): Error | undefined {
  if (!Number.isSafeInteger(s.index) || s.index < 0 || s.index > last) {
    return new RangeError(`${kind}.saveSnapshot: index ${s.index} is outside 0..${last} (lastIndex)`);
  }
  if (s.index < newest) {
    return new RangeError(`${kind}.saveSnapshot: index ${s.index} is older than the newest snapshot ${newest}`);
  }
  return undefined;
}

function isObject(v: unknown): v is Record<string, unknown> {
  return typeof v === 'object' && v !== null && !Array.isArray(v);
}
