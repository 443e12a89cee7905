/**
 * The size limits every log shares and the argument checks they make alike, so the WAL, its in-memory
 * twin and the cluster log refuse the same calls with the same words.
 */
import type { Snapshot } from '../ports/log.ts';

const MiB = 1024 * 1024;
/** Largest commit payload; a larger length in a segment frame header is corruption, not a frame. */
export const frameBytesMax = 64 * MiB;
/** Largest single entry (as JSON) a proposal may produce. */
export const entryBytesMax = 16 * MiB;
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

export type Phase = 'new' | 'open' | 'closing' | 'closed';

/** A positive integer option, or its default. */
export function positiveIntOption(kind: string, name: string, value: number | undefined, fallback: number,
  max = Number.MAX_SAFE_INTEGER): number {
  const v = value ?? fallback;
  if (!Number.isSafeInteger(v) || v < 1 || v > max) throw new RangeError(`${kind}: ${name} must be an integer in 1..${max}, got ${v}`);
  return v;
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
