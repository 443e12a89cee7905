export { Runtime } from './runtime.ts';
export type { RuntimeOptions, Logger } from './runtime.ts';
export type { Interest } from './watches.ts';
export { ServingTracker, computeServingStatuses } from './serving.ts';
export type { ServingStatus, ServingListener } from './serving.ts';
