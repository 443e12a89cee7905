/**
 * The gRPC port's own listener, in front of grpc-js. grpc-js alone keeps every TCP connection it accepts
 * for as long as the peer leaves it open, whether or not it ever speaks HTTP/2: one client holding
 * idle connections could take every file descriptor of the agent, and with them the HTTP API, the WAL's
 * next segment and its snapshots. Here a connection is counted against the agent's limit and its client
 * address's limit when it is accepted, closed at once past either, and closed if it has not sent HTTP/2's
 * client preface within the handshake timeout (Consul's rpc_handshake_timeout plays that part). Once the
 * preface has come, the bytes read so far are put back and the socket is handed to grpc-js.
 */
import { createServer, type Server as NetServer, type Socket } from 'node:net';
import type { Logger } from '../runtime/index.ts';
import { lineLimit, type LineLimit } from '../util/line-limit.ts';
import { setLongTimeout } from '../util/timer.ts';

export interface ConnectionLimits {
  /** Open connections of the agent. */
  connsMax: number;
  /** Open connections per client address. */
  connsMaxPerClient: number;
  /** How long a new connection has to send the HTTP/2 client preface. */
  handshakeTimeoutMs: number;
}

export type RefusalReason = 'agent-limit' | 'client-limit' | 'handshake-timeout' | 'not-http2';

/** The 24 bytes every HTTP/2 client sends first (RFC 9113 §3.4). */
const clientPreface = Buffer.from('PRI * HTTP/2.0\r\n\r\nSM\r\n\r\n', 'latin1');

/** Refusals are logged one line every 10 s at most, and the count of those left out after: a flood must not flood the log. */
const refusalLineLimit = { burst: 1, perSecond: 0.1, reportAfterMs: 10_000 };
const refusalLine = 'gRPC connection closed: over a connection limit or no HTTP/2 handshake in time';

export interface GrpcListenerOptions {
  limits: ConnectionLimits;
  logger: Logger;
  /** Given each admitted socket, with the preface (and whatever followed it) unread again. */
  admit: (socket: Socket) => void;
  /** Told each refusal (metrics). */
  refused?: (reason: RefusalReason) => void;
}

export class GrpcListener {
  private readonly server: NetServer;
  private limits: ConnectionLimits;
  private open = 0;
  private readonly perClient = new Map<string, number>();
  /** Sockets still in their handshake: ended when the listener closes (admitted ones are grpc-js's). */
  private readonly handshaking = new Set<Socket>();
  private readonly refusalLines: LineLimit;

  constructor(private readonly o: GrpcListenerOptions) {
    this.limits = o.limits;
    this.refusalLines = lineLimit(o.logger, 'warn', refusalLine, refusalLineLimit);
    this.server = createServer({ noDelay: true }, (socket) => this.accepted(socket));
  }

  /** Open connections (admitted or in their handshake). */
  get connections(): number {
    return this.open;
  }

  /** New limits (a reload): open connections stay, later ones are counted against these. */
  setLimits(limits: ConnectionLimits): void {
    this.limits = limits;
  }

  /** Listens on host:port, exclusively (a second agent on the port must fail, not share it); resolves with the port bound. */
  listen(host: string, port: number): Promise<number> {
    return new Promise((resolve, reject) => {
      this.server.once('error', reject);
      this.server.listen({ host, port, exclusive: true }, () => {
        this.server.off('error', reject);
        // An accept that fails (out of descriptors) is reported on the server: logged, never thrown.
        this.server.on('error', (err) => this.o.logger.warn({ err }, 'gRPC listener: accepting a connection failed'));
        resolve((this.server.address() as { port: number }).port);
      });
    });
  }

  /** Stops accepting and ends the connections still in their handshake. */
  close(): void {
    this.server.close();
    for (const socket of this.handshaking) socket.destroy();
    this.handshaking.clear();
  }

  private accepted(socket: Socket): void {
    const client = socket.remoteAddress ?? '';
    const mine = this.perClient.get(client) ?? 0;
    const over = this.open >= this.limits.connsMax ? 'agent-limit' : mine >= this.limits.connsMaxPerClient ? 'client-limit' : undefined;
    if (over !== undefined) {
      socket.on('error', () => {});
      socket.destroy();
      this.refuse(over, client);
      return;
    }
    this.open++;
    this.perClient.set(client, mine + 1);
    socket.once('close', () => this.closed(client, socket));
    this.handshake(socket, client);
  }

  private closed(client: string, socket: Socket): void {
    this.open--;
    this.handshaking.delete(socket);
    const left = (this.perClient.get(client) ?? 1) - 1;
    if (left <= 0) this.perClient.delete(client);
    else this.perClient.set(client, left);
  }

  /** Reads until the preface is in, within the timeout; then hands the socket over with the bytes put back. */
  private handshake(socket: Socket, client: string): void {
    this.handshaking.add(socket);
    let read: Buffer = Buffer.alloc(0);
    const fail = (reason: RefusalReason) => {
      finish();
      socket.destroy();
      this.refuse(reason, client);
    };
    // limits.grpc_handshake_timeout may pass Node's 32-bit timer limit: setLongTimeout waits it out in full.
    const timer = setLongTimeout(() => fail('handshake-timeout'), this.limits.handshakeTimeoutMs);
    const onData = (chunk: Buffer) => {
      read = read.length === 0 ? chunk : Buffer.concat([read, chunk]);
      const seen = Math.min(read.length, clientPreface.length);
      if (!read.subarray(0, seen).equals(clientPreface.subarray(0, seen))) return fail('not-http2');
      if (read.length < clientPreface.length) return;
      finish();
      socket.pause();
      socket.unshift(read);
      this.o.admit(socket);
    };
    const onError = () => finish();
    const finish = () => {
      timer.clear();
      this.handshaking.delete(socket);
      socket.off('data', onData);
      socket.off('error', onError);
    };
    socket.on('data', onData);
    socket.on('error', onError);
  }

  private refuse(reason: RefusalReason, client: string): void {
    this.o.refused?.(reason);
    if (!this.refusalLines.admit()) return;
    const { connsMax, connsMaxPerClient, handshakeTimeoutMs } = this.limits;
    this.o.logger.warn({ reason, client, open: this.open, connsMax, connsMaxPerClient, handshakeTimeoutMs }, refusalLine);
  }
}
