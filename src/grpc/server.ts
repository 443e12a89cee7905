/**
 * Our grpc.health.v1.Health server (watch.md §0, §1.6): plaintext for now, served from a
 * ServingTracker. Its port is our own listener (listener.ts), which admits connections within the
 * connection limits and hands them to grpc-js. stop() closes the listener, freezes the tracker, ends
 * every Watch with NOT_SERVING then OK so that tryShutdown can finish, and forces the server closed once
 * the grace runs out.
 */
import { Server, ServerCredentials } from '@grpc/grpc-js';
import type { Logger, ServingTracker } from '../runtime/index.ts';
import { CancelledCalls } from './cancelled-calls.ts';
import { HealthService, type GrpcAuth, type WatchLimits } from './health-service.ts';
import {
  connectionLimitsDefault, http2SessionMemoryMb, http2StreamsMax, keepaliveTimeMs, keepaliveTimeoutMs, listEntriesMaxDefault, requestBytesMax, shutdownGraceMsDefault, watchLimitsDefault,
} from './limits.ts';
import { GrpcListener, type ConnectionLimits, type RefusalReason } from './listener.ts';
import { healthServiceDefinition } from './proto.ts';
import { ListenError } from '../util/listen-error.ts';
import { setLongTimeout } from '../util/timer.ts';

export interface GrpcHealthServerOptions {
  host: string;
  /** 0 = pick a free port. */
  port: number;
  tracker: ServingTracker;
  logger: Logger;
  /** Grace between ending every Watch and forceShutdown. @default 2000 */
  shutdownGraceMs?: number;
  /** List answers RESOURCE_EXHAUSTED past this many names (`""` included). @default 100 */
  listEntriesMax?: number;
  /** Open Watch calls allowed, in all and per client address; past them a Watch gets RESOURCE_EXHAUSTED. @default 1024 and 64 */
  watchLimits?: WatchLimits;
  /** Open connections allowed, in all and per client address, and the handshake's timeout. @default 4096, 100 and 5 s */
  connectionLimits?: ConnectionLimits;
  /** Told each connection the listener closed unserved, with why (metrics). */
  refused?: (reason: RefusalReason) => void;
  /** With authentication on: named services and List need a bearer token (see health-service.ts). */
  auth?: GrpcAuth;
}

export interface GrpcHealthServer {
  /** host:port actually bound. */
  address: string;
  port: number;
  /** Freeze (tracker.shutdown()), push NOT_SERVING to every watcher, end every Watch call (OK), tryShutdown, forceShutdown after the grace. */
  stop(): Promise<void>;
  /** Open Watch calls (metrics). */
  watchers(): number;
  /** New Watch bounds (a reload); open calls stay. */
  setWatchLimits(limits: WatchLimits): void;
  /** Open connections (metrics). */
  connections(): number;
  /** New connection bounds (a reload); open connections stay. */
  setConnectionLimits(limits: ConnectionLimits): void;
}

export async function startGrpcHealthServer(o: GrpcHealthServerOptions): Promise<GrpcHealthServer> {
  const definition = healthServiceDefinition();
  const cancelled = new CancelledCalls();
  const health = new HealthService(o.tracker, o.listEntriesMax ?? listEntriesMaxDefault, o.watchLimits ?? watchLimitsDefault, cancelled, o.auth);
  const server = new Server({
    'grpc.max_concurrent_streams': http2StreamsMax, 'grpc-node.max_session_memory': http2SessionMemoryMb,
    'grpc.max_receive_message_length': requestBytesMax,
    // See limits.ts: a connection whose session has stopped reading is found by its unanswered ping and destroyed.
    'grpc.keepalive_time_ms': keepaliveTimeMs, 'grpc.keepalive_timeout_ms': keepaliveTimeoutMs,
    interceptors: [cancelled.interceptor],
  });
  server.addService(definition, health.implementation());
  const injector = server.createConnectionInjector(ServerCredentials.createInsecure());
  const listener = new GrpcListener({
    limits: o.connectionLimits ?? connectionLimitsDefault, logger: o.logger,
    admit: (socket) => injector.injectConnection(socket), ...(o.refused ? { refused: o.refused } : {}),
  });
  const host = o.host.includes(':') ? `[${o.host}]` : o.host;
  let port: number;
  try {
    port = await listener.listen(o.host, o.port);
  } catch (err) {
    health.finishAll();
    server.forceShutdown();
    throw new ListenError(o.host, o.port, (err as NodeJS.ErrnoException).code);
  }
  const address = `${host}:${port}`;
  o.logger.info({ address }, 'gRPC health server listening');
  let stopping: Promise<void> | undefined;
  const stop = () => (stopping ??= shutdown(server, listener, health, o));
  return {
    address, port, stop, watchers: () => health.watchCount(), setWatchLimits: (limits) => health.setLimits(limits),
    connections: () => listener.connections, setConnectionLimits: (limits) => listener.setLimits(limits),
  };
}

async function shutdown(server: Server, listener: GrpcListener, health: HealthService, o: GrpcHealthServerOptions): Promise<void> {
  listener.close();
  o.tracker.shutdown();
  health.finishAll();
  const graceMs = o.shutdownGraceMs ?? shutdownGraceMsDefault;
  await new Promise<void>((resolve) => {
    const force = setLongTimeout(() => {
      o.logger.warn({ graceMs }, 'gRPC health server: calls still open after the grace, forcing shutdown');
      server.forceShutdown();
      resolve();
    }, graceMs, false);
    server.tryShutdown((err) => {
      force.clear();
      if (err) {
        o.logger.warn({ err }, 'gRPC health server: tryShutdown failed, forcing shutdown');
        server.forceShutdown();
      }
      resolve();
    });
  });
  o.logger.info({}, 'gRPC health server stopped');
}
