/**
 * The cluster adapters (DESIGN §3, §4); everything else in cluster/ is private to this folder.
 * `cluster/dev/` holds the local-cluster tooling (the nats-server launcher, `npm run cluster`) that
 * tests, benches and developers use; the agent never loads it.
 */
export { JetStreamLog } from './jetstream/log.ts';
export type { JetStreamLogOptions, JetStreamLogStats } from './jetstream/log.ts';
