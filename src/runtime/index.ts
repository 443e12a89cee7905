export { Runtime } from './runtime.ts';
export type { RuntimeOptions, Logger } from './runtime.ts';
export type { Interest } from './watches.ts';
export { ServingTracker, computeServingStatuses, servingOf } from './serving.ts';
export type { ServingStatus, ServingListener } from './serving.ts';
export { ChangeLog } from './changes.ts';
export type { Change, ChangeListener, ChangeLogOptions } from './changes.ts';
export { LockQueues } from './lock-queue.ts';
