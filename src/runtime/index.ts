export { Runtime } from './runtime.ts';
export type { RuntimeOptions, Logger } from './runtime.ts';
export type { Interest } from './watches.ts';
