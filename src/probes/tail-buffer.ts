/**
 * Keeps the last bytesMax bytes written to it and counts them all, like the circular buffer
 * (armon/circbuf) Consul captures check output with.
 */
export class TailBuffer {
  private chunks: Buffer[] = [];
  private keptBytes = 0;
  totalBytes = 0;

  constructor(readonly bytesMax: number) {}

  push(chunk: Buffer): void {
    this.totalBytes += chunk.length;
    if (this.bytesMax <= 0) return;
    this.chunks.push(chunk);
    this.keptBytes += chunk.length;
    // Drop whole chunks that lie entirely before the last bytesMax bytes; bytes() trims the rest.
    while (this.chunks.length > 1 && this.keptBytes - this.chunks[0]!.length >= this.bytesMax) {
      this.keptBytes -= this.chunks.shift()!.length;
    }
  }

  get truncated(): boolean {
    return this.totalBytes > Math.max(this.bytesMax, 0);
  }

  bytes(): Buffer {
    const all = Buffer.concat(this.chunks);
    return all.subarray(Math.max(0, all.length - this.bytesMax));
  }

  /** The kept bytes as text; a multi-byte character cut at the front becomes U+FFFD (as Go's string goes out through JSON). */
  text(): string {
    return this.bytes().toString('utf8');
  }
}

/** Script and container exec output (consul-compat.md §4 Output cap): the tail, prefixed when bytes were dropped. */
export function capturedText(output: TailBuffer): string {
  if (!output.truncated) return output.text();
  return `Captured ${output.bytesMax} of ${output.totalBytes} bytes\n...\n${output.text()}`;
}
