/**
 * The grpc.health.v1.Health handlers over a ServingTracker (watch.md §1.2, §1.6). Check and List read
 * the tracker; every Watch call is a WatchStream filed under its name, and the one tracker listener
 * forwards each real change to the streams of that name.
 *
 * With authentication on (`auth`), `""` — the agent itself, what a liveness probe asks, which cannot send
 * credentials — stays open to every caller; a named service needs a bearer token in the call's metadata
 * whose rules give service read on the name (UNAUTHENTICATED without a valid one, PERMISSION_DENIED
 * without the right), and List needs a token and holds `""` and the names it may read.
 */
import { Metadata, status as GrpcStatus, type sendUnaryData, type ServerUnaryCall, type UntypedServiceImplementation } from '@grpc/grpc-js';
import { allowed, type Identity } from '../auth/index.ts';
import { setLongTimeout } from '../util/timer.ts';
import type { ServingStatus, ServingTracker } from '../runtime/index.ts';
import type { CancelledCalls } from './cancelled-calls.ts';
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

/** With authentication on: who a call is, from its metadata (`authorization: Bearer …` or `x-consul-token`). */
export interface GrpcAuth {
  /** The identity the headers' token proves, or the reason there is none (missing, invalid, expired). */
  identify(headers: Map<string, string>): Promise<Identity | string>;
}

/** The metadata that can carry a token, as the HTTP gate reads headers (first value of each). */
const credentialKeys = ['authorization', 'x-consul-token'];

function headersOf(metadata: Metadata | undefined): Map<string, string> {
  const headers = new Map<string, string>();
  for (const key of credentialKeys) {
    const value = metadata?.get(key)[0];
    if (typeof value === 'string') headers.set(key, value);
  }
  return headers;
}

const mayRead = (identity: Identity, name: string) => allowed(identity, { resource: 'service', name, access: 'read' });

/** Bounds of the open Watch calls: each holds a stream and its state for as long as the client keeps it. */
export interface WatchLimits {
  /** Open Watch calls of the agent (limits.grpc_watch_max). */
  watchMax: number;
  /** Open Watch calls per client address (limits.grpc_watch_max_per_client). */
  watchMaxPerClient: number;
}

/** The client address of a call: grpc-js's peer (`address:port`) without the port. */
export function clientOf(peer: string): string {
  const colon = peer.lastIndexOf(':');
  return colon > 0 && /^\d+$/.test(peer.slice(colon + 1)) ? peer.slice(0, colon) : peer;
}

export class HealthService {
  private readonly watchers = new Map<string, Set<WatchStream>>();
  /** Open Watch calls by client address. */
  private readonly perClient = new Map<string, number>();
  private open = 0;
  private readonly unsubscribe: () => void;
  private finished = false;

  constructor(private readonly tracker: ServingTracker, private readonly listEntriesMax: number, private limits: WatchLimits,
    private readonly cancelled: CancelledCalls, private readonly auth?: GrpcAuth) {
    this.unsubscribe = tracker.subscribe((name, status) => this.changed(name, status));
  }

  /** New bounds (a reload): calls already open stay; new ones are judged by these. */
  setLimits(limits: WatchLimits): void {
    this.limits = { ...limits };
  }

  /** Handlers for `server.addService(definition, ...)`. */
  implementation(): UntypedServiceImplementation {
    return {
      Check: (call: ServerUnaryCall<HealthCheckRequest, HealthCheckResponse>, done: sendUnaryData<HealthCheckResponse>) => void this.check(call, done),
      List: (call: ServerUnaryCall<object, HealthListResponse>, done: sendUnaryData<HealthListResponse>) => void this.list(call, done),
      Watch: (call: WatchCall) => void this.watch(call),
    };
  }

  /** Sends `NOT_SERVING` to every open Watch and ends it with OK (clients retry with backoff). */
  finishAll(): void {
    this.finished = true;
    this.unsubscribe();
    for (const streams of this.watchers.values()) for (const stream of streams) stream.finish('NOT_SERVING');
    this.watchers.clear();
    this.open = 0;
    this.perClient.clear();
  }

  /** Open Watch calls (for tests and metrics). */
  watchCount(): number {
    return this.open;
  }

  /** The identity the call's token proves, or the error that ends the call (authentication is on). */
  private async identityOf(auth: GrpcAuth, metadata: Metadata | undefined): Promise<Identity | ServiceError> {
    let identity: Identity | string;
    try {
      identity = await auth.identify(headersOf(metadata));
    } catch {
      return { code: GrpcStatus.INTERNAL, details: 'the credentials could not be checked' };
    }
    return typeof identity === 'string' ? { code: GrpcStatus.UNAUTHENTICATED, details: identity } : identity;
  }

  /**
   * Why the call may not see `name`, or who it is when it may (undefined: without authentication, and
   * for `""`, which needs no token).
   */
  private async admitted(metadata: Metadata | undefined, name: string): Promise<{ refused: ServiceError } | { identity: Identity | undefined }> {
    if (this.auth === undefined || name === '') return { identity: undefined };
    const identity = await this.identityOf(this.auth, metadata);
    if ('code' in identity) return { refused: identity };
    return mayRead(identity, name) ? { identity } : { refused: { code: GrpcStatus.PERMISSION_DENIED, details: `permission denied: read on service "${name}"` } };
  }

  private async check(call: ServerUnaryCall<HealthCheckRequest, HealthCheckResponse>, done: sendUnaryData<HealthCheckResponse>): Promise<void> {
    const request = call.request;
    const invalid = requestError(request);
    if (invalid) return done(invalid, null);
    const name = request.service;
    const admitted = await this.admitted(call.metadata, name);
    if ('refused' in admitted) return done(admitted.refused, null);
    const status = this.tracker.get(name);
    if (status === undefined) return done({ code: GrpcStatus.NOT_FOUND, details: `unknown service ${name}` }, null);
    done(null, { status });
  }

  private async list(call: ServerUnaryCall<object, HealthListResponse>, done: sendUnaryData<HealthListResponse>): Promise<void> {
    const reason = undecodableReason(call.request);
    if (reason !== undefined) return done({ code: GrpcStatus.INVALID_ARGUMENT, details: reason }, null);
    const who = this.auth === undefined ? undefined : await this.identityOf(this.auth, call.metadata);
    if (who !== undefined && 'code' in who) return done(who, null);
    const entries = who === undefined ? this.tracker.list() : this.tracker.list().filter(([name]) => name === '' || mayRead(who, name));
    if (entries.length > this.listEntriesMax) {
      return done({ code: GrpcStatus.RESOURCE_EXHAUSTED, details: `server health list exceeds maximum capacity: ${this.listEntriesMax}` }, null);
    }
    done(null, { statuses: Object.fromEntries(entries.map(([name, status]) => [name, { status }])) });
  }

  private async watch(call: WatchCall): Promise<void> {
    const invalid = requestError(call.request);
    if (invalid) return void call.emit('error', invalid);
    const name = call.request.service;
    let identity: Identity | undefined;
    if (this.auth !== undefined && name !== '') {
      const admitted = await this.admitted(call.metadata, name);
      if ('refused' in admitted) return void call.emit('error', admitted.refused);
      identity = admitted.identity;
    }
    // The client may have gone before this handler ran (grpc-js then never tells this call's stream) or
    // while its token was checked (its 'cancelled' has been told already): nothing to file.
    if (call.cancelled || this.cancelled.has(call.metadata)) return;
    const client = clientOf(call.getPeer());
    const refused = this.overLimit(client);
    if (refused) return void call.emit('error', refused);
    const stream = new WatchStream(call);
    if (this.finished) return stream.finish('NOT_SERVING');
    // Filed and given the current value in one synchronous step: no change can fall in between.
    this.streamsOf(name).add(stream);
    this.open += 1;
    this.perClient.set(client, (this.perClient.get(client) ?? 0) + 1);
    stream.offer(watchStatus(this.tracker.get(name)));
    // A call lives no longer than its token, as a stream connection or a log monitor does.
    const expiry = identity?.expiresAtMs === undefined ? undefined : setLongTimeout(() => {
      forget();
      call.emit('error', { code: GrpcStatus.UNAUTHENTICATED, details: 'token expired' });
    }, identity.expiresAtMs - Date.now());
    const forget = () => {
      expiry?.clear();
      this.forget(name, client, stream);
    };
    call.once('cancelled', forget);
    call.once('close', forget);
  }

  /** RESOURCE_EXHAUSTED when the agent, or this client, has as many Watch calls open as it may. */
  private overLimit(client: string): ServiceError | undefined {
    const { watchMax, watchMaxPerClient } = this.limits;
    if (this.open >= watchMax) {
      return { code: GrpcStatus.RESOURCE_EXHAUSTED, details: `too many Watch calls: the agent has ${watchMax} open (limits.grpc_watch_max)` };
    }
    if ((this.perClient.get(client) ?? 0) >= watchMaxPerClient) {
      return { code: GrpcStatus.RESOURCE_EXHAUSTED, details: `too many Watch calls from ${client}: ${watchMaxPerClient} open (limits.grpc_watch_max_per_client)` };
    }
    return undefined;
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

  /** A call that ended (cancelled or closed; told once or twice): no longer counted. */
  private forget(name: string, client: string, stream: WatchStream): void {
    const streams = this.watchers.get(name);
    if (!streams?.delete(stream)) return;
    if (streams.size === 0) this.watchers.delete(name);
    this.open -= 1;
    const n = (this.perClient.get(client) ?? 1) - 1;
    if (n > 0) this.perClient.set(client, n);
    else this.perClient.delete(client);
  }
}
