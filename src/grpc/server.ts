/**
 * Our grpc.health.v1.Health server (watch.md §0, §1.6): plaintext for now, served from a
 * ServingTracker. stop() freezes the tracker, ends every Watch with NOT_SERVING then OK so that
 * tryShutdown can finish, and forces the server closed once the grace runs out.
 */
import { Server, ServerCredentials } from '@grpc/grpc-js';
import type { Logger, ServingTracker } from '../runtime/index.ts';
import { HealthService, type WatchLimits } from './health-service.ts';
import { listEntriesMaxDefault, shutdownGraceMsDefault, watchLimitsDefault } from './limits.ts';
import { healthServiceDefinition } from './proto.ts';
import { listenErrorFor } from '../util/listen-error.ts';

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
}

export async function startGrpcHealthServer(o: GrpcHealthServerOptions): Promise<GrpcHealthServer> {
  const definition = healthServiceDefinition();
  const health = new HealthService(o.tracker, o.listEntriesMax ?? listEntriesMaxDefault, o.watchLimits ?? watchLimitsDefault);
  // No port sharing: a second agent on the same port must fail to start, not split the calls.
  const server = new Server({ 'grpc.so_reuseport': 0 });
  server.addService(definition, health.implementation());
  const host = o.host.includes(':') ? `[${o.host}]` : o.host;
  let port: number;
  try {
    port = await bind(server, `${host}:${o.port}`);
  } catch {
    health.finishAll();
    server.forceShutdown();
    // grpc-js words the cause in a sentence of its own: ask the OS again for a reason to report.
    throw await listenErrorFor(o.host, o.port);
  }
  const address = `${host}:${port}`;
  o.logger.info({ address }, 'gRPC health server listening');
  let stopping: Promise<void> | undefined;
  const stop = () => (stopping ??= shutdown(server, health, o));
  return { address, port, stop, watchers: () => health.watchCount(), setWatchLimits: (limits) => health.setLimits(limits) };
}

function bind(server: Server, address: string): Promise<number> {
  return new Promise((resolve, reject) => {
    server.bindAsync(address, ServerCredentials.createInsecure(), (err, port) => (err ? reject(err) : resolve(port)));
  });
}

async function shutdown(server: Server, health: HealthService, o: GrpcHealthServerOptions): Promise<void> {
  o.tracker.shutdown();
  health.finishAll();
  const graceMs = o.shutdownGraceMs ?? shutdownGraceMsDefault;
  await new Promise<void>((resolve) => {
    const force = setTimeout(() => {
      o.logger.warn({ graceMs }, 'gRPC health server: calls still open after the grace, forcing shutdown');
      server.forceShutdown();
      resolve();
    }, graceMs);
    server.tryShutdown((err) => {
      clearTimeout(force);
      if (err) {
        o.logger.warn({ err }, 'gRPC health server: tryShutdown failed, forcing shutdown');
        server.forceShutdown();
      }
      resolve();
    });
  });
  o.logger.info({}, 'gRPC health server stopped');
}
