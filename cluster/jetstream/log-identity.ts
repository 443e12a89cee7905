/**
 * The log's identity, `<stream>@<creation time>`, and what open() makes of it when this node joined a log
 * before (the `joined` option: the agent keeps it in its data dir). Started with the URLs of other
 * nats-servers (a standalone one, another cluster's), a node finds another stream of the log's name, or
 * none and would create one: it would serve a registry its clients never wrote and grant locks the
 * cluster's clients hold. So open() refuses then, before it creates or reads anything on those servers,
 * as etcd refuses a member whose data dir holds another cluster's ID.
 */
import type { StreamInfo } from '@nats-io/jetstream';
import { foreignLogError, type ForeignLog } from '../../src/ports/index.ts';
import { sleepMs } from '../../src/util/index.ts';
import { sameCluster } from '../heartbeat.ts';
import { kind } from './options.ts';

/** The identity of the log a stream holds: its name and creation time (one deleted and created again is another log). */
export function logIdentity(stream: string, created: string): string {
  return `${stream}@${created}`;
}

/**
 * Refuses the stream found when it holds another log than `joined` (undefined: this node joined none yet,
 * any is taken). Creation times less than a second apart name one log, as in gossip (sameCluster).
 */
export function checkJoined(joined: string | undefined, info: StreamInfo): void {
  if (joined === undefined) return;
  const found = logIdentity(info.config.name, info.created);
  if (sameCluster(joined, found)) return;
  throw foreignLogError(`${kind}.open: this node joined the log ${joined}, but the stream found holds another log, ${found}`, { joined, found });
}

/** How often, and how far apart, a stream found missing is asked for again before a node that joined it is refused. */
const missingAsksMax = 6;
const missingAskGapMs = 500;

/**
 * Whether a stream found missing is still missing when asked again for about 3 s: a server of a cluster
 * may answer "not found" a moment before it knows a stream (just created through another server, or while
 * it recovers), and a node that joined the log must not be refused for that. `gone` answers false once the
 * stream is there; its failures (no answer, no leader) are the caller's to retry.
 */
export async function missingStill(gone: () => Promise<boolean>): Promise<boolean> {
  for (let ask = 0; ask < missingAsksMax; ask++) {
    await sleepMs(missingAskGapMs);
    if (!await gone()) return false;
  }
  return true;
}

/** The refusal of a start that finds no stream where this node joined `joined`; `deleted`: snapshots of the name still kept. */
export function missingJoined(joined: string, deleted?: ForeignLog['deletedSnapshots']): Error {
  const stream = joined.slice(0, joined.lastIndexOf('@'));
  return foreignLogError(`${kind}.open: this node joined the log ${joined}, but there is no stream ${stream}`
    + `${deleted === undefined ? '' : ` (the snapshot bucket ${deleted.store} holds ${deleted.count} of its snapshots: it was deleted)`}; `
    + 'none is created', { joined, found: undefined, deletedSnapshots: deleted });
}
