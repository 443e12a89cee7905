/** Named bounds of the registry, unit last. Where a spec fixes a value, the comment says which. */

/** registry.md Limits: session LockDelay 0 to 60 seconds, default 15 seconds. */
export const lockDelayMsMax = 60_000;
export const lockDelayMsDefault = 15_000;

/** Session TTL bounds (consul-compat.md §1.1: 10s ≤ ttl ≤ 24h; the minimum is configurable like Consul's session_ttl_min). */
export const sessionTtlMsMinDefault = 10_000;
export const sessionTtlMsMax = 24 * 60 * 60 * 1000;
/** The server invalidates a session 2 × TTL after its last renew, like Consul's SessionTTLMultiplier. */
export const sessionTtlMultiplier = 2;

/** Largest request body: Consul's KV value limit (524288 bytes); also applied to JSON bodies. */
export const requestBodyBytesMax = 512 * 1024;

/** Consul's check_output_max_size default: the most of a check's output kept. */
export const checkOutputBytesMax = 4096;
/**
 * A probe's recorded output may exceed its check's output size by this much: room for the words the probe
 * writes around what it captured (an HTTP check's method, URL and status line; `Captured … of … bytes`).
 */
export const checkOutputFramingBytesMax = 512;

/** Operations in one transaction (Consul's maxTxnOps). */
export const txnOpsMax = 64;

/** Blocking queries (consul-compat.md §2): default wait 5 min, capped at 10 min, jitter up to wait/16. */
export const blockingWaitMsDefault = 5 * 60 * 1000;
export const blockingWaitMsMax = 10 * 60 * 1000;
export const blockingJitterDivisor = 16;

/**
 * Deleted keys remembered for index reporting; past this many, or past this many bytes of them (long
 * keys), the oldest are folded into one floor index.
 */
export const tombstonesMax = 10_000;
export const tombstoneBytesMax = 16 * 1024 * 1024;

/** The node check every session binds by default (Consul's serfHealth). */
export const gossipCheckId = 'gossipHealth';
/** Consul's name for the same check, accepted on input wherever a check id is given. */
export const consulGossipCheckId = 'serfHealth';

/** Maps Consul's serfHealth to gossipHealth; any other id is returned as is. */
export function canonicalCheckId(id: string): string {
  return id === consulGossipCheckId ? gossipCheckId : id;
}
export const gossipCheckName = 'Gossip Health Status';
export const gossipCheckOutputAlive = 'Agent alive and reachable';
export const gossipCheckOutputFailed = 'Agent not live or unreachable';
/**
 * The output of a left node's gossip check (critical): the node said it leaves, or was force-left. The
 * catalog keeps it, and with it the record that the node no longer counts towards the cluster's majority.
 */
export const gossipCheckOutputLeft = 'Agent left the cluster';
