export { RegistryState, compareKeys } from './registry-state.ts';
export { apply } from './apply.ts';
export type { Applied, Effect, Failure, Result } from './apply.ts';
export { toSnapshotData, fromSnapshotData } from './snapshot.ts';
export { probeResultChanges, passiveDefinition } from './apply-health.ts';
export type { SnapshotData } from './snapshot.ts';
