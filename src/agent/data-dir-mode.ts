/**
 * A data dir serves one kind of node. A single node keeps its whole registry there (the embedded log in
 * `wal/` and `snap/`); a cluster node keeps none of it (the stream holds the log). Started in the other
 * mode on the same dir, a node would serve a registry that is not the one its clients used: a cluster node
 * restarted without `--nats` (a flag lost from a unit file) would answer on its usual address from an empty
 * registry of its own and grant locks that the cluster's clients hold; a single node started with `--nats`
 * would leave its state behind unseen. etcd refuses a data dir bootstrapped for another cluster the same way.
 *
 * So a cluster node marks its dir (`cluster`, once it has opened the log), and a start stops (exit 2),
 * saying how to go on, when the mode does not match what the dir holds.
 *
 * The marker also records the log the node joined (its identity, `<stream>@<creation time>`): a start
 * with `--nats` naming other nats-servers (a standalone one, another cluster's) finds another log there, or
 * none, and the log refuses it (cluster/jetstream/log-identity.ts) before it creates anything, rather than
 * serve a registry the cluster's clients never wrote; etcd refuses a member whose data dir holds another
 * cluster's ID. A marker written by an earlier release records no log: the start takes the log it finds
 * and records it.
 *
 * A single node marks its dir too (`embedded-log`, once it has started on its log): a start that then finds
 * no log in it (`wal/` and `snap/` removed, or their files emptied) stops, rather than serve an empty
 * registry as if nothing had ever been stored and grant locks that clients believe they hold.
 */
import { existsSync, readdirSync, readFileSync, statSync } from 'node:fs';
import { dirname, join, resolve } from 'node:path';
import { ConfigError } from '../config.ts';
import { isLogForeign } from '../ports/log-errors.ts';
import { segmentPattern, snapPattern, writeFileWhole } from '../wal/files.ts';

/** The file that marks a cluster node's data dir. */
const clusterMarkerName = 'cluster';
/** The file that marks a data dir whose embedded log a single node has started on. */
const embeddedMarkerName = 'embedded-log';

/** Files of an embedded log in the data dir: its segments and snapshots (`filled`: only those not empty). */
function embeddedLogFiles(dataDir: string, filled = false): number {
  const count = (dir: string, pattern: RegExp) => {
    try {
      const names = readdirSync(join(dataDir, dir)).filter((name) => pattern.test(name));
      return filled ? names.filter((name) => statSync(join(dataDir, dir, name)).size > 0).length : names.length;
    } catch {
      return 0;
    }
  };
  return count('wal', segmentPattern) + count('snap', snapPattern);
}

/**
 * Stops the start (ConfigError, exit 2) when a file stands where the data dir, or a directory above it, would
 * be; judged without making anything, so `roster validate` judges it too.
 */
export function checkDataDirPath(dataDir: string): void {
  let path = resolve(dataDir);
  while (!existsSync(path) && dirname(path) !== path) path = dirname(path);
  if (existsSync(path) && !statSync(path).isDirectory()) {
    throw new ConfigError(`--data-dir ${dataDir}: cannot be used as the data dir: it, or a directory above it, is a file`);
  }
}

/** Stops the start (ConfigError, exit 2) when the data dir belongs to the other kind of node. */
export function checkDataDirMode(dataDir: string, clustered: boolean): void {
  const marker = join(dataDir, clusterMarkerName);
  const marked = existsSync(marker);
  if (!clustered && marked) {
    throw new ConfigError(`--data-dir ${dataDir}: it belongs to a cluster node (${marker}), but --nats is not given: `
      + 'this agent would serve an empty registry of its own and grant locks the cluster\'s clients hold. '
      + `Start it with --nats as before; to run it as a single node with a new, empty registry, remove ${marker}`);
  }
  const embedded = join(dataDir, embeddedMarkerName);
  if (!clustered && existsSync(embedded) && embeddedLogFiles(dataDir, true) === 0) {
    throw new ConfigError(`--data-dir ${dataDir}: its log is gone: wal/ and snap/ hold nothing, but a registry was kept here before `
      + `(${embedded}). Started, this agent would serve an empty registry as if nothing had been stored, and grant locks that clients `
      + 'believe they hold. Put the log back (the data dir from a backup), or start with an empty registry and restore a saved snapshot '
      + `(roster snapshot restore); to start empty on purpose, remove ${embedded}`);
  }
  const files = clustered && !marked ? embeddedLogFiles(dataDir) : 0;
  if (files > 0) {
    throw new ConfigError(`--data-dir ${dataDir}: it holds a single node's embedded log (${files} files in wal/ and snap/), `
      + 'which a cluster node does not read: its registry would stay behind unseen. To bring it into the cluster, '
      + 'start this agent once more without --nats, save it (roster snapshot save) and restore it into the cluster '
      + `(roster snapshot restore); to join the cluster without it, move ${join(dataDir, 'wal')} and ${join(dataDir, 'snap')} away`);
  }
}

/** The line of the cluster marker that records the log the node joined. */
const joinedLine = /^log: (\S+)$/m;

/**
 * The log this data dir's node joined, as its cluster marker records it; undefined when there is no
 * marker (a new node) or it records none (written by an earlier release).
 */
export function joinedLog(dataDir: string): string | undefined {
  const marker = join(dataDir, clusterMarkerName);
  if (!existsSync(marker)) return undefined;
  return joinedLine.exec(readFileSync(marker, 'utf8'))?.[1];
}

/**
 * Marks the data dir as a cluster node's, recording `log`, the log it opened (once it has). A marker that
 * records a log is kept: the log opened is that one, or it would have refused to open. Says what it did:
 * `adopted` when a marker recorded none before (an earlier release's).
 */
export async function markClusterDataDir(dataDir: string, log: string | undefined): Promise<'kept' | 'written' | 'adopted'> {
  const marker = join(dataDir, clusterMarkerName);
  const marked = existsSync(marker);
  if (marked && (log === undefined || joinedLog(dataDir) !== undefined)) return 'kept';
  await writeFileWhole(marker, 'This data dir belongs to a Roster cluster node: start it with --nats (see docs/cluster.md).\n'
    + 'It joined the log named below: a start whose --nats servers hold another log, or none, stops.\n'
    + `${log === undefined ? '' : `log: ${log}\n`}`);
  return marked ? 'adopted' : 'written';
}

/**
 * The refusal (ConfigError, exit 2) of a start whose log is not the one the data dir's node joined
 * (isLogForeign), saying what probably happened and what to do; undefined for any other failure.
 */
export function foreignLogRefusal(err: unknown, dataDir: string, servers: readonly string[]): ConfigError | undefined {
  if (!isLogForeign(err)) return undefined;
  const marker = join(dataDir, clusterMarkerName);
  const { joined, found, deletedSnapshots: deleted } = err;
  const head = `--data-dir ${dataDir}: this node joined the log ${joined} (recorded in ${marker}), but the nats-servers ${servers.join(',')}`;
  if (found !== undefined) {
    return new ConfigError(`${head} hold another log of that name, ${found}: --nats probably names another cluster's servers. `
      + 'Started on it, this node would answer from a registry its clients never wrote and grant locks the cluster\'s clients hold. '
      + `Point --nats at this cluster's nats-servers; to make this node a member of the other log on purpose, remove ${marker} (or the data dir)`);
  }
  const stream = joined.slice(0, joined.lastIndexOf('@'));
  if (deleted === undefined) {
    return new ConfigError(`${head} have no stream ${stream}: --nats probably names other nats-servers than the cluster's `
      + '(a standalone one, another cluster\'s), and nothing was created on them. Started on a new, empty stream there, this node would '
      + 'answer from an empty registry and grant locks the cluster\'s clients hold. Point --nats at this cluster\'s nats-servers; '
      + `to start a new, empty log on these servers on purpose, remove ${marker} and start again`);
  }
  const { store, count, newest } = deleted;
  return new ConfigError(`${head} have no stream ${stream}, while their snapshot bucket ${store} holds ${count} snapshot${count === 1 ? '' : 's'} `
    + `of it${newest > 0 ? ` (the newest at index ${newest})` : ''}: the stream was deleted on them. Created anew it would be empty, and this node `
    + 'would serve an empty registry as if nothing had been lost. To start over with an empty registry, delete the bucket\'s snapshots of it '
    + `(nats object rm ${store} <name>, or the bucket), remove the marker (${marker}) on every node and start them, then restore a snapshot `
    + 'saved with `roster snapshot save --stale` if there is one (roster snapshot restore)');
}

/** Marks the data dir as holding a single node's embedded log (once the node has started on it); kept when it is there. */
export async function markEmbeddedDataDir(dataDir: string): Promise<void> {
  const marker = join(dataDir, embeddedMarkerName);
  if (existsSync(marker)) return;
  await writeFileWhole(marker, 'This data dir holds a Roster single node\'s embedded log (wal/ and snap/): a start that finds them gone stops.\n');
}
