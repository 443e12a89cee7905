/**
 * What the embedded WAL and the cluster log share: the commit queue (group commit and its bounds),
 * proposal encoding and the commit payload format, snapshot payload framing, the size limits and
 * argument checks. The log error types live in src/ports (log-errors.ts) and are re-exported here.
 */
export { CommitQueue, appendTo, deliverCommit } from './commit-queue.ts';
export type { AppendEncoder, CommitBounds, CommitFn, LogStats, Pending } from './commit-queue.ts';
export {
  EntryClock, encodeAppend, encodeProposal, entryPayload, parseCommit, stampBatch, stampMs,
} from './commit-payload.ts';
export type { EncodedProposal } from './commit-payload.ts';
export { entryFormatVersion, FormatVersionError, formatVersionOf, logFormatVersion, writtenFormatVersion } from './format-version.ts';
export { parseSnapshot, snapshotPayload, snapshotPayloadChunks } from './snapshot-payload.ts';
export {
  checkAfterIndex, commitBytesMax, entryBytesMax, frameBytesMax, positiveIntOption, queuedEntriesMaxDefault, refusal,
  replayBatchEntriesMax, snapshotRefusal,
} from './limits.ts';
export type { Phase } from './limits.ts';
export {
  damagedError, failedError, isLogDamaged, isLogFailed, isLogOverloaded, isLogUnavailable, logDamagedCode, logFailedCode,
  logOverloadedCode, logUnavailableCode, overloadedError, unavailableError,
} from '../ports/log-errors.ts';
export { WritableListeners } from './writable.ts';
export { LogReach, type ReachBounds } from './reach.ts';
