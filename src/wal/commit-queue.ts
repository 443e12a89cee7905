/**
 * Group commit: while one commit is in flight, arriving appends queue; when it finishes, everything
 * queued (up to the batch bounds) goes into the next single commit. One append is never split.
 */

export interface Pending<T> {
  items: readonly T[];
  bytes: number;
  resolve(): void;
  reject(err: Error): void;
}

export interface CommitBounds {
  /** Most entries in one commit; an append larger than this still commits, alone. */
  entriesMax: number;
  /** Most payload bytes in one commit; an append larger than this still commits, alone. */
  bytesMax: number;
}

/** `commit` must settle every pending of its batch (resolve after durable + delivered, or reject). */
export type CommitFn<T> = (batch: Pending<T>[]) => Promise<void>;

export class CommitQueue<T> {
  private readonly queue: Pending<T>[] = [];
  private running: Promise<void> | undefined;

  constructor(
    private readonly bounds: CommitBounds,
    private readonly commit: CommitFn<T>,
  ) {}

  enqueue(items: readonly T[], bytes: number): Promise<void> {
    return new Promise<void>((resolve, reject) => {
      this.queue.push({ items, bytes, resolve, reject });
      this.running ??= this.run();
    });
  }

  /** Resolves once nothing is queued or in flight. */
  idle(): Promise<void> {
    return this.running ?? Promise.resolve();
  }

  /** Rejects everything still queued (not the batch in flight: its commit settles it). */
  rejectQueued(err: Error): void {
    for (const p of this.queue.splice(0)) p.reject(err);
  }

  private async run(): Promise<void> {
    // One microtask boundary first, so appends made in the same tick share the first commit.
    await Promise.resolve();
    while (this.queue.length > 0) {
      const batch = this.take();
      try {
        await this.commit(batch);
      } catch (err) {
        // A commit that throws instead of settling is a bug; its appends must still not hang.
        for (const p of batch) p.reject(err instanceof Error ? err : new Error(String(err)));
      }
    }
    this.running = undefined;
  }

  private take(): Pending<T>[] {
    let count = 0;
    let entries = 0;
    let bytes = 0;
    for (const p of this.queue) {
      const fits = entries + p.items.length <= this.bounds.entriesMax && bytes + p.bytes <= this.bounds.bytesMax;
      if (count > 0 && !fits) break;
      count += 1;
      entries += p.items.length;
      bytes += p.bytes;
    }
    return this.queue.splice(0, count);
  }
}
