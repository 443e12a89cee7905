/**
 * The live objects of a snapshot bucket, read from its stream's leader. nats.js's `ObjectStore.list()`
 * reads them through a consumer and ends at the consumer's first idle heartbeat, taking that as "every
 * object seen": on a stream that is still recovering (the nats-servers were just restarted) it has
 * returned a short list, and a node took the older snapshot it did see for the newest. Here the bucket's
 * meta subjects come from a stream info request (`subjects_filter`), and each object's newest meta
 * record from a direct get by subject: either the whole list or an error.
 */
import { JetStreamApiCodes, type JetStreamManager, type StreamInfo } from '@nats-io/jetstream';
import type { ObjectInfo } from '@nats-io/obj';
import { isApiError } from './retry.ts';

/** The object store's stream of a bucket, and the subjects its objects' meta records are on. */
function bucketStream(bucket: string): { stream: string; metaSubjects: string } {
  return { stream: `OBJ_${bucket}`, metaSubjects: `$O.${bucket}.M.>` };
}

/**
 * Every object of `bucket` that is not deleted, with its metadata. The bucket exists (the log created
 * or found it just before): a server that does not know its stream yet (a stream created through one
 * server of a cluster reaches the others a moment later) fails the listing as a transient failure, to
 * be retried, never as an empty bucket.
 */
export async function listObjects(jsm: JetStreamManager, bucket: string): Promise<ObjectInfo[]> {
  const { stream, metaSubjects } = bucketStream(bucket);
  let info: StreamInfo;
  try {
    info = await jsm.streams.info(stream, { subjects_filter: metaSubjects });
  } catch (err) {
    if (isApiError(err, JetStreamApiCodes.StreamNotFound)) throw new Error(`the snapshot bucket's stream ${stream} is not known to this server yet`);
    throw err;
  }
  const out: ObjectInfo[] = [];
  for (const subject of Object.keys(info.state.subjects ?? {})) {
    const m = await jsm.streams.getMessage(stream, { last_by_subj: subject });
    if (m === null) continue;
    const o = m.json<ObjectInfo>();
    if (typeof o.name === 'string' && o.deleted !== true) out.push(o);
  }
  return out;
}
