export { RegistryState, compareKeys } from './registry-state.ts';
export { apply } from './apply/dispatch.ts';
export { readTxn } from './apply/txn.ts';
export type { Applied, Effect, Failure, Result } from './apply/types.ts';
export { toSnapshotData, fromSnapshotData, checkedSnapshotData, snapshotCounts } from './snapshot.ts';
export { probeResultChanges, passiveDefinition } from './apply/checks.ts';
export type { SnapshotData } from './snapshot.ts';
export { encodeSnapshotFile, openSnapshotFile, readSnapshotFile, restoreCommand, SnapshotFileError, snapshotFileFormat, snapshotFileVersion } from './snapshot-file.ts';
export type { OpenedSnapshot, SnapshotMeta } from './snapshot-file.ts';
