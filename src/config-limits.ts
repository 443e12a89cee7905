/** The config file's `limits` object: connection, stream, body and state bounds, each checked at start. */
import { getHeapStatistics } from 'node:v8';
import { ConfigError } from './config-error.ts';
import { duration } from './config-durations.ts';
import { requestBodyBytesMax } from './domain/limits.ts';
import { connectionLimitsDefault, watchLimitsDefault } from './grpc/limits.ts';
import { answerBytesMaxDefault, writeIdleMsDefault } from './http/large-answers.ts';
import { entryBytesMax } from './log/index.ts';

export interface Limits {
  /** HTTP requests in flight per client address (Consul's http_max_conns_per_client). @default 200 */
  httpMaxConnsPerClient: number;
  /** Open /v1/stream connections per client (token subject, else address). @default 64 */
  streamMaxConnsPerClient: number;
  /** A request body must arrive within this long of its head. @default 8s */
  requestBodyTimeoutMs: number;
  /** Largest request body, KV values included (Consul's limits.kv_max_value_size), at most `kvMaxValueSizeMax`. @default 524288 */
  kvMaxValueSize: number;
  /** Stream backpressure: buffered bytes above which events are held and coalesced and snapshot pages wait. @default 1 MiB */
  streamBufferedBytesSoft: number;
  /** A stream connection's queue budget (events and messages buffered, held or queued) past which it is closed with 4008. @default 4 MiB */
  streamBufferedBytesHard: number;
  /** Held distinct items above which a slow stream reader is closed with 4008. @default 10000 */
  streamHeldItemsMax: number;
  /** Open /v1/stream connections of the agent; the next upgrade is refused 503. @default 256 */
  streamMaxConns: number;
  /** Stream snapshot pages in flight over all connections, past which further pages wait. @default 64 MiB */
  streamSnapshotBytesMax: number;
  /** Open gRPC Watch calls of the agent; the next one gets RESOURCE_EXHAUSTED. @default 1024 */
  grpcWatchMax: number;
  /** Open gRPC Watch calls per client address. @default 64 */
  grpcWatchMaxPerClient: number;
  /** Open connections of the gRPC port; the next one is closed at once. @default 4096 */
  grpcMaxConns: number;
  /** Open connections of the gRPC port per client address (Consul's rpc_max_conns_per_client). @default 100 */
  grpcMaxConnsPerClient: number;
  /** A gRPC connection that has not sent HTTP/2's preface within this long is closed (Consul's rpc_handshake_timeout). @default 5s */
  grpcHandshakeTimeoutMs: number;
  /** The state quota: past this estimated size, writes that would grow the state are refused. @default stateBytesMaxDefault() */
  stateBytesMax: number;
  /** Bytes of large HTTP answers (1 MiB or more) in flight; past them a large answer is refused 503. @default 256 MiB */
  httpAnswerBytesMax: number;
  /** A large HTTP answer's connection is closed when its client has read nothing for this long. @default 30s */
  httpWriteIdleTimeoutMs: number;
  /** This agent's probes (HTTP, TCP, gRPC, script, container) running at once; the others wait their turn. @default 1024 */
  checkProbesMax: number;
}

/**
 * The state quota's default: 400 MiB, or a fifth of the V8 heap's limit where that is less. A snapshot is
 * read back as one string (at most about 512 MiB), and writing or restoring one takes several times the
 * state's size in heap for a while.
 */
export function stateBytesMaxDefault(): number {
  return Math.min(400 * 1024 * 1024, Math.floor(getHeapStatistics().heap_size_limit / 5));
}

/**
 * Room an entry keeps for what is not the value: the key (the request head is at most 128 KiB, and a
 * key's JSON escapes can double it), the session, flags, the entry's fields and its envelope.
 */
const entryHeadroomBytes = 512 * 1024;

/**
 * The largest `kv_max_value_size`: a value of that size, stored as base64 (4 bytes for every 3) in one
 * log entry beside `entryHeadroomBytes`, still fits `entryBytesMax`. A larger limit would let a body
 * through that the log then refuses.
 */
export const kvMaxValueSizeMax = Math.floor((entryBytesMax - entryHeadroomBytes) / 4) * 3;

/** Each `limits` key and the kind of value it takes: a count or a byte size, or a duration's text. */
export const limitKinds = {
  kv_max_value_size: 'number', http_max_conns_per_client: 'number', stream_max_conns_per_client: 'number', request_body_timeout: 'text',
  stream_buffered_bytes_soft: 'number', stream_buffered_bytes_hard: 'number', stream_held_items_max: 'number', stream_max_conns: 'number',
  stream_snapshot_bytes_max: 'number', grpc_watch_max: 'number', grpc_watch_max_per_client: 'number', grpc_max_conns: 'number',
  grpc_max_conns_per_client: 'number', grpc_handshake_timeout: 'text', state_bytes_max: 'number', http_answer_bytes_max: 'number',
  http_write_idle_timeout: 'text', check_probes_max: 'number',
} as const;

/** `limits: {...}` of the config file, its keys and their types already checked (config-file.ts). */
export function limits(value: Record<string, unknown> | undefined): Limits {
  const o = value ?? {};
  const text = (key: keyof typeof limitKinds) => (o[key] === undefined ? undefined : String(o[key]));
  const n = (key: keyof typeof limitKinds, fallback: number) => positive(`limits.${key}`, text(key) ?? String(fallback));
  return {
    kvMaxValueSize: kvMaxValueSize(n('kv_max_value_size', requestBodyBytesMax)),
    httpMaxConnsPerClient: n('http_max_conns_per_client', 200),
    streamMaxConnsPerClient: n('stream_max_conns_per_client', 64),
    requestBodyTimeoutMs: duration('limits.request_body_timeout', text('request_body_timeout'), 8_000),
    streamBufferedBytesSoft: n('stream_buffered_bytes_soft', 1024 * 1024),
    streamBufferedBytesHard: n('stream_buffered_bytes_hard', 4 * 1024 * 1024),
    streamHeldItemsMax: n('stream_held_items_max', 10_000),
    streamMaxConns: n('stream_max_conns', 256),
    streamSnapshotBytesMax: n('stream_snapshot_bytes_max', 64 * 1024 * 1024),
    grpcWatchMax: n('grpc_watch_max', watchLimitsDefault.watchMax),
    grpcWatchMaxPerClient: n('grpc_watch_max_per_client', watchLimitsDefault.watchMaxPerClient),
    grpcMaxConns: n('grpc_max_conns', connectionLimitsDefault.connsMax),
    grpcMaxConnsPerClient: n('grpc_max_conns_per_client', connectionLimitsDefault.connsMaxPerClient),
    grpcHandshakeTimeoutMs: duration('limits.grpc_handshake_timeout', text('grpc_handshake_timeout'), connectionLimitsDefault.handshakeTimeoutMs),
    stateBytesMax: n('state_bytes_max', stateBytesMaxDefault()),
    httpAnswerBytesMax: n('http_answer_bytes_max', answerBytesMaxDefault),
    httpWriteIdleTimeoutMs: duration('limits.http_write_idle_timeout', text('http_write_idle_timeout'), writeIdleMsDefault),
    checkProbesMax: n('check_probes_max', 1024),
  };
}

/** A count or size setting's text (a flag's, or a file value's), which must be a positive integer. */
export function positive(name: string, text: string): number {
  const n = Number(text);
  if (!/^\d+$/.test(text) || n < 1) throw new ConfigError(`--${name}: "${text}" is not a positive integer`);
  return n;
}

function kvMaxValueSize(bytes: number): number {
  if (bytes > kvMaxValueSizeMax) {
    throw new ConfigError(`--limits.kv_max_value_size: ${bytes} is more than ${kvMaxValueSizeMax} bytes, the largest value one log entry `
      + `can carry (entries are at most ${entryBytesMax} bytes, values stored as base64)`);
  }
  return bytes;
}
