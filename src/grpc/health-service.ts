/**
 * The grpc.health.v1.Health handlers over a ServingTracker (watch.md §1.2, §1.6). Check and List read
 * the tracker; every Watch call is a WatchStream filed under its name, and the one tracker listener
 * forwards each real change to the streams of that name.
 */
import { status as GrpcStatus, type sendUnaryData, type ServerUnaryCall, type UntypedServiceImplementation } from '@grpc/grpc-js';
import type { ServingStatus, ServingTracker } from '../runtime/index.ts';
import { serviceNameBytesMax } from './limits.ts';
import { undecodableReason } from './proto.ts';
import { WatchStream, type HealthCheckRequest, type HealthCheckResponse, type WatchCall, type WatchStatus } from './watch-stream.ts';

type HealthListResponse = { statuses: Record<string, { status: ServingStatus }> };
type ServiceError = { code: GrpcStatus; details: string };

/** Absent from the tracker means no instance is registered: Watch says SERVICE_UNKNOWN. */
const watchStatus = (s: ServingStatus | undefined): WatchStatus => s ?? 'SERVICE_UNKNOWN';

/** INVALID_ARGUMENT for a request that did not decode, or a service name over the limit. */
function requestError(request: unknown): ServiceError | undefined {
  const reason = undecodableReason(request);
  if (reason !== undefined) return { code: GrpcStatus.INVALID_ARGUMENT, details: reason };
  return nameError((request as HealthCheckRequest).service);
}

function nameError(name: string): ServiceError | undefined {
  if (Buffer.byteLength(name, 'utf8') <= serviceNameBytesMax) return undefined;
  return { code: GrpcStatus.INVALID_ARGUMENT, details: `service name longer than ${serviceNameBytesMax} bytes` };
}

export class HealthService {
  private readonly watchers = new Map<string, Set<WatchStream>>();
  private readonly unsubscribe: () => void;
  private finished = false;

  constructor(private readonly tracker: ServingTracker, private readonly listEntriesMax: number) {
    this.unsubscribe = tracker.subscribe((name, status) => this.changed(name, status));
  }

  /** Handlers for `server.addService(definition, ...)`. */
  implementation(): UntypedServiceImplementation {
    return {
      Check: (call: ServerUnaryCall<HealthCheckRequest, HealthCheckResponse>, done: sendUnaryData<HealthCheckResponse>) => this.check(call.request, done),
      List: (call: ServerUnaryCall<object, HealthListResponse>, done: sendUnaryData<HealthListResponse>) => this.list(call.request, done),
      Watch: (call: WatchCall) => this.watch(call),
    };
  }

  /** Sends `NOT_SERVING` to every open Watch and ends it with OK (clients retry with backoff). */
  finishAll(): void {
    this.finished = true;
    this.unsubscribe();
    for (const streams of this.watchers.values()) for (const stream of streams) stream.finish('NOT_SERVING');
    this.watchers.clear();
  }

  /** Open Watch calls (for tests and metrics). */
  watchCount(): number {
    let n = 0;
    for (const streams of this.watchers.values()) n += streams.size;
    return n;
  }

  private check(request: HealthCheckRequest, done: sendUnaryData<HealthCheckResponse>): void {
    const invalid = requestError(request);
    if (invalid) return done(invalid, null);
    const name = request.service;
    const status = this.tracker.get(name);
    if (status === undefined) return done({ code: GrpcStatus.NOT_FOUND, details: `unknown service ${name}` }, null);
    done(null, { status });
  }

  private list(request: object, done: sendUnaryData<HealthListResponse>): void {
    const reason = undecodableReason(request);
    if (reason !== undefined) return done({ code: GrpcStatus.INVALID_ARGUMENT, details: reason }, null);
    const entries = this.tracker.list();
    if (entries.length > this.listEntriesMax) {
      return done({ code: GrpcStatus.RESOURCE_EXHAUSTED, details: `server health list exceeds maximum capacity: ${this.listEntriesMax}` }, null);
    }
    const statuses: HealthListResponse['statuses'] = {};
    for (const [name, status] of entries) statuses[name] = { status };
    done(null, { statuses });
  }

  private watch(call: WatchCall): void {
    const invalid = requestError(call.request);
    if (invalid) return void call.emit('error', invalid);
    const name = call.request.service;
    const stream = new WatchStream(call);
    if (this.finished) return stream.finish('NOT_SERVING');
    // Filed and given the current value in one synchronous step: no change can fall in between.
    this.streamsOf(name).add(stream);
    stream.offer(watchStatus(this.tracker.get(name)));
    const forget = () => this.forget(name, stream);
    call.once('cancelled', forget);
    call.once('close', forget);
  }

  private changed(name: string, status: ServingStatus | undefined): void {
    const streams = this.watchers.get(name);
    if (streams) for (const stream of streams) stream.offer(watchStatus(status));
  }

  private streamsOf(name: string): Set<WatchStream> {
    let streams = this.watchers.get(name);
    if (!streams) this.watchers.set(name, (streams = new Set()));
    return streams;
  }

  private forget(name: string, stream: WatchStream): void {
    const streams = this.watchers.get(name);
    if (!streams) return;
    streams.delete(stream);
    if (streams.size === 0) this.watchers.delete(name);
  }
}
