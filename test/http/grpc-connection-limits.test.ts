// Goal: no client can take the agent's file descriptors through its gRPC port. A started agent closes at
// once a connection past `limits.grpc_max_conns_per_client` of its address or past `limits.grpc_max_conns`
// of the agent, and closes one that has not sent HTTP/2's preface within `limits.grpc_handshake_timeout`
// (or sent something else). The connections within the limits are served; a closed one frees its place;
// a reload puts new limits in force for the next connections; HTTP is served throughout, and the metrics
// count the open connections and every refusal by reason.
import { writeFileSync } from 'node:fs';
import { connect, type Socket } from 'node:net';
import { join } from 'node:path';
import * as grpc from '@grpc/grpc-js';
import { service as healthService } from 'grpc-health-check';
import { afterAll, beforeAll, expect, test } from 'vitest';
import { client, startAgent, tempDataDir, type Agent } from '../support/agent.ts';

const Health = grpc.makeClientConstructor(healthService as grpc.ServiceDefinition, 'grpc.health.v1.Health');
type HealthClient = grpc.Client & { check(req: { service: string }, opts: grpc.CallOptions, cb: (err: grpc.ServiceError | null, res?: { status: string }) => void): void };

const preface = 'PRI * HTTP/2.0\r\n\r\nSM\r\n\r\n';

let agent: Agent;
let configFile: string;
let port: number;
const sockets: Socket[] = [];
const channels: HealthClient[] = [];

const writeLimits = (limits: object) => writeFileSync(configFile, JSON.stringify({ limits }));

beforeAll(async () => {
  configFile = join(tempDataDir(), 'agent.json');
  // A long handshake timeout first: a connection closed within the test was closed by a connection limit.
  writeLimits({ grpc_max_conns: 8, grpc_max_conns_per_client: 5, grpc_handshake_timeout: '60s' });
  agent = await startAgent({ args: ['--config-file', configFile] });
  port = Number(agent.grpc.slice(agent.grpc.lastIndexOf(':') + 1));
});

afterAll(async () => {
  for (const s of sockets) s.destroy();
  for (const c of channels) c.close();
  await agent?.stop();
  agent?.cleanup();
});

interface Raw { socket: Socket; closed: Promise<void>; isClosed: () => boolean }

/** A raw TCP connection to the gRPC port from `from` (a loopback address), sending `send` once connected. */
async function raw(from: string, send: string): Promise<Raw> {
  const socket = connect({ host: '127.0.0.1', port, localAddress: from });
  sockets.push(socket);
  socket.on('error', () => {});
  let closed = false;
  const closedP = new Promise<void>((res) => socket.once('close', () => { closed = true; res(); }));
  await new Promise<void>((res, rej) => { socket.once('connect', res); socket.once('error', rej); });
  if (send !== '') socket.write(send);
  return { socket, closed: closedP, isClosed: () => closed };
}

/** Whether the server has closed `r` within `ms` (it reads until then). */
async function closedWithin(r: Raw, ms: number): Promise<boolean> {
  await Promise.race([r.closed, new Promise((res) => setTimeout(res, ms))]);
  return r.isClosed();
}

function check(): Promise<string> {
  const h = new Health(agent.grpc, grpc.credentials.createInsecure(), { 'grpc.use_local_subchannel_pool': 1 }) as unknown as HealthClient;
  channels.push(h);
  return new Promise((resolve) => h.check({ service: '' }, { deadline: Date.now() + 5000 }, (err, res) => resolve(err ? `error ${err.code}` : res!.status)));
}

async function metric(name: string): Promise<string | undefined> {
  const text = (await client(agent).get('/v1/agent/metrics?format=prometheus')).text;
  return text.match(new RegExp(`^${name.replace(/[{}]/g, '\\$&')} (\\d+)$`, 'm'))?.[1];
}

test('connections past one address\'s limit and past the agent\'s are closed at once; the rest are served; a closed one frees its place', async () => {
  // Five idle connections of 127.0.0.2, each past the preface: admitted and held.
  const held = [];
  for (let i = 0; i < 5; i++) held.push(await raw('127.0.0.2', preface));
  // The sixth of that address is closed at once, though the handshake timeout is a minute.
  const sixth = await raw('127.0.0.2', preface);
  expect(await closedWithin(sixth, 10_000)).toBe(true);
  for (const h of held) expect(h.isClosed()).toBe(false);
  // Another address is under its own limit: a real call is served (its channel holds the sixth connection).
  expect(await check()).toBe('SERVING');
  // Two more from a third address make eight, the agent's limit: the next connection, from anywhere, is closed.
  const more = [await raw('127.0.0.3', preface), await raw('127.0.0.3', preface)];
  await expect.poll(() => metric('roster_grpc_connections'), { timeout: 10_000 }).toBe('8');
  const ninth = await raw('127.0.0.4', preface);
  expect(await closedWithin(ninth, 10_000)).toBe(true);
  for (const m of more) expect(m.isClosed()).toBe(false);
  // HTTP is served throughout.
  expect((await client(agent).get('/v1/status/leader')).status).toBe(200);
  // A closed connection frees its place.
  held[0]!.socket.destroy();
  await expect.poll(() => metric('roster_grpc_connections'), { timeout: 10_000 }).toBe('7');
  const admitted = await raw('127.0.0.4', preface);
  expect(await closedWithin(admitted, 1000)).toBe(false);
  expect(await metric('roster_grpc_connections_refused_total{reason="client-limit"}')).toBe('1');
  expect(await metric('roster_grpc_connections_refused_total{reason="agent-limit"}')).toBe('1');
  // A reload raises the agent's limit: the next connection is admitted, the open ones stay.
  writeLimits({ grpc_max_conns: 100, grpc_max_conns_per_client: 5, grpc_handshake_timeout: '60s' });
  expect((await client(agent).put('/v1/agent/reload')).status).toBe(200);
  const afterReload = await raw('127.0.0.5', preface);
  expect(await closedWithin(afterReload, 1000)).toBe(false);
  for (const s of [...held.slice(1), ...more, admitted, afterReload]) s.socket.destroy();
  await expect.poll(() => metric('roster_grpc_connections'), { timeout: 10_000 }).toBe('1');
});

test('a connection that sends no HTTP/2 preface within the handshake timeout is closed, and one that sends something else at once', async () => {
  writeLimits({ grpc_max_conns: 100, grpc_max_conns_per_client: 50, grpc_handshake_timeout: '1s' });
  expect((await client(agent).put('/v1/agent/reload')).status).toBe(200);
  // Fifty idle connections from one address: the limit closes none of them, the handshake timeout all.
  const idle = [];
  for (let i = 0; i < 50; i++) idle.push(await raw('127.0.0.6', ''));
  const http1 = await raw('127.0.0.7', 'GET / HTTP/1.1\r\nHost: x\r\n\r\n');
  expect(await closedWithin(http1, 10_000)).toBe(true);
  await Promise.all(idle.map((r) => r.closed));
  // Half a preface, then nothing: closed too.
  const half = await raw('127.0.0.7', preface.slice(0, 10));
  expect(await closedWithin(half, 10_000)).toBe(true);
  expect(await metric('roster_grpc_connections_refused_total{reason="handshake-timeout"}')).toBe('51');
  expect(await metric('roster_grpc_connections_refused_total{reason="not-http2"}')).toBe('1');
  // A real client is served as before.
  expect(await check()).toBe('SERVING');
});

test('bad connection limits in the config file stop the start with a clear error', async () => {
  const file = join(tempDataDir(), 'bad.json');
  writeFileSync(file, JSON.stringify({ limits: { grpc_handshake_timeout: 'soon' } }));
  await expect(startAgent({ args: ['--config-file', file] })).rejects.toThrow(/limits\.grpc_handshake_timeout: "soon" is not a positive duration/);
  writeFileSync(file, JSON.stringify({ limits: { grpc_max_conns_per_client: 0 } }));
  await expect(startAgent({ args: ['--config-file', file] })).rejects.toThrow(/limits\.grpc_max_conns_per_client/);
});
