// Goal: the gRPC probe speaks grpc.health.v1.Health/Check to a real grpc-js server and maps SERVING, NOT_SERVING, unknown services, refused connections, deadlines, TLS and servers that are not gRPC to Consul's (grpc-go's) texts.
import * as grpc from '@grpc/grpc-js';
import { HealthImplementation } from 'grpc-health-check';
import http2 from 'node:http2';
import net from 'node:net';
import { afterAll, beforeAll, expect, test } from 'vitest';
import { grpcProbe } from '../../src/probes/index.ts';
import { closedPort, listen, tls } from './servers.ts';

const servers: grpc.Server[] = [];
let port = 0;
let tlsPort = 0;
let silentPort = 0;
let closeSilent: () => Promise<void> = async () => {};

async function startHealthServer(credentials: grpc.ServerCredentials): Promise<number> {
  const server = new grpc.Server();
  new HealthImplementation({ '': 'SERVING', db: 'SERVING', cache: 'NOT_SERVING' }).addToServer(server);
  servers.push(server);
  return new Promise((resolve, reject) => server.bindAsync('127.0.0.1:0', credentials, (err, bound) => (err ? reject(err) : resolve(bound))));
}

beforeAll(async () => {
  port = await startHealthServer(grpc.ServerCredentials.createInsecure());
  tlsPort = await startHealthServer(grpc.ServerCredentials.createSsl(null, [{ private_key: tls.key, cert_chain: tls.cert }]));
  // Accepts connections and never speaks HTTP/2: only the deadline ends a call to it.
  const silent = await listen(net.createServer(() => {}));
  silentPort = silent.port;
  closeSilent = silent.close;
});
afterAll(async () => {
  for (const server of servers) server.forceShutdown();
  await closeSilent();
});

test('a SERVING service → passing', async () => {
  const target = `127.0.0.1:${port}/db`;
  expect(await grpcProbe({ target })()).toEqual({ status: 'passing', output: `gRPC check ${target}: success` });
});

test('no service name asks about the whole server', async () => {
  const target = `127.0.0.1:${port}`;
  expect(await grpcProbe({ target })()).toEqual({ status: 'passing', output: `gRPC check ${target}: success` });
});

test('a NOT_SERVING service → critical with its serving status', async () => {
  const target = `127.0.0.1:${port}/cache`;
  expect(await grpcProbe({ target })()).toEqual({ status: 'critical', output: `gRPC ${target} serving status: NOT_SERVING` });
});

test('an unknown service → critical with the RPC error text', async () => {
  expect(await grpcProbe({ target: `127.0.0.1:${port}/foo` })()).toEqual({
    status: 'critical',
    output: 'rpc error: code = NotFound desc = Health status unknown for service foo',
  });
});

test('a refused connection → Unavailable with the dial error', async () => {
  const closed = await closedPort();
  expect(await grpcProbe({ target: `127.0.0.1:${closed}/db` })()).toEqual({
    status: 'critical',
    output: `rpc error: code = Unavailable desc = connection error: desc = "transport: Error while dialing: dial tcp 127.0.0.1:${closed}: connect: connection refused"`,
  });
});

test('a server that never answers → DeadlineExceeded at timeoutMs', async () => {
  expect(await grpcProbe({ target: `127.0.0.1:${silentPort}/db`, timeoutMs: 300 })()).toEqual({
    status: 'critical',
    output: 'rpc error: code = DeadlineExceeded desc = context deadline exceeded',
  });
});

test('TLS with tlsSkipVerify reaches a self-signed server; plaintext to it fails', async () => {
  const target = `127.0.0.1:${tlsPort}/db`;
  expect(await grpcProbe({ target, useTls: true, tlsSkipVerify: true })()).toEqual({ status: 'passing', output: `gRPC check ${target}: success` });
  expect((await grpcProbe({ target, timeoutMs: 2000 })()).status).toBe('critical');
});

test('the caller aborting cancels the call', async () => {
  const controller = new AbortController();
  const pending = grpcProbe({ target: `127.0.0.1:${silentPort}/db` })(controller.signal);
  setTimeout(() => controller.abort(), 100);
  expect(await pending).toEqual({ status: 'critical', output: 'rpc error: code = Canceled desc = context canceled' });
});

test('a server that is not HTTP/2, or closes at once, fails reading the server preface', async () => {
  const text = await listen(net.createServer((s) => s.once('data', () => s.end('HTTP/1.1 400 Bad Request\r\n\r\n'))));
  const closing = await listen(net.createServer((s) => s.destroy()));
  try {
    expect(await grpcProbe({ target: `127.0.0.1:${text.port}`, timeoutMs: 2000 })()).toEqual({
      status: 'critical', output: 'rpc error: code = Unavailable desc = connection error: desc = "error reading server preface: http2: frame too large"',
    });
    expect(await grpcProbe({ target: `127.0.0.1:${closing.port}`, timeoutMs: 2000 })()).toEqual({
      status: 'critical', output: 'rpc error: code = Unavailable desc = connection error: desc = "error reading server preface: EOF"',
    });
  } finally {
    await text.close();
    await closing.close();
  }
});

test('an HTTP/2 server that is not gRPC: its HTTP status and content type, as grpc-go reports them', async () => {
  const server = http2.createServer((req, res) => res.writeHead(404, { 'content-type': 'text/plain' }).end('no'));
  const { port, close } = await listen(server as unknown as net.Server);
  try {
    expect(await grpcProbe({ target: `127.0.0.1:${port}`, timeoutMs: 2000 })()).toEqual({
      status: 'critical',
      output: 'rpc error: code = Unimplemented desc = unexpected HTTP status code received from server: 404 (Not Found); transport: received unexpected content-type "text/plain"',
    });
  } finally {
    await close();
  }
});
