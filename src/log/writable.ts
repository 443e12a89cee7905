/**
 * The listeners of a log's `onWritable` (src/ports/log.ts), told each change once: the WAL's and the
 * JetStream log's.
 */
export class WritableListeners {
  private readonly listeners: ((writable: boolean) => void)[] = [];
  private writable = true;

  add(listener: (writable: boolean) => void): void {
    this.listeners.push(listener);
  }

  tell(writable: boolean): void {
    if (writable === this.writable) return;
    this.writable = writable;
    for (const listener of this.listeners) listener(writable);
  }
}
