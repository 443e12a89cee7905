export { startGrpcHealthServer } from './server.ts';
export type { GrpcHealthServer, GrpcHealthServerOptions } from './server.ts';
export { healthProtoPath, healthServiceName } from './proto.ts';
export { listEntriesMaxDefault, serviceNameBytesMax, shutdownGraceMsDefault } from './limits.ts';
export type { WatchStatus } from './watch-stream.ts';
