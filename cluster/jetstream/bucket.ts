/**
 * The log's object store bucket (snapshots, attachments), made again when its stream is gone from the
 * nats-servers: an operator's `nats stream rm OBJ_<bucket>` or `nats object rm <bucket>` under running
 * nodes. Left as it was, every snapshot and attachment write of every node would fail until the node
 * restarted. A write that fails because the bucket's stream is gone makes the bucket again (logged once
 * per loss) and is made once more; `onRemade` tells the parts that kept objects in it, which went with the
 * old stream. Reads and removals go to the bucket as it is: what they would find is gone either way.
 *
 * Compaction must not count on snapshots that went with a deleted bucket: `covers` says whether the
 * bucket holds a snapshot a node can start from at a stream position (compaction.ts asks it first).
 */
import { JetStreamApiCodes, type JetStreamManager } from '@nats-io/jetstream';
import type { ObjectInfo, ObjectStore } from '@nats-io/obj';
import type { Logger } from '../../src/ports/index.ts';
import { listObjects } from './object-list.ts';
import { errorMessage, isApiError, streamGone } from './retry.ts';

/** What the snapshots and the attachments use of an object store. */
export type BucketStore = Pick<ObjectStore, 'putBlob' | 'getBlob' | 'list' | 'delete'>;

export interface BucketPorts {
  name: string;
  jsm: JetStreamManager;
  /** Creates the bucket with the log's settings (an existing one is opened). */
  create(): Promise<ObjectStore>;
  logger: Logger;
}

/** The stream JetStream keeps an object store bucket in. */
export const bucketStreamOf = (bucket: string): string => `OBJ_${bucket}`;

export class Bucket implements BucketStore {
  private remaking: Promise<void> | undefined;
  private readonly remadeListeners: Array<() => void> = [];

  constructor(private store: ObjectStore, private readonly ports: BucketPorts) {}

  /** Calls `listener` each time this node made the bucket again. */
  onRemade(listener: () => void): void {
    this.remadeListeners.push(listener);
  }

  putBlob(...args: Parameters<ObjectStore['putBlob']>): Promise<ObjectInfo> {
    return this.write((store) => store.putBlob(...args));
  }

  getBlob(name: string): Promise<Uint8Array | null> {
    return this.store.getBlob(name);
  }

  list(): Promise<ObjectInfo[]> {
    return this.store.list();
  }

  delete(name: string): ReturnType<ObjectStore['delete']> {
    return this.store.delete(name);
  }

  /**
   * True when the bucket holds an object of `stream` (a snapshot, named `<stream>/…`) at stream sequence
   * `seq` or later, from which a node can start once the messages before `seq` are purged. A bucket found
   * gone is made again (false: its snapshots went with it); any other failure to read it is false too.
   */
  async covers(stream: string, seq: number): Promise<boolean> {
    try {
      const objects = await listObjects(this.ports.jsm, this.ports.name);
      return objects.some((o) => o.name.startsWith(`${stream}/`) && Number(o.metadata?.seq ?? -1) >= seq);
    } catch (err) {
      if (await this.gone(err)) await this.remake().catch(() => undefined);
      return false;
    }
  }

  /** Runs `op` on the store; when it fails because the bucket's stream is gone, makes the bucket again and runs it once more. */
  private async write<T>(op: (store: ObjectStore) => Promise<T>): Promise<T> {
    try {
      return await op(this.store);
    } catch (err) {
      if (!(await this.gone(err))) throw err;
      await this.remake();
      return op(this.store);
    }
  }

  /** Whether `err` (or, asked again, JetStream) says the bucket's stream does not exist. */
  private async gone(err: unknown): Promise<boolean> {
    if (isApiError(err, JetStreamApiCodes.StreamNotFound) || isApiError((err as Error | undefined)?.cause, JetStreamApiCodes.StreamNotFound)) return true;
    return streamGone(this.ports.jsm, bucketStreamOf(this.ports.name));
  }

  /** Creates the bucket again (one creation at a time), then tells the listeners. */
  private remake(): Promise<void> {
    this.remaking ??= (async () => {
      const { name, logger } = this.ports;
      try {
        this.store = await this.ports.create();
      } catch (err) {
        logger.warn({ bucket: name, err: errorMessage(err) }, 'JetStream log: the snapshot bucket is gone from the nats-servers and could not be created again; the next write tries again');
        throw err;
      }
      logger.warn({ bucket: name, stream: bucketStreamOf(name) },
        'JetStream log: the snapshot bucket was gone from the nats-servers (deleted); created it again. The snapshots it held are lost: this node saves one now');
      for (const listener of this.remadeListeners) listener();
    })().finally(() => {
      this.remaking = undefined;
    });
    return this.remaking;
  }
}
