/**
 * Bytes too large for one stream message (a restore of a large snapshot), kept in the log's object store
 * as `attachments/<stream>/<sha256>.bin` so that an entry names them instead of carrying them. The node
 * that proposes such an entry stores the bytes first; every node's reader fetches the ones an entry names
 * before it delivers that entry (live or in a replay), so the runtime reads them synchronously when the
 * entry applies, once. The newest `keptMax` of a stream are kept in the store.
 */
import type { BucketStore } from './bucket.ts';
import type { LogEntry } from '../../src/ports/index.ts';

const namePattern = /^[0-9a-f]{64}\.bin$/;
const keptMax = 3;

export class Attachments {
  /** Fetched (or stored here) and not applied yet. */
  private readonly held = new Map<string, Buffer>();

  constructor(private readonly store: () => BucketStore, private readonly stream: string, private readonly timeoutMs: number) {}

  /** Stores `bytes` under their SHA-256 (hex); resolves with the name an entry carries. */
  async put(bytes: Buffer, sha256: string): Promise<string> {
    if (!/^[0-9a-f]{64}$/.test(sha256)) throw new RangeError(`attachment: bad sha256 ${JSON.stringify(sha256)}`);
    const name = `${sha256}.bin`;
    await this.store().putBlob({ name: this.objectName(name), metadata: { createdMs: String(Date.now()) } }, bytes, { timeout: this.timeoutMs });
    this.held.set(name, bytes);
    await this.prune(name);
    return name;
  }

  /** The attachments `entries` name that this node does not hold yet. */
  missing(entries: readonly LogEntry[]): string[] {
    const names: string[] = [];
    for (const e of entries) {
      const name = (e.cmd as { attachment?: { name?: unknown } }).attachment?.name;
      if (typeof name === 'string' && !this.held.has(name)) names.push(name);
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

  /** Removes all but the newest keptMax attachments of this stream (the one just stored among them). */
  private async prune(keep: string): Promise<void> {
    const prefix = this.objectName('');
    const old = (await this.store().list())
      .filter((o) => o.name.startsWith(prefix) && !o.deleted && o.name !== this.objectName(keep))
      .sort((a, b) => Number(b.metadata?.createdMs ?? 0) - Number(a.metadata?.createdMs ?? 0));
    for (const o of old.slice(keptMax - 1)) await this.store().delete(o.name).catch(() => undefined);
  }
}
