/** Named bounds of the gRPC health server, unit last (watch.md §1.3, §1.6). */

/** Longest service name accepted, like grpc C++'s default health service; longer → INVALID_ARGUMENT. */
export const serviceNameBytesMax = 200;
/** List answers RESOURCE_EXHAUSTED past this many names, like grpc-go and grpc-js's helper. */
export const listEntriesMaxDefault = 100;
/** How long stop() lets calls finish after ending every Watch before it forces the server closed. */
export const shutdownGraceMsDefault = 2000;
/** Open Watch calls of the agent, and per client address, unless limits.grpc_watch_max(_per_client) say otherwise. */
export const watchLimitsDefault = { watchMax: 1024, watchMaxPerClient: 64 } as const;
