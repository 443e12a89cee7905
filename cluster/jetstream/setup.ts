/**
 * What open() does before reading: connect, find or create the stream (an existing one is used as it
 * is, its differences from our settings logged), create the snapshot bucket. Each step is retried
 * through the transient failures of a cluster still electing its leaders.
 */
import { setTimeout as sleep } from 'node:timers/promises';
import { connect, nanos, type NatsConnection } from '@nats-io/transport-node';
import {
  DiscardPolicy, JetStreamApiCodes, jetstream, jetstreamManager, RetentionPolicy, StorageType,
  type JetStreamClient, type JetStreamManager, type StreamConfig, type StreamInfo,
} from '@nats-io/jetstream';
import { Objm, type ObjectStore } from '@nats-io/obj';
import type { ForeignLog, Logger } from '../../src/ports/index.ts';
import { Bucket } from './bucket.ts';
import { kind, type NatsAuth, type Settings } from './options.ts';
import { listObjects } from './object-list.ts';
import { notNatsServer } from './not-nats.ts';
import { checkJoined, missingJoined, missingStill } from './log-identity.ts';
import { errorMessage, isApiError, noPeersForPlacementCode, replicasNotSupportedCode, retrying, SetupRefusal, streamGone } from './retry.ts';

/** Client pings to its server: a silent server (partitioned, paused) is left after about 2 s × 3. */
const natsPingIntervalMs = 2_000;
const natsMaxPingOut = 3;
/** JetStream drops a repeated message id within this window; it must outlast a commit's retries. */
const duplicateWindowMsMin = 120_000;
/** A stream created this recently may still be answering racing creates: see settledStream. */
const youngStreamMs = 30_000;
const settleGapMs = 500;
/** Bytes kept free in a message for the headers (message id) and the protocol line. */
const messageHeadroomBytes = 1024;
/** JetStream's error code for "stream name already in use" (not in the client's JetStreamApiCodes). */
export const streamNameInUseCode = 10058;

/** The settings the stream is created with or checked against. */
export type StreamPlan = Pick<Settings, 'stream' | 'subject' | 'replicas' | 'publishRetryMsMax' | 'publishTimeoutMs'>
  /**
   * The snapshot bucket: a missing stream whose snapshots it holds was deleted, and is not created anew.
   * The log this node joined before: another stream of the name, or none, is refused (log-identity.ts).
   */
  & Partial<Pick<Settings, 'bucket' | 'joined'>>;

/** The stream as this node uses it. */
export interface AdoptedStream {
  info: StreamInfo;
  /** Where commits are published: ours, or the existing stream's single subject. */
  subject: string;
  /** True when the stream carries only our subject: then a jump in sequence numbers is lost data. */
  strictSeq: boolean;
  /** Where the existing stream's settings differ from ours (logged, not changed). */
  differs: Record<string, unknown>;
}

/** Everything the log reads and writes through, once open() has set it up. */
export interface Stores {
  jsm: JetStreamManager;
  js: JetStreamClient;
  stream: AdoptedStream;
  /** The snapshot bucket, made again if it is deleted while the node runs. */
  store: Bucket;
  /** Most bytes of entries in one commit message (from the server's max_payload). */
  bytesMax: number;
}

/** Connects to one of `servers`; a refusal of the credentials (or of none) says which setting to look at, and is not retried. */
export function connectNats(servers: string[], nodeName: string, auth?: NatsAuth): Promise<NatsConnection> {
  return connect({
    servers,
    ...(auth === undefined ? {} : 'token' in auth ? { token: auth.token } : { user: auth.user, pass: auth.pass }),
    name: `roster-${nodeName}`,
    maxReconnectAttempts: -1,
    reconnectTimeWait: 250,
    // A server cut off without closing the socket (a partition) is noticed after about
    // pingInterval × maxPingOut and the client moves to another server; nats.js's default is 2 minutes
    // per ping, during which every write of this node would time out (the partition fault test).
    pingInterval: natsPingIntervalMs,
    maxPingOut: natsMaxPingOut,
    // nats.js otherwise builds an Error (a stack capture) ahead of every request in case it fails:
    // several per cent of a cluster node's busy time under load (profiled); a failure's own error says enough.
    noAsyncTraces: true,
  }).catch((err: unknown) => {
    const message = (err as Error).message ?? String(err);
    if (!/authorization|authentication/i.test(message)) throw notNatsServer(err, servers);
    const what = auth === undefined ? 'a connection without credentials' : 'this node\'s credentials';
    throw new SetupRefusal(`the nats-servers refused ${what} (${message}): set nats_auth in the config file, or the user and password in the --nats URLs`);
  });
}

/** JetStream, the stream and the bucket, each retried until `deadline`. */
export async function openStores(nc: NatsConnection, s: Settings, deadline: number): Promise<Stores> {
  const attemptMsMax = 3 * s.publishTimeoutMs;
  const jsm = await retrying(s.logger, 'JetStream', deadline, () => jetstreamManager(nc, { timeout: s.publishTimeoutMs }), attemptMsMax)
    .catch((err: unknown) => {
      // Still so at the open deadline: the servers run without JetStream, not just starting.
      if (!/jetstream is not enabled/i.test(errorMessage(err))) throw err;
      throw new Error(`${errorMessage(err)}: run the nats-servers with JetStream on (-js, or a jetstream block in their config)`, { cause: err });
    });
  const js = jetstream(nc, { timeout: s.publishTimeoutMs });
  const stream = await openStream(jsm, s, deadline, attemptMsMax);
  const create = (): Promise<ObjectStore> => new Objm(js).create(s.bucket, { replicas: s.replicas, storage: StorageType.File });
  const store = await retrying(s.logger, `bucket ${s.bucket}`, deadline, create, attemptMsMax);
  return { jsm, js, stream, store: new Bucket(store, { name: s.bucket, jsm, create, logger: s.logger }), bytesMax: messageBytesMax(nc.info?.max_payload) };
}

/** Most entry bytes in one message, given the server's max_payload. */
export function messageBytesMax(maxPayload: number | undefined): number {
  return Math.max(1, (maxPayload ?? 1024 * 1024) - messageHeadroomBytes);
}

export function duplicateWindowMs(p: StreamPlan): number {
  return Math.max(duplicateWindowMsMin, 2 * (p.publishRetryMsMax + p.publishTimeoutMs));
}

/** The stream this node creates when there is none. */
export function streamConfig(p: StreamPlan): Partial<StreamConfig> & { name: string } {
  return {
    name: p.stream,
    subjects: [p.subject],
    storage: StorageType.File,
    num_replicas: p.replicas,
    retention: RetentionPolicy.Limits,
    discard: DiscardPolicy.Old,
    duplicate_window: nanos(duplicateWindowMs(p)),
    // Indexes are counted from the messages: deleting one would renumber everything after it. A purge
    // of the oldest ones renumbers nothing (a snapshot's mark carries the index there) and stays allowed:
    // compaction.ts purges (deny_purge is a separate flag, left off).
    deny_delete: true,
  };
}

/** The stream found or created, as every node reads it; each request retried until `deadline`. */
export async function openStream(jsm: JetStreamManager, p: StreamPlan & { logger: Logger }, deadline: number, attemptMsMax: number): Promise<AdoptedStream> {
  const adopted = await retrying(p.logger, `stream ${p.stream}`, deadline, () => ensureStream(jsm, p, p.logger), attemptMsMax)
    .catch((err: unknown) => { throw withReplicasHint(err, p.replicas); });
  const settled = await settledStream(adopted, deadline, () => retrying(p.logger, `stream ${p.stream}`, deadline, () => infoOfKnown(jsm, p.stream), attemptMsMax));
  checkJoined(p.joined, settled.info);
  return settled;
}

/**
 * The info of a stream known to exist (this node created it, or JetStream said its name is in use). A
 * stream created through one server of a cluster reaches the others a moment later: until then the server
 * this node asks answers "not found", which is turned into a transient failure, to be retried.
 */
async function infoOfKnown(jsm: JetStreamManager, stream: string): Promise<StreamInfo> {
  try {
    return await jsm.streams.info(stream);
  } catch (err) {
    if (isApiError(err, JetStreamApiCodes.StreamNotFound)) throw new Error(`stream ${stream} is not known to this server yet`, { cause: err });
    throw err;
  }
}

/** The open's error, saying what to do when JetStream cannot keep `replicas` copies of the stream. */
export function withReplicasHint(err: unknown, replicas: number): unknown {
  const cause = (err as Error | undefined)?.cause;
  const message = errorMessage(err);
  if (isApiError(cause, replicasNotSupportedCode)) {
    return new SetupRefusal(`${message}: these nats-servers run JetStream without a cluster, which keeps one copy of a stream: `
      + `start the nodes with --replicas 1, or give them the URLs of a nats-server cluster (docs/cluster.md)`, { cause });
  }
  if (isApiError(cause, noPeersForPlacementCode)) {
    return new Error(`${message}: JetStream could not place ${replicas} copies of the stream: fewer nats-servers with JetStream `
      + `are up, or in their cluster, than --replicas ${replicas} asks for; start them, or give --replicas at most their number`, { cause });
  }
  return err;
}

/**
 * The stream as every node reads it. nats-server 2.9 answers each of several identical creates that race
 * a few milliseconds apart with success and that create's own creation time, and a read just after may
 * still show it, while the stream keeps the first create's. The creation time is half of the log's
 * identity (gossiped, and written in each snapshot), so a stream created in the last `youngStreamMs`
 * (by this node's clock), or whose creation time is not known yet (Go's zero time), is read again until
 * two reads `settleGapMs` apart give the same known time.
 */
export async function settledStream(adopted: AdoptedStream, deadline: number, read: () => Promise<StreamInfo>): Promise<AdoptedStream> {
  if (knownCreation(adopted.info.created) && Date.now() - Date.parse(adopted.info.created) > youngStreamMs) return adopted;
  let info = adopted.info;
  for (;;) {
    await sleep(settleGapMs);
    const next = await read();
    if (next.created === info.created && knownCreation(next.created)) return { ...adopted, info: next };
    if (performance.now() > deadline) throw new Error(`${kind}: the creation time of stream ${next.config.name} did not settle before the open deadline`);
    info = next;
  }
}

/**
 * Whether a stream's creation time is one. While nodes race to create the stream, a server has been seen
 * to answer its info with Go's zero time (`0001-01-01T00:00:00Z`), which would otherwise pass for a stream
 * created long ago and be taken as it is.
 */
function knownCreation(created: string): boolean {
  const ms = Date.parse(created);
  return Number.isFinite(ms) && ms > 0;
}

/** Creates the stream if missing; an existing one is used as it is (differences are logged). */
export async function ensureStream(jsm: JetStreamManager, p: StreamPlan, logger: Logger): Promise<AdoptedStream> {
  let info: StreamInfo;
  try {
    info = await jsm.streams.info(p.stream);
  } catch (err) {
    if (!isApiError(err, JetStreamApiCodes.StreamNotFound)) throw err;
    const deleted = p.bucket === undefined ? undefined : await snapshotsLeft(jsm, p.stream, p.bucket);
    info = p.joined === undefined ? await createStream(jsm, p, logger, deleted) : await joinedStream(jsm, p.stream, p.joined, deleted);
  }
  const adopted = adoptStream(info, p);
  if (Object.keys(adopted.differs).length > 0) {
    logger.warn({ stream: p.stream, differs: adopted.differs }, 'JetStream log: using the existing stream as it is, its settings differ from ours');
  }
  return adopted;
}

/** Creates the missing stream, unless the snapshot bucket says it was deleted; one another node has just created is used. */
async function createStream(jsm: JetStreamManager, p: StreamPlan, logger: Logger, deleted: ForeignLog['deletedSnapshots']): Promise<StreamInfo> {
  if (deleted !== undefined) throw deletedStreamRefusal(p.stream, deleted);
  try {
    const info = await jsm.streams.add(streamConfig(p));
    logger.info({ stream: p.stream, subject: p.subject, replicas: p.replicas }, 'JetStream log: created the stream');
    return info;
  } catch (addErr) {
    // Another node created it between our info and add: use theirs.
    if (!isApiError(addErr, streamNameInUseCode)) throw addErr;
    return infoOfKnown(jsm, p.stream);
  }
}

/** A node that joined a log never creates one: the missing stream is asked for again (missingStill), then refused. */
async function joinedStream(jsm: JetStreamManager, stream: string, joined: string, deleted: ForeignLog['deletedSnapshots']): Promise<StreamInfo> {
  if (await missingStill(() => streamGone(jsm, stream))) throw missingJoined(joined, deleted);
  return infoOfKnown(jsm, stream);
}

/**
 * The snapshots the bucket holds of a stream of that name, when the stream is missing: it existed and was
 * deleted on the nats-servers (by hand, by mistake). Undefined when there are none (a new cluster).
 */
async function snapshotsLeft(jsm: JetStreamManager, stream: string, bucket: string): Promise<ForeignLog['deletedSnapshots']> {
  try {
    await jsm.streams.info(`OBJ_${bucket}`);
  } catch (err) {
    if (isApiError(err, JetStreamApiCodes.StreamNotFound)) return undefined; // no bucket yet: a new cluster
    throw err;
  }
  const left = (await listObjects(jsm, bucket)).filter((o) => o.name.startsWith(`${stream}/`));
  if (left.length === 0) return undefined;
  return { store: bucket, count: left.length, newest: Math.max(...left.map((o) => Number(o.metadata?.index ?? NaN)).filter(Number.isFinite), 0) };
}

/**
 * Created anew, a deleted stream would be empty, and the node would serve an empty registry as if nothing
 * had been lost; so the start stops, saying what to do.
 */
function deletedStreamRefusal(stream: string, { store: bucket, count, newest }: NonNullable<ForeignLog['deletedSnapshots']>): SetupRefusal {
  return new SetupRefusal(`the stream ${stream} does not exist, but the snapshot bucket ${bucket} holds ${count} `
    + `snapshot${count === 1 ? '' : 's'} of it${newest > 0 ? ` (the newest at index ${newest})` : ''}: the stream was deleted on the `
    + `nats-servers, and created anew it would be empty. To start with an empty registry, delete the bucket's snapshots `
    + `of it (nats object rm ${bucket} <name>, or the bucket) and start again, then restore a snapshot saved with `
    + '`roster snapshot save --stale` if there is one (roster snapshot restore)');
}

/**
 * Takes an existing stream's settings as they are, saying where they differ from ours. A stream without
 * our subject is used with its own when it has exactly one, without wildcards; otherwise it is refused.
 */
export function adoptStream(info: StreamInfo, p: StreamPlan): AdoptedStream {
  const c = info.config;
  const differs: Record<string, unknown> = {};
  let subject = p.subject;
  if (c.storage !== StorageType.File) differs.storage = c.storage;
  if (c.num_replicas !== p.replicas) differs.replicas = c.num_replicas;
  if ((c.duplicate_window ?? 0) < nanos(p.publishRetryMsMax + p.publishTimeoutMs)) differs.duplicateWindowNs = c.duplicate_window;
  // Compaction purges the stream: a stream that refuses purges grows for ever.
  if (c.deny_purge === true) differs.denyPurge = true;
  // Limits make JetStream remove messages by itself, as a purge by hand does (compaction.ts then saves a
  // snapshot each time the start passes the last one; a crash in between can leave a node nothing to start from).
  if ((c.max_msgs ?? -1) > 0) differs.maxMsgs = c.max_msgs;
  if ((c.max_bytes ?? -1) > 0) differs.maxBytes = c.max_bytes;
  if ((c.max_age ?? 0) > 0) differs.maxAgeNs = c.max_age;
  if (!c.subjects.includes(p.subject)) {
    const only = c.subjects.length === 1 ? c.subjects[0]! : undefined;
    if (only === undefined || /[*>]/.test(only)) {
      throw new Error(`${kind}: stream ${p.stream} exists without the subject ${p.subject} (it has ${c.subjects.join(', ')})`);
    }
    differs.subject = only;
    subject = only;
  }
  return { info, subject, strictSeq: c.subjects.length === 1, differs };
}
