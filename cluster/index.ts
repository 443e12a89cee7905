/** The cluster adapters (DESIGN §3, §4); everything else in cluster/ is private to this folder. */
export { JetStreamLog } from './jetstream-log.ts';
export type { JetStreamLogOptions, JetStreamLogStats } from './jetstream-log.ts';
