/** Named bounds of the gRPC health server, unit last (watch.md §1.3, §1.6). */

/** Longest service name accepted, like grpc C++'s default health service; longer → INVALID_ARGUMENT. */
export const serviceNameBytesMax = 200;
/** List answers RESOURCE_EXHAUSTED past this many names, like grpc-go and grpc-js's helper. */
export const listEntriesMaxDefault = 100;
/** How long stop() lets calls finish after ending every Watch before it forces the server closed. */
export const shutdownGraceMsDefault = 2000;
/** Open Watch calls of the agent, and per client address, unless limits.grpc_watch_max(_per_client) say otherwise. */
export const watchLimitsDefault = { watchMax: 1024, watchMaxPerClient: 64 } as const;
/**
 * Open connections of the agent's gRPC port and per client address (Consul's rpc_max_conns_per_client is
 * 100), and how long a connection has to send HTTP/2's preface (Consul's rpc_handshake_timeout is 5 s),
 * unless limits.grpc_max_conns, grpc_max_conns_per_client and grpc_handshake_timeout say otherwise.
 */
export const connectionLimitsDefault = { connsMax: 4096, connsMaxPerClient: 100, handshakeTimeoutMs: 5000 } as const;
/**
 * HTTP/2 bounds of one gRPC connection: streams open at once (grpc-go's server default is unlimited,
 * Consul's gRPC server 2048 for its own clients; 100 is HTTP/2's suggested minimum and what grpc-java
 * and nginx take), and the memory the connection may buffer (Node's http2 default, 10 MB, which grpc-js
 * lifts to unlimited unless told): past it new streams of that connection are refused. Without them one
 * connection holding streams that never send their request, or never reading its answers, grows the
 * agent's memory without bound.
 */
export const http2StreamsMax = 100;
export const http2SessionMemoryMb = 10;
/**
 * The largest request message taken (grpc-js's default is 4 MiB). A health request holds one service
 * name, at most 200 bytes that are served; the bound leaves room for longer ones to be refused by name
 * (INVALID_ARGUMENT), and past it a call is RESOURCE_EXHAUSTED. grpc-js keeps a request's bytes until the
 * message is whole, and the session memory bound above counts only what nghttp2 holds: without this one,
 * a connection's 100 streams that each declare 4 MiB and never finish held 400 MB of the agent's memory.
 */
export const requestBytesMax = 4096;
/**
 * Keepalive of every gRPC connection: a PING after this long, the connection destroyed (its calls
 * cancelled, its place under limits.grpc_max_conns(_per_client) freed) when no answer comes within the
 * timeout. The listener cannot see a peer that has gone: once it hands a socket over, Node's http2 session
 * reads it natively and no 'end' reaches JavaScript. And a session can stop reading for good while its
 * peer is still connected: a client resetting streams faster than nghttp2's rate limit (about a thousand
 * at once, then some thirty a second: cancels and short deadlines) is sent GOAWAY, after which nghttp2
 * wants no more input, Node stops reading the socket, and the client's close is never read. Such a
 * connection, and the Watch calls it carried, stayed open for good. Its PING is never sent or answered,
 * so the timeout destroys it; a live client answers and keeps its connection. (max_connection_idle would
 * not do: it counts only connections without calls, and these still hold theirs.)
 */
export const keepaliveTimeMs = 10_000;
export const keepaliveTimeoutMs = 5_000;
