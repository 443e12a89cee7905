// Goal: a gRPC client that gives up on its Watch calls and exits leaves nothing counted on a started
// agent. A client process opens Watch calls by the dozen on one channel and cancels them at once, some
// with deadlines of 0-2 ms (enough resets that the agent's HTTP/2 layer sends it GOAWAY and stops reading
// that connection), then exits. Afterwards the agent's open Watch calls (`roster_grpc_watchers`) come
// back to 0, its open connections (`roster_grpc_connections`) too within the keepalive's bound (a PING
// after 10 s, 5 s for its answer), and a new client from the same address is served: `Check ""` and as
// many Watch calls as limits.grpc_watch_max_per_client allows.
import { spawn } from 'node:child_process';
import { writeFileSync } from 'node:fs';
import { join } from 'node:path';
import * as grpc from '@grpc/grpc-js';
import { service as healthService } from 'grpc-health-check';
import { afterAll, beforeAll, expect, test } from 'vitest';
import { agentNode, client, repoRoot, sleep, startAgent, tempDataDir, type Agent } from '../support/agent.ts';

const Health = grpc.makeClientConstructor(healthService as grpc.ServiceDefinition, 'grpc.health.v1.Health');
type HealthClient = grpc.Client & {
  check(req: { service: string }, opts: grpc.CallOptions, cb: (err: grpc.ServiceError | null, res?: { status: string }) => void): void;
  watch(req: { service: string }): grpc.ClientReadableStream<{ status: string }>;
};

/** The abandoning client: `rounds` rounds of 60 Watch calls opened and cancelled on one channel, then exit. */
const abandoner = `
const grpc = require('@grpc/grpc-js');
const { service } = require('grpc-health-check');
const Health = grpc.makeClientConstructor(service, 'grpc.health.v1.Health');
const c = new Health(process.argv[1], grpc.credentials.createInsecure());
const rounds = Number(process.argv[2]);
(async () => {
  for (let r = 0; r < rounds; r++) {
    const calls = [];
    for (let i = 0; i < 60; i++) {
      const deadline = i % 5 === 0 ? Date.now() + (i % 3) : Infinity;
      const call = c.watch({ service: 'svc' + (i % 7) }, { deadline });
      call.on('error', () => {});
      call.on('data', () => {});
      calls.push(call);
      if (i % 3 === 0) call.cancel();
    }
    await new Promise((res) => setImmediate(res));
    for (const call of calls) call.cancel();
    await new Promise((res) => setTimeout(res, r % 2 ? 0 : 20));
  }
  process.exit(0);
})();
`;

let agent: Agent;
const channels: HealthClient[] = [];

beforeAll(async () => {
  const configFile = join(tempDataDir(), 'agent.json');
  writeFileSync(configFile, JSON.stringify({ limits: { grpc_max_conns_per_client: 12 } }));
  agent = await startAgent({ args: ['--config-file', configFile] });
});

afterAll(async () => {
  for (const c of channels) c.close();
  await agent?.stop();
  agent?.cleanup();
});

async function metric(name: string): Promise<number> {
  const text = (await client(agent).get('/v1/agent/metrics?format=prometheus')).text;
  return Number(text.match(new RegExp(`^${name} (\\d+)$`, 'm'))?.[1]);
}

/** Runs the abandoning client to its exit (it is ended by its own pid if it overstays). */
async function abandon(rounds: number): Promise<void> {
  const child = spawn(agentNode, ['-e', abandoner, agent.grpc, String(rounds)], { cwd: repoRoot, stdio: 'ignore' });
  const exited = new Promise<number | null>((res) => child.once('exit', (code) => res(code)));
  const overstay = setTimeout(() => child.kill('SIGKILL'), 30_000);
  expect(await exited).toBe(0);
  clearTimeout(overstay);
}

/** The metric's value once it reads `want`, polled until `ms` have passed (then its last value). */
async function settles(name: string, want: number, ms: number): Promise<number> {
  const until = Date.now() + ms;
  let value = await metric(name);
  while (value !== want && Date.now() < until) {
    await sleep(250);
    value = await metric(name);
  }
  return value;
}

function fresh(): HealthClient {
  const h = new Health(agent.grpc, grpc.credentials.createInsecure(), { 'grpc.use_local_subchannel_pool': 1 }) as unknown as HealthClient;
  channels.push(h);
  return h;
}

test('a client that cancels its Watch calls and exits leaves no call or connection counted; its address is served again', async () => {
  for (let run = 0; run < 3; run++) await abandon(40);
  // Every Watch call of the gone client is forgotten at once; its connections within the keepalive's bound.
  expect(await settles('roster_grpc_watchers', 0, 3000)).toBe(0);
  expect(await settles('roster_grpc_connections', 0, 25_000)).toBe(0);

  const h = fresh();
  const check = await new Promise<string>((resolve) =>
    h.check({ service: '' }, { deadline: Date.now() + 5000 }, (err, res) => resolve(err ? `error ${err.code} ${err.details}` : res!.status)));
  expect(check).toBe('SERVING');
  // The whole per-client Watch budget (64 by default) is the new client's.
  const outcomes = await Promise.all(Array.from({ length: 64 }, () => new Promise<string>((resolve) => {
    const call = h.watch({ service: 'web' });
    call.once('data', (m: { status: string }) => resolve(m.status));
    call.once('error', (e: grpc.ServiceError) => resolve(`error ${e.code} ${e.details}`));
  })));
  expect(outcomes.filter((o) => o !== 'SERVICE_UNKNOWN')).toEqual([]);
  expect(await metric('roster_grpc_watchers')).toBe(64);
}, 90_000);
