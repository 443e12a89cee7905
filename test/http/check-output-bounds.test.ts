// Goal: every probe output a started agent records is bounded by its check's output size (4096 bytes) plus
// 512 bytes for the words the probe writes around what it captured. A longer one — a 15 KB HTTP reason phrase,
// a 6 KB gRPC error message, a 6 KB URL — keeps its last 4096 bytes behind `Captured 4096 of <total>
// bytes\n...\n`, in /v1/agent/checks and in the catalog alike. An HTTP check keeps Consul's output (the last
// 4096 bytes of the body after `HTTP GET <url>: 200 OK Output: `) after a usual URL, and as much of the body's
// end as fits after a longer one.
import * as grpc from '@grpc/grpc-js';
import { service as healthService } from 'grpc-health-check';
import { createServer as createHttpServer } from 'node:http';
import { createServer, type AddressInfo, type Server } from 'node:net';
import { afterAll, beforeAll, expect, test } from 'vitest';
import { call, sleep, startAgent, type Agent } from '../support/agent.ts';

let agent: Agent;
const servers: Server[] = [];
let grpcServer: grpc.Server;
const target = { reason: '', grpc: '', body: '' };
const reason = 'R'.repeat(15_000);
const details = 'D'.repeat(6000);
const body = `${'x'.repeat(1000)}${'y'.repeat(4000)}`;

async function listen<S extends Server>(server: S): Promise<string> {
  servers.push(server);
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  return `127.0.0.1:${(server.address() as AddressInfo).port}`;
}

beforeAll(async () => {
  target.reason = await listen(createServer((s) => {
    s.on('error', () => {});
    s.once('data', () => s.end(`HTTP/1.1 200 ${reason}\r\nContent-Length: 2\r\n\r\nok`));
  }));
  target.body = await listen(createHttpServer((_req, res) => res.end(body)) as unknown as Server);
  grpcServer = new grpc.Server();
  grpcServer.addService(healthService, {
    check: (_call: unknown, answer: (e: Partial<grpc.ServiceError>) => void) => answer({ code: grpc.status.INTERNAL, details }),
    watch: (c: grpc.ServerWritableStream<unknown, unknown>) => c.end(),
  });
  const port = await new Promise<number>((resolve, reject) => grpcServer.bindAsync('127.0.0.1:0', grpc.ServerCredentials.createInsecure(), (e, p) => (e ? reject(e) : resolve(p))));
  target.grpc = `127.0.0.1:${port}`;
  agent = await startAgent();
});

afterAll(async () => {
  await agent?.stop();
  agent?.cleanup();
  grpcServer?.forceShutdown();
  for (const s of servers) { (s as { closeAllConnections?: () => void }).closeAllConnections?.(); s.close(); }
});

const captured = (total: number, tail: string) => `Captured 4096 of ${total} bytes\n...\n${tail}`;

test('outputs longer than the bound keep their last 4096 bytes behind the Captured line; usual ones are whole', async () => {
  const longUrl = `http://${target.body}/?${'q'.repeat(6000)}`;
  const midUrl = `http://${target.body}/?${'m'.repeat(600)}`;
  const shortUrl = `http://${target.body}/`;
  const checks: Record<string, object> = {
    reason: { HTTP: `http://${target.reason}/` },
    grpc: { GRPC: target.grpc },
    'long-url': { HTTP: longUrl },
    'mid-url': { HTTP: midUrl },
    'short-url': { HTTP: shortUrl },
  };
  for (const [id, kind] of Object.entries(checks)) {
    const r = await call(agent.url, 'PUT', '/v1/agent/check/register', { ID: id, Name: id, Interval: '1s', ...kind });
    expect(r.status, r.text).toBe(200);
  }
  const reasonOutput = `HTTP GET http://${target.reason}/: 200 ${reason} Output: ok`;
  const grpcOutput = `rpc error: code = Internal desc = ${details}`;
  const longOutput = `HTTP GET ${longUrl}: 200 OK Output: ${body.slice(-4096)}`;
  const midHead = `HTTP GET ${midUrl}: 200 OK Output: `;
  const want: Record<string, string> = {
    reason: captured(reasonOutput.length, reasonOutput.slice(-4096)),
    grpc: captured(grpcOutput.length, details.slice(-4096)),
    'long-url': captured(longOutput.length, longOutput.slice(-4096)),
    'mid-url': `${midHead}${body.slice(-(4096 + 512 - midHead.length))}`,
    'short-url': `HTTP GET ${shortUrl}: 200 OK Output: ${body.slice(-4096)}`,
  };
  let seen: Record<string, { Output: string }> = {};
  for (let deadline = Date.now() + 10_000; Date.now() < deadline; await sleep(200)) {
    seen = (await call(agent.url, 'GET', '/v1/agent/checks')).json();
    if (Object.keys(want).every((id) => seen[id]?.Output === want[id])) break;
  }
  for (const [id, output] of Object.entries(want)) expect(seen[id]?.Output, id).toBe(output);
  expect(Buffer.byteLength(want['mid-url']!)).toBe(4096 + 512);

  // The catalog records the same bounded outputs.
  const catalog = (await call(agent.url, 'GET', '/v1/health/state/any')).json<Array<{ CheckID: string; Output: string }>>();
  for (const [id, output] of Object.entries(want)) expect(catalog.find((c) => c.CheckID === id)?.Output, id).toBe(output);
}, 30_000);
