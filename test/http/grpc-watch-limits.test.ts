// Goal: a client cannot hold an unbounded number of gRPC Watch calls open on a started agent (each holds
// a stream and its state for as long as the client keeps it). Past `limits.grpc_watch_max` open calls
// of the agent, or `limits.grpc_watch_max_per_client` of one client address, a Watch ends at once with
// RESOURCE_EXHAUSTED naming the limit; a call that ends frees its place; the calls already open keep
// working; a reload puts new bounds in force for the next calls.
import { writeFileSync } from 'node:fs';
import { join } from 'node:path';
import * as grpc from '@grpc/grpc-js';
import { service as healthService } from 'grpc-health-check';
import { afterAll, beforeAll, expect, test } from 'vitest';
import { client, startAgent, tempDataDir, type Agent } from '../support/agent.ts';

const Health = grpc.makeClientConstructor(healthService as grpc.ServiceDefinition, 'grpc.health.v1.Health');
type HealthClient = grpc.Client & { watch(req: { service: string }): grpc.ClientReadableStream<{ status: string }> };

let agent: Agent;
let configFile: string;
const clients: HealthClient[] = [];

const writeLimits = (limits: object) => writeFileSync(configFile, JSON.stringify({ limits }));

beforeAll(async () => {
  configFile = join(tempDataDir(), 'agent.json');
  writeLimits({ grpc_watch_max: 3, grpc_watch_max_per_client: 10 });
  agent = await startAgent({ args: ['--config-file', configFile] });
});

afterAll(async () => {
  for (const c of clients) c.close();
  await agent?.stop();
  agent?.cleanup();
});

/** A Watch on its own channel (its own connection): resolves once it has its first status, or how it ended. */
function watch(): Promise<{ call?: grpc.ClientReadableStream<{ status: string }>; code?: number; details?: string }> {
  const h = new Health(agent.grpc, grpc.credentials.createInsecure(), { 'grpc.use_local_subchannel_pool': 1 }) as unknown as HealthClient;
  clients.push(h);
  return new Promise((resolve) => {
    const call = h.watch({ service: '' });
    call.on('data', () => resolve({ call }));
    call.on('error', (err: grpc.ServiceError) => resolve({ code: err.code, details: err.details }));
  });
}

const watchers = async () => (await client(agent).get('/v1/agent/metrics?format=prometheus')).text.match(/^roster_grpc_watchers (\d+)$/m)?.[1];

test('Watch calls past the agent\'s bound or one client\'s are refused RESOURCE_EXHAUSTED; an ended call frees its place; a reload changes the bounds', async () => {
  const open = [await watch(), await watch(), await watch()];
  expect(open.map((w) => w.call !== undefined)).toEqual([true, true, true]);
  expect(await watch()).toEqual({ code: grpc.status.RESOURCE_EXHAUSTED, details: 'too many Watch calls: the agent has 3 open (limits.grpc_watch_max)' });
  expect(await watchers()).toBe('3');
  open[0]!.call!.cancel();
  await expect.poll(watchers, { timeout: 10_000 }).toBe('2');
  const again = await watch();
  expect(again.call).toBeDefined();
  // A reload: the agent may hold more, one client fewer than it has open. Open calls stay; the next is refused.
  writeLimits({ grpc_watch_max: 100, grpc_watch_max_per_client: 2 });
  expect((await client(agent).put('/v1/agent/reload')).status).toBe(200);
  expect(await watch()).toEqual({ code: grpc.status.RESOURCE_EXHAUSTED, details: 'too many Watch calls from 127.0.0.1: 2 open (limits.grpc_watch_max_per_client)' });
  expect(await watchers()).toBe('3');
  for (const w of [open[1]!, open[2]!]) w.call!.cancel();
  await expect.poll(watchers, { timeout: 10_000 }).toBe('1');
  expect((await watch()).call).toBeDefined();
});
