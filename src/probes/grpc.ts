/**
 * gRPC check (consul-compat.md §4 gRPC): one unary grpc.health.v1.Health/Check on a fresh channel,
 * closed after the answer. A fresh channel per probe (as Consul dials per check) costs a connection
 * every interval but leaves nothing to evict or leak between probes; its own subchannel pool makes
 * the close really close the connection.
 */
import * as grpc from '@grpc/grpc-js';
import { service as healthService } from 'grpc-health-check';
import { startDeadline, type StopReason } from './deadline.ts';
import { dialErrorText } from './go-text.ts';
import { grpcTimeoutMsDefault } from './limits.ts';
import { validateHostPort } from './tcp.ts';
import { critical, passing, type Probe } from './types.ts';

export interface GrpcProbeOptions {
  /** host:port, optionally followed by /service ("" or none = the whole server). */
  target: string;
  /** @default false (plaintext) */
  useTls?: boolean;
  /** With useTls, accept any server certificate. @default false */
  tlsSkipVerify?: boolean;
  /** The RPC deadline. @default grpcTimeoutMsDefault (10 s) */
  timeoutMs?: number;
}

interface HealthCheckResponse {
  status?: string;
}

/** The Check method as grpc-health-check loads it from the health.proto it ships. */
const check = healthService['Check']!;

/** Go's codes.Code String() by status number. */
const goCodeNames = [
  'OK', 'Canceled', 'Unknown', 'InvalidArgument', 'DeadlineExceeded', 'NotFound', 'AlreadyExists', 'PermissionDenied',
  'ResourceExhausted', 'FailedPrecondition', 'Aborted', 'OutOfRange', 'Unimplemented', 'Internal', 'Unavailable',
  'DataLoss', 'Unauthenticated',
];

const channelOptions: grpc.ChannelOptions = {
  'grpc.use_local_subchannel_pool': 1,
  'grpc.service_config_disable_resolution': 1,
  'grpc.enable_retries': 0,
};

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
    const deadline = startDeadline(timeoutMs, signal);
    let client: grpc.Client | undefined;
    try {
      client = new grpc.Client(server, credentials(o), channelOptions);
      const response = await callCheck(client, service, timeoutMs, deadline.signal);
      if (response.status === 'SERVING') return passing(`gRPC check ${o.target}: success`);
      return critical(`gRPC ${o.target} serving status: ${response.status ?? 'UNKNOWN'}`);
    } catch (err) {
      return critical(rpcErrorText(err, deadline.reason, server));
    } finally {
      client?.close();
      deadline.dispose();
    }
  };
}

function credentials(o: GrpcProbeOptions): grpc.ChannelCredentials {
  if (!o.useTls) return grpc.credentials.createInsecure();
  return grpc.credentials.createSsl(null, null, null, o.tlsSkipVerify ? { rejectUnauthorized: false, checkServerIdentity: () => undefined } : {});
}

function callCheck(client: grpc.Client, service: string, timeoutMs: number, signal: AbortSignal): Promise<HealthCheckResponse> {
  return new Promise((resolve, reject) => {
    const call = client.makeUnaryRequest<{ service: string }, HealthCheckResponse>(
      check.path,
      check.requestSerialize as (value: { service: string }) => Buffer,
      check.responseDeserialize as (bytes: Buffer) => HealthCheckResponse,
      { service },
      { deadline: Date.now() + timeoutMs },
      (err, response) => (err ? reject(err) : resolve(response ?? {})),
    );
    const cancel = () => call.cancel();
    if (signal.aborted) cancel();
    else signal.addEventListener('abort', cancel, { once: true });
  });
}

/**
 * Go's status error text, `rpc error: code = NotFound desc = unknown service foo`. Our own deadline or
 * cancel reads as Go's context errors; a failed connect as grpc-go's transport error around the dial text.
 */
function rpcErrorText(error: unknown, reason: StopReason | undefined, server: string): string {
  if (reason === 'timeout') return 'rpc error: code = DeadlineExceeded desc = context deadline exceeded';
  if (reason === 'canceled') return 'rpc error: code = Canceled desc = context canceled';
  const e = error as Partial<grpc.ServiceError>;
  if (typeof e.code !== 'number') return error instanceof Error ? error.message : String(error);
  const code = goCodeNames[e.code] ?? `Code(${e.code})`;
  if (e.code === grpc.status.DEADLINE_EXCEEDED) return `rpc error: code = ${code} desc = context deadline exceeded`;
  const desc = e.code === grpc.status.UNAVAILABLE ? unavailableDesc(e.details ?? '', server) : (e.details ?? '');
  return `rpc error: code = ${code} desc = ${desc}`;
}

/** grpc-js: `No connection established. Last error: Error: connect ECONNREFUSED 127.0.0.1:1 (<time>)`. */
function unavailableDesc(details: string, server: string): string {
  const connect = /connect (E[A-Z]+) (\S+):(\d+)/.exec(details);
  if (!connect) return details;
  const [, code, address, port] = connect;
  const dial = dialErrorText('tcp', server, Object.assign(new Error(details), { code, syscall: 'connect', address, port: Number(port) }));
  return `connection error: desc = "transport: Error while dialing: ${dial}"`;
}
