/**
 * One Watch call's writer (watch.md §1.6): sends a status only when it differs from the last one sent
 * on this stream, and while the stream is full (`write()` returned false) remembers only the newest
 * value, sent on 'drain' if it still differs. Statuses are whole states, so dropping the older pending
 * ones loses nothing a client needs.
 */
import type { ServerWritableStream } from '@grpc/grpc-js';

/** What a Watch message carries. SERVICE_UNKNOWN means "no instance registered under this name". */
export type WatchStatus = 'SERVING' | 'NOT_SERVING' | 'SERVICE_UNKNOWN';

export interface HealthCheckRequest { service: string }
export interface HealthCheckResponse { status: WatchStatus }
export type WatchCall = ServerWritableStream<HealthCheckRequest, HealthCheckResponse>;

export class WatchStream {
  private lastSent: WatchStatus | undefined;
  private pending: WatchStatus | undefined;
  private blocked = false;

  constructor(private readonly call: WatchCall) {}

  /** The name's status is now `status`: send it, or keep it as the newest pending value. */
  offer(status: WatchStatus): void {
    if (this.blocked) this.pending = status;
    else this.send(status);
  }

  /** Shutdown: `status` is the last word, even over backpressure (one more queued message), then OK. */
  finish(status: WatchStatus): void {
    if (!this.open()) return;
    this.pending = undefined;
    if (status !== this.lastSent) {
      this.lastSent = status;
      this.call.write({ status });
    }
    this.call.end();
  }

  private send(status: WatchStatus): void {
    if (status === this.lastSent || !this.open()) return;
    this.lastSent = status;
    if (!this.call.write({ status })) {
      this.blocked = true;
      this.call.once('drain', () => this.drained());
    }
  }

  private drained(): void {
    this.blocked = false;
    const newest = this.pending;
    this.pending = undefined;
    if (newest !== undefined) this.send(newest);
  }

  private open(): boolean {
    return !this.call.cancelled && !this.call.destroyed && !this.call.writableEnded;
  }
}
