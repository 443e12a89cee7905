/**
 * What the WAL and its in-memory twin share: the entry wire format and the argument checks, so the
 * twin behaves byte-for-byte like the durable log (a cmd that does not survive JSON fails in both).
 */
import type { Command } from '../domain/commands.ts';
import type { LogEntry, Proposal, Snapshot } from '../ports/log.ts';

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
  /** Upper bound of the record payload in bytes (used to bound a batch). */
  bytes: number;
}

/** Bytes the envelope adds around pid and cmd: braces, keys and two numbers. */
const envelopeBytesMax = 64;
/** Entries handed to the listener in one call during replay. */
export const replayBatchEntriesMax = 1024;

export function encodeProposal(p: Proposal, payloadBytesMax: number): EncodedProposal {
  if (typeof p.pid !== 'string') throw new TypeError('proposal pid must be a string');
  if (p.cmd === null || typeof p.cmd !== 'object') throw new TypeError(`proposal ${p.pid}: cmd must be an object`);
  const pidJson = JSON.stringify(p.pid);
  const cmdJson = JSON.stringify(p.cmd);
  const bytes = Buffer.byteLength(pidJson) + Buffer.byteLength(cmdJson) + envelopeBytesMax;
  if (bytes > payloadBytesMax) {
    throw new RangeError(`proposal ${p.pid} needs ${bytes} bytes, above the ${payloadBytesMax}-byte record limit`);
  }
  return { pidJson, cmdJson, bytes };
}

/** The entry time: the clock, but never before the previous entry (the port's promise). */
export function stampMs(lastAtMs: number, nowMs: number): number {
  if (!Number.isFinite(nowMs)) throw new Error(`clock returned ${nowMs}, not a time`);
  return Math.max(lastAtMs, nowMs);
}

/** The record payload: `{"i":index,"t":atMs,"p":pid,"c":cmd}`. */
export function entryPayload(index: number, atMs: number, p: EncodedProposal): string {
  return `{"i":${index},"t":${atMs},"p":${p.pidJson},"c":${p.cmdJson}}`;
}

/**
 * Gives a batch consecutive indexes after `last` and one entry time, as record payloads plus the
 * entries parsed back from them, so live delivery sees exactly what a replay from disk would.
 */
export function stampBatch(
  batch: readonly { items: readonly EncodedProposal[] }[],
  last: number,
  atMs: number,
): { payloads: string[]; entries: LogEntry[] } {
  let index = last;
  const payloads = batch.flatMap((p) => p.items.map((item) => entryPayload(++index, atMs, item)));
  const entries = payloads.map((payload, k) => {
    const entry = parseEntry(payload);
    if (typeof entry === 'string') throw new Error(`entry ${last + 1 + k} does not survive JSON: ${entry}`);
    return entry;
  });
  return { payloads, entries };
}

/** Parses a record payload into an entry, or returns why it is not one. */
export function parseEntry(payload: string): LogEntry | string {
  let v: unknown;
  try {
    v = JSON.parse(payload);
  } catch {
    return 'bad JSON';
  }
  if (!isObject(v)) return 'payload is not an object';
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
