/**
 * The cluster log adapter (DESIGN §3). The membership adapter (DESIGN §4) is the other public module,
 * cluster/gossip-membership.ts, kept apart so that loading one does not load the other's libraries
 * (libp2p for gossip, the NATS clients for the log); everything else in cluster/ is private to this folder.
 * `cluster/dev/` holds the local-cluster tooling (the nats-server launcher, `npm run cluster`) that
 * tests, benches and developers use; the agent never loads it.
 */
export { JetStreamLog } from './jetstream/log.ts';
export type { JetStreamLogOptions, JetStreamLogStats } from './jetstream/log.ts';
export type { NatsAuth } from './jetstream/options.ts';
