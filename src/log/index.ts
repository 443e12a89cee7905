/**
 * What the embedded WAL and the cluster log share: the commit queue (group commit and its bounds),
 * proposal encoding, the commit and snapshot payload formats, the size limits and argument checks.
 */
export { CommitQueue, appendTo, deliverCommit } from './commit-queue.ts';
export type { CommitBounds, CommitFn, Pending } from './commit-queue.ts';
export * from './common.ts';
