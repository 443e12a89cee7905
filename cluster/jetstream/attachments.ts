/**
 * Bytes too large for one stream message (a restore of a large snapshot), kept in the log's object store
 * as `attachments/<stream>/<sha256>.bin` so that an entry names them instead of carrying them. The node
 * that proposes such an entry stores the bytes first; every node's reader fetches the ones an entry names
 * before it delivers that entry (live or in a replay), so the runtime reads them synchronously when the
 * entry applies, once.
 *
 * An attachment is removed (by a node storing another one) only once no start could replay a message naming
 * it: every such message lies below the stream's first sequence (compaction purged it, compaction.ts). While
 * the stream still holds one, some node may start from a snapshot before it (or from the stream's start, see
 * snapshots.ts) and fetch it. A node judges by what it read itself, so it also needs: no message naming it
 * that this node has not read (it has read up to the stream's last sequence, asked then; the messages before
 * the first it read are purged, when it read none naming it), and none still to come (no put of it here awaits
 * its message, and it was stored longer ago than a publish is retried: `publishWindowMs`). On a stream never
 * purged (a nats-server before 2.10, compaction.ts) no attachment is removed.
 */
import type { BucketStore } from './bucket.ts';
import type { LogEntry } from '../../src/ports/index.ts';

const namePattern = /^[0-9a-f]{64}\.bin$/;

export interface AttachmentsPorts {
  store: () => BucketStore;
  stream: string;
  timeoutMs: number;
  /** Longest time from storing an attachment to the last retry of the message naming it. */
  publishWindowMs: number;
  /** The stream's first and last sequence, asked now. */
  bounds: () => Promise<{ first_seq: number; last_seq: number }>;
}

/**
 * The attachments of the log with `settings`, in the object store of `stores` once it is open. The window
 * after a put in which its message may still be stored is taken twice over: the put is followed by the
 * commit's wait in the queue, then its publish and retries.
 */
export function attachmentsOf(
  settings: { stream: string; publishTimeoutMs: number; publishRetryMsMax: number },
  stores: () => { store: BucketStore; jsm: { streams: { info(stream: string): Promise<{ state: { first_seq: number; last_seq: number } }> } } },
): Attachments {
  const { stream, publishTimeoutMs, publishRetryMsMax } = settings;
  return new Attachments({
    store: () => stores().store, stream, timeoutMs: publishTimeoutMs, publishWindowMs: 2 * (publishTimeoutMs + publishRetryMsMax),
    bounds: async () => (await stores().jsm.streams.info(stream)).state,
  });
}

export class Attachments {
  /** Fetched (or stored here) and not applied yet. */
  private readonly held = new Map<string, Buffer>();
  /** For each attachment a message this node read names, the highest sequence of such a message. */
  private readonly named = new Map<string, number>();
  /** Attachments stored here whose message this node has not read yet, with how many such puts each waits for. */
  private readonly pending = new Map<string, number>();
  /** The sequences of the first and the last message this node read (0: none yet). */
  private readFirst = 0;
  private readLast = 0;
  private readonly store: () => BucketStore;
  private readonly stream: string;

  constructor(private readonly ports: AttachmentsPorts) {
    this.store = ports.store;
    this.stream = ports.stream;
  }

  /** Stores `bytes` under their SHA-256 (hex); resolves with the name an entry carries. */
  async put(bytes: Buffer, sha256: string): Promise<string> {
    if (!/^[0-9a-f]{64}$/.test(sha256)) throw new RangeError(`attachment: bad sha256 ${JSON.stringify(sha256)}`);
    const name = `${sha256}.bin`;
    this.pending.set(name, (this.pending.get(name) ?? 0) + 1);
    try {
      await this.store().putBlob({ name: this.objectName(name), metadata: { createdMs: String(Date.now()) } }, bytes, { timeout: this.ports.timeoutMs });
    } catch (err) {
      this.unwait(name);
      throw err;
    }
    this.held.set(name, bytes);
    await this.prune();
    return name;
  }

  /** The attachments `entries`, read in the message at stream sequence `seq`, name that this node does not hold yet. */
  missing(entries: readonly LogEntry[], seq: number): string[] {
    if (this.readFirst === 0) this.readFirst = seq;
    this.readLast = Math.max(this.readLast, seq);
    const names: string[] = [];
    for (const e of entries) {
      const name = (e.cmd as { attachment?: { name?: unknown } }).attachment?.name;
      if (typeof name !== 'string') continue;
      this.named.set(name, Math.max(seq, this.named.get(name) ?? 0));
      this.unwait(name);
      if (!this.held.has(name)) names.push(name);
    }
    return names;
  }

  /** Fetches the named attachments from the store; throws when one is not there. */
  async fetch(names: readonly string[]): Promise<void> {
    for (const name of names) {
      if (!namePattern.test(name)) throw new Error(`attachment: bad name ${JSON.stringify(name)}`);
      const blob = await this.store().getBlob(this.objectName(name));
      if (blob === null) throw new Error(`attachment ${name} of stream ${this.stream} is not in the object store`);
      this.held.set(name, Buffer.from(blob));
    }
  }

  /** The bytes of `name`, fetched before its entry was delivered; handed out once. */
  take(name: string): Buffer {
    const bytes = this.held.get(name);
    if (bytes === undefined) throw new Error(`attachment ${name} was not fetched before its entry`);
    this.held.delete(name);
    return bytes;
  }

  private objectName(name: string): string {
    return `attachments/${this.stream}/${name}`;
  }

  private unwait(name: string): void {
    const waiting = this.pending.get(name) ?? 0;
    if (waiting > 1) this.pending.set(name, waiting - 1);
    else this.pending.delete(name);
  }

  /**
   * Removes this stream's attachments that no start could need (see above). Best effort, and only while
   * this node has read the whole stream: one left now goes when another attachment is stored.
   */
  private async prune(): Promise<void> {
    try {
      const { first_seq: first, last_seq: last } = await this.ports.bounds();
      if (this.readFirst === 0 || this.readLast < last) return;
      const prefix = this.objectName('');
      for (const o of (await this.store().list()).filter((x) => x.name.startsWith(prefix) && !x.deleted)) {
        const name = o.name.slice(prefix.length);
        const storedMs = Number(o.metadata?.createdMs ?? NaN);
        if (this.pending.has(name) || !(storedMs < Date.now() - this.ports.publishWindowMs)) continue;
        if ((this.named.get(name) ?? this.readFirst - 1) >= first) continue;
        this.named.delete(name);
        await this.store().delete(o.name);
      }
    } catch {
      // The store or the stream did not answer: the next put tries again.
    }
  }
}
