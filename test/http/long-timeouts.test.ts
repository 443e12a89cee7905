// Goal: a configured timeout longer than Node's 32-bit timer limit (2^31-1 ms, about 24.8 days) is waited
// out in full, as docs/reference.md ("Durations") promises, not fired after 1 ms. A started agent with
// `limits.grpc_handshake_timeout` and `limits.http_write_idle_timeout` of 720h keeps a gRPC connection
// that has not sent HTTP/2's preface yet open, serves real gRPC health calls on new connections, and
// writes a large answer whole to a client that starts reading it late; its log has no TimeoutOverflowWarning.
import { connect, type Socket } from 'node:net';
import * as grpc from '@grpc/grpc-js';
import { service as healthService } from 'grpc-health-check';
import { expect, test } from 'vitest';
import { sleep } from '../support/agent.ts';
import { useBigPrefixAgent } from '../support/big-prefix.ts';

const Health = grpc.makeClientConstructor(healthService as grpc.ServiceDefinition, 'grpc.health.v1.Health');
type HealthClient = grpc.Client & { check(req: { service: string }, opts: grpc.CallOptions, cb: (err: grpc.ServiceError | null, res?: { status: string }) => void): void };

/** 8 values of 500,000 bytes: the prefix's answer is about 5.3 MB, more than loopback's socket buffers take at once. */
const keys = 8;
const value = 'v'.repeat(500_000);
const big = useBigPrefixAgent({ keys, value, limits: { grpc_handshake_timeout: '720h', http_write_idle_timeout: '720h' } });

const grpcPort = () => Number(big.agent.grpc.slice(big.agent.grpc.lastIndexOf(':') + 1));

/** A raw connection to the gRPC port that sends nothing; resolves whether the agent closed it within `ms`. */
async function closedWhileSilent(ms: number): Promise<boolean> {
  const s = connect(grpcPort(), '127.0.0.1');
  big.held.push(s);
  s.on('error', () => {});
  let closed = false;
  s.once('close', () => { closed = true; });
  await new Promise<void>((res) => s.once('connect', () => res()));
  await sleep(ms);
  return closed;
}

function check(): Promise<string> {
  const h = new Health(big.agent.grpc, grpc.credentials.createInsecure(), { 'grpc.use_local_subchannel_pool': 1 }) as unknown as HealthClient;
  return new Promise<string>((resolve) => h.check({ service: '' }, { deadline: Date.now() + 5000 }, (err, res) => resolve(err ? `error ${err.code}` : res!.status)))
    .finally(() => h.close());
}

test('a gRPC connection without its preface stays open, and health calls on new connections are served', async () => {
  expect(await closedWhileSilent(1500)).toBe(false);
  const results: string[] = [];
  for (let i = 0; i < 10; i++) results.push(await check());
  expect(results).toEqual(Array(10).fill('SERVING'));
});

test('a large answer is written whole to a client that starts reading it 2 s late', async () => {
  const { port } = new URL(big.agent.url);
  const s: Socket = connect({ port: Number(port), host: '127.0.0.1' });
  big.held.push(s);
  s.on('error', () => {});
  s.pause();
  await new Promise<void>((res) => s.once('connect', () => res()));
  s.write('GET /v1/kv/big/?recurse HTTP/1.1\r\nHost: localhost\r\nConnection: close\r\n\r\n');
  await sleep(2000);
  const chunks: Buffer[] = [];
  s.on('data', (d: Buffer) => chunks.push(d));
  s.resume();
  await new Promise<void>((res) => s.once('close', () => res()));
  const raw = Buffer.concat(chunks);
  const headEnd = raw.indexOf('\r\n\r\n');
  const length = Number(/content-length: (\d+)/i.exec(raw.subarray(0, headEnd).toString())?.[1]);
  expect(length).toBeGreaterThan(keys * value.length);
  expect(raw.length - headEnd - 4).toBe(length);
  const entries = JSON.parse(raw.subarray(headEnd + 4).toString()) as { Key: string }[];
  expect(entries).toHaveLength(keys);
}, 30_000);

test('the agent logged no TimeoutOverflowWarning', () => {
  expect(big.agent.output()).not.toContain('TimeoutOverflowWarning');
});
