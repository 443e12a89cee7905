/**
 * gRPC check (consul-compat.md §4 gRPC): one unary grpc.health.v1.Health/Check on a connection of its own
 * (grpc-call.ts), as Consul dials per check, destroyed when the probe ends whatever state it is in. The
 * outputs are grpc-go's texts: `rpc error: code = <Code> desc = <text>`, with no time or other detail
 * that changes from one probe to the next, so a target failing the same way gives the same output.
 */
import { service as healthService } from 'grpc-health-check';
import { startDeadline, type StopReason } from './deadline.ts';
import { dialErrorText, isDialError, splitHostPort, tlsErrorText, type SystemError } from './go-text.ts';
import { grpcCode, unaryCall, type CallOutcome, type CallPhase } from './grpc-call.ts';
import { grpcReplyBytesMax, grpcTimeoutMsDefault } from './limits.ts';
import { validateHostPort } from './tcp.ts';
import { critical, passing, type Probe } from './types.ts';

export interface GrpcProbeOptions {
  /** host:port, optionally followed by /service ("" or none = the whole server). */
  target: string;
  /** @default false (plaintext) */
  useTls?: boolean;
  /** With useTls, accept any server certificate. @default false */
  tlsSkipVerify?: boolean;
  /**
   * With useTls, the server's name: sent as SNI, checked against its certificate and sent as the call's
   * :authority, as grpc-go takes it from Consul's TLS config. @default the target's host (its host:port as authority)
   */
  tlsServerName?: string;
  /** The RPC deadline. @default grpcTimeoutMsDefault (10 s) */
  timeoutMs?: number;
}

interface HealthCheckResponse {
  status?: string | number;
}

/** The Check method as grpc-health-check loads it from the health.proto it ships. */
const check = healthService['Check']!;

/** Go's codes.Code String() by status number. */
const goCodeNames = [
  'OK', 'Canceled', 'Unknown', 'InvalidArgument', 'DeadlineExceeded', 'NotFound', 'AlreadyExists', 'PermissionDenied',
  'ResourceExhausted', 'FailedPrecondition', 'Aborted', 'OutOfRange', 'Unimplemented', 'Internal', 'Unavailable',
  'DataLoss', 'Unauthenticated',
];

/** Why `target` is not `host:port[/service]` (validateHostPort's rules), or undefined when it is. */
export function validateGrpcTarget(target: string): string | undefined {
  const slash = target.indexOf('/');
  const bad = validateHostPort(slash < 0 ? target : target.slice(0, slash));
  if (bad !== undefined) return bad;
  // eslint-disable-next-line no-control-regex
  if (slash >= 0 && /[\u0000-\u001f\u007f]/.test(target.slice(slash + 1))) return `target ${JSON.stringify(target)}: control characters in the service name`;
  return undefined;
}

export function grpcProbe(o: GrpcProbeOptions): Probe {
  const timeoutMs = o.timeoutMs ?? grpcTimeoutMsDefault;
  const slash = o.target.indexOf('/');
  const server = slash < 0 ? o.target : o.target.slice(0, slash);
  const service = slash < 0 ? '' : o.target.slice(slash + 1);
  return async (signal) => {
    const address = splitHostPort(server);
    if (typeof address === 'string') return critical(rpcError(grpcCode.unavailable, transportText('dial', undefined, server, `dial tcp: ${address}`)));
    const deadline = startDeadline(timeoutMs, signal);
    try {
      const outcome = await unaryCall({
        // An empty host dials the local system, as Go's does.
        host: address.host || 'localhost', port: address.port, authority: (o.useTls && o.tlsServerName) || server, path: check.path,
        message: (check.requestSerialize as (value: { service: string }) => Buffer)({ service }),
        ...(o.useTls ? { tls: { verify: !o.tlsSkipVerify, ...(o.tlsServerName ? { serverName: o.tlsServerName } : {}) } } : {}),
        timeoutMs, signal: deadline.signal, replyBytesMax: grpcReplyBytesMax,
      });
      return resultOf(outcome, o.target, server, deadline.reason);
    } finally {
      deadline.dispose();
    }
  };
}

function resultOf(outcome: CallOutcome, target: string, server: string, reason: StopReason | undefined) {
  switch (outcome.kind) {
    case 'stopped':
      return critical(reason === 'timeout' ? rpcError(4, 'context deadline exceeded') : rpcError(1, 'context canceled'));
    case 'status':
      return critical(rpcError(outcome.code, outcome.message));
    case 'transport':
      return critical(rpcError(grpcCode.unavailable, transportText(outcome.phase, outcome.error, server)));
    case 'reply': {
      let response: HealthCheckResponse;
      try {
        response = (check.responseDeserialize as (bytes: Buffer) => HealthCheckResponse)(outcome.message);
      } catch (err) {
        return critical(rpcError(grpcCode.internal, `grpc: failed to unmarshal the received message: ${err instanceof Error ? err.message : String(err)}`));
      }
      if (response.status === 'SERVING') return passing(`gRPC check ${target}: success`);
      return critical(`gRPC ${target} serving status: ${response.status ?? 'UNKNOWN'}`);
    }
  }
}

/** Go's status error text, `rpc error: code = NotFound desc = unknown service foo`. */
function rpcError(code: number, desc: string): string {
  return `rpc error: code = ${goCodeNames[code] ?? `Code(${code})`} desc = ${desc}`;
}

/**
 * grpc-go's text for a connection that failed, by where it was: dialing (`transport: Error while dialing:
 * dial tcp …: connect: connection refused`), the TLS handshake, waiting for the server's HTTP/2 preface
 * (a server that is not HTTP/2 answers text, which Go reads as a frame too large), or during the call.
 */
function transportText(phase: CallPhase, e: SystemError | undefined, server: string, dialText?: string): string {
  if (phase === 'dial' || (e !== undefined && isDialError(e))) {
    return `connection error: desc = "transport: Error while dialing: ${dialText ?? dialErrorText('tcp', server, e ?? new Error('connection closed'))}"`;
  }
  if (phase === 'handshake') return `connection error: desc = "transport: authentication handshake failed: ${(e && tlsErrorText(e)) ?? readErrorText(e)}"`;
  if (phase === 'preface') return `connection error: desc = "error reading server preface: ${readErrorText(e)}"`;
  const reset = /NGHTTP2_([A-Z_]+)/.exec(e?.message ?? '');
  if (e?.code === 'ERR_HTTP2_STREAM_ERROR' && reset) return `stream terminated by RST_STREAM with error code: ${reset[1]}`;
  return `error reading from server: ${readErrorText(e)}`;
}

/** Go's text for a read that failed: EOF for a close, the errno's text for a reset, HTTP/2's for a protocol error. */
function readErrorText(e: SystemError | undefined): string {
  if (e === undefined || (e.code === 'ECONNRESET' && /hang up|disconnected/.test(e.message))) return 'EOF';
  if (e.code === 'ECONNRESET') return 'read: connection reset by peer';
  if (e.code === 'ERR_HTTP2_ERROR' || e.code === 'ERR_HTTP2_SESSION_ERROR') return 'http2: frame too large';
  return e.message;
}
