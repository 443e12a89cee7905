export { startGrpcHealthServer } from './server.ts';
export type { GrpcHealthServer, GrpcHealthServerOptions } from './server.ts';
export { healthProtoPath, healthServiceName } from './proto.ts';
export { connectionLimitsDefault, listEntriesMaxDefault, serviceNameBytesMax, shutdownGraceMsDefault, watchLimitsDefault } from './limits.ts';
export type { ConnectionLimits, RefusalReason } from './listener.ts';
export type { GrpcAuth, WatchLimits } from './health-service.ts';
export type { WatchStatus } from './watch-stream.ts';
