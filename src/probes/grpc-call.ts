/**
 * One unary gRPC call over a connection the call makes and owns: a TCP (or TLS) socket of its own, an
 * HTTP/2 session over it and one stream. Whatever way the call ends (an answer, an error, the deadline,
 * the caller's abort) and whatever state the connection is in then (still connecting, waiting for the
 * server's preface, mid-answer), the session and the socket are destroyed before it settles. A grpc-js
 * channel closed while its connection was connecting or waiting for the preface kept that connection.
 */
import http2 from 'node:http2';
import net from 'node:net';
import tls from 'node:tls';
import { joinHostPort, systemError, type SystemError } from './go-text.ts';
import { serverNameOptions } from './tls-name.ts';

export interface UnaryCallOptions {
  host: string;
  port: number;
  /** The :authority header (Go's target, `host:port`). */
  authority: string;
  /** `/package.Service/Method`. */
  path: string;
  /** The serialized request message. */
  message: Buffer;
  /**
   * TLS, and whether the server's certificate must verify; plaintext when absent. `serverName` is the name sent
   * as SNI and that the certificate must hold, as Go's tls.Config.ServerName. @default host
   */
  tls?: { verify: boolean; serverName?: string };
  /** Sent as grpc-timeout; the deadline itself is `signal`'s. */
  timeoutMs: number;
  signal: AbortSignal;
  /** A reply message larger than this ends the call. */
  replyBytesMax: number;
}

/** Where the connection was when a transport error ended the call. */
export type CallPhase = 'dial' | 'handshake' | 'preface' | 'stream';

/** How the call ended. */
export type CallOutcome =
  /** grpc-status 0 and the one reply message. */
  | { kind: 'reply'; message: Buffer }
  /** A gRPC status other than OK: the server's, or one grpc-go would derive from what came. */
  | { kind: 'status'; code: number; message: string }
  /** The connection failed or closed before the call had an answer. */
  | { kind: 'transport'; phase: CallPhase; error: SystemError | undefined }
  /** `signal` fired first. */
  | { kind: 'stopped' };

/** gRPC status codes used here (grpc.status). */
export const grpcCode = { ok: 0, unknown: 2, resourceExhausted: 8, unimplemented: 12, internal: 13, unavailable: 14, unauthenticated: 16, permissionDenied: 7 } as const;

export function unaryCall(o: UnaryCallOptions): Promise<CallOutcome> {
  return new Promise((resolve) => {
    if (o.signal.aborted) return resolve({ kind: 'stopped' });
    const call = new Call(o, resolve);
    call.start();
  });
}

class Call {
  private phase: CallPhase = 'dial';
  private socket: net.Socket | undefined;
  private session: http2.ClientHttp2Session | undefined;
  private failure: SystemError | undefined;
  private headers: http2.IncomingHttpHeaders | undefined;
  private trailers: http2.IncomingHttpHeaders | undefined;
  private readonly chunks: Buffer[] = [];
  private receivedBytes = 0;
  private tooLarge = false;
  /** The server ended the stream (END_STREAM), rather than the connection ending under it. */
  private streamEnded = false;
  private ending = false;
  private done = false;
  private readonly onAbort = () => this.finish({ kind: 'stopped' });

  constructor(private readonly o: UnaryCallOptions, private readonly resolve: (outcome: CallOutcome) => void) {}

  start(): void {
    this.o.signal.addEventListener('abort', this.onAbort, { once: true });
    const { host, port } = this.o;
    const socket = this.o.tls
      ? tls.connect({ host, port, ALPNProtocols: ['h2'], rejectUnauthorized: this.o.tls.verify, ...serverNameOptions(this.o.tls.serverName || host) })
      : net.connect({ host, port });
    this.socket = socket;
    socket.once('connect', () => { this.phase = this.o.tls ? 'handshake' : 'preface'; });
    if (this.o.tls) socket.once('secureConnect', () => { this.phase = 'preface'; });
    socket.on('error', (err) => this.fail(err));
    socket.once('close', () => this.end());
    // The URL names the peer only; the :authority of the call is set on its stream.
    const session = http2.connect(`http://${joinHostPort(host, port)}`, { createConnection: () => socket, settings: { enablePush: false } });
    this.session = session;
    session.once('remoteSettings', () => { this.phase = 'stream'; });
    session.on('error', (err) => this.fail(err));
    session.once('close', () => this.end());
    this.request(session);
  }

  private request(session: http2.ClientHttp2Session): void {
    const stream = session.request({
      ':method': 'POST', ':path': this.o.path, ':authority': this.o.authority,
      'content-type': 'application/grpc', te: 'trailers', 'grpc-timeout': grpcTimeout(this.o.timeoutMs),
    });
    stream.once('response', (headers) => { this.headers = headers; });
    stream.once('trailers', (trailers) => { this.trailers = trailers; });
    stream.on('data', (chunk: Buffer) => this.take(chunk));
    stream.once('end', () => { this.streamEnded = true; });
    stream.on('error', (err) => this.fail(err));
    stream.once('close', () => this.end());
    const frame = Buffer.alloc(5 + this.o.message.length);
    frame.writeUInt32BE(this.o.message.length, 1);
    this.o.message.copy(frame, 5);
    stream.end(frame);
  }

  private take(chunk: Buffer): void {
    this.receivedBytes += chunk.length;
    if (this.receivedBytes > this.o.replyBytesMax + 5) {
      this.tooLarge = true;
      return this.end();
    }
    this.chunks.push(chunk);
  }

  private fail(err: unknown): void {
    this.failure ??= systemError(err);
    this.end();
  }

  /** Something ended: decide a turn later, so that an error reported just after a close is taken into account. */
  private end(): void {
    if (this.ending || this.done) return;
    this.ending = true;
    setImmediate(() => this.finish(this.outcome()));
  }

  private outcome(): CallOutcome {
    if (this.tooLarge) {
      return { kind: 'status', code: grpcCode.resourceExhausted, message: `grpc: received message larger than max (${this.receivedBytes - 5} vs. ${this.o.replyBytesMax})` };
    }
    const headers = this.headers;
    if (headers === undefined) return { kind: 'transport', phase: this.phase, error: this.failure };
    const answer = answerStatus(headers, this.trailers);
    if (answer !== undefined) return answer;
    if (!this.streamEnded) return { kind: 'transport', phase: 'stream', error: this.failure };
    if ((this.trailers ?? headers)['grpc-status'] === undefined) {
      return { kind: 'status', code: grpcCode.internal, message: 'server closed the stream without sending trailers' };
    }
    return replyMessage(Buffer.concat(this.chunks));
  }

  private finish(outcome: CallOutcome): void {
    if (this.done) return;
    this.done = true;
    this.o.signal.removeEventListener('abort', this.onAbort);
    this.session?.destroy();
    this.socket?.destroy();
    this.resolve(outcome);
  }
}

/** grpc-go's code for an HTTP status that is not 200 (HTTPStatusConvTab); Unknown for the others. */
const httpStatusCodes: Record<number, number> = {
  400: grpcCode.internal, 401: grpcCode.unauthenticated, 403: grpcCode.permissionDenied, 404: grpcCode.unimplemented,
  429: grpcCode.unavailable, 502: grpcCode.unavailable, 503: grpcCode.unavailable, 504: grpcCode.unavailable,
};

/**
 * The status the answer's headers and trailers give, as grpc-go reads them: an HTTP status other than 200 or
 * a content type other than gRPC's is an error of its own; then grpc-status (in the trailers, or in the
 * headers of an answer without a body) when it is not OK. Undefined: OK, or no status yet.
 */
function answerStatus(headers: http2.IncomingHttpHeaders, trailers: http2.IncomingHttpHeaders | undefined): CallOutcome | undefined {
  const httpStatus = Number(headers[':status']);
  const contentType = String(headers['content-type'] ?? '');
  const isGrpc = /^application\/grpc(?:[+;]|$)/.test(contentType);
  if (httpStatus !== 200 || !isGrpc) {
    const why: string[] = [];
    if (httpStatus !== 200) why.push(`unexpected HTTP status code received from server: ${httpStatus} (${statusTexts[httpStatus] ?? ''})`);
    if (!isGrpc) why.push(`transport: received unexpected content-type ${JSON.stringify(contentType)}`);
    const code = httpStatus === 200 ? grpcCode.internal : (httpStatusCodes[httpStatus] ?? grpcCode.unknown);
    return { kind: 'status', code, message: why.join('; ') };
  }
  const source = trailers ?? headers;
  const raw = source['grpc-status'];
  if (raw === undefined) return undefined;
  const code = /^\d+$/.test(String(raw)) ? Number(raw) : NaN;
  if (Number.isNaN(code)) return { kind: 'status', code: grpcCode.unknown, message: `transport: malformed grpc-status: ${String(raw)}` };
  if (code === grpcCode.ok) return undefined;
  return { kind: 'status', code, message: percentDecoded(String(source['grpc-message'] ?? '')) };
}

/** The one length-prefixed message of an OK answer. */
function replyMessage(body: Buffer): CallOutcome {
  if (body.length === 0) return { kind: 'status', code: grpcCode.internal, message: 'cardinality violation: received no response message from non-server-streaming RPC' };
  if (body.length < 5 || body.length < 5 + body.readUInt32BE(1)) {
    return { kind: 'status', code: grpcCode.internal, message: 'grpc: failed to receive the response message: unexpected EOF' };
  }
  if (body[0] !== 0) return { kind: 'status', code: grpcCode.internal, message: 'grpc: compressed flag set with identity or empty encoding' };
  return { kind: 'reply', message: body.subarray(5, 5 + body.readUInt32BE(1)) };
}

/** grpc-message is percent-encoded UTF-8; a malformed escape stays as it is. */
function percentDecoded(text: string): string {
  if (!text.includes('%')) return text;
  const bytes: number[] = [];
  for (let i = 0; i < text.length; i++) {
    const hex = text[i] === '%' ? text.slice(i + 1, i + 3) : '';
    if (/^[0-9a-fA-F]{2}$/.test(hex)) {
      bytes.push(parseInt(hex, 16));
      i += 2;
    } else {
      bytes.push(...Buffer.from(text[i]!));
    }
  }
  return Buffer.from(bytes).toString('utf8');
}

/** Go's http.StatusText for the statuses a gRPC server answers with besides 200. */
const statusTexts: Record<number, string> = {
  400: 'Bad Request', 401: 'Unauthorized', 403: 'Forbidden', 404: 'Not Found', 405: 'Method Not Allowed', 415: 'Unsupported Media Type',
  429: 'Too Many Requests', 500: 'Internal Server Error', 501: 'Not Implemented', 502: 'Bad Gateway', 503: 'Service Unavailable', 504: 'Gateway Timeout',
};

/** The grpc-timeout header: at most 8 digits and a unit, rounded up. */
export function grpcTimeout(ms: number): string {
  const units: Array<[string, number]> = [['m', 1], ['S', 1000], ['M', 60_000], ['H', 3_600_000]];
  for (const [unit, size] of units) {
    const count = Math.ceil(Math.max(ms, 1) / size);
    if (count < 1e8) return `${count}${unit}`;
  }
  return '99999999H';
}
