// Goal: a write the log cannot confirm is not held open for as long as that lasts. A node on a JetStream
// log whose nats-server hangs (SIGSTOP: its sockets stay open, nothing answers) answers a write after
// its write_timeout (2 s here) with the timed-out error, outcome unknown: code 1016 and 503 with
// `details.outcome` in the seed dialect, Consul's 500 "timed out enqueuing operation" in the Consul
// dialect. Once the server is back, the node takes writes again.
import { writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { afterAll, beforeAll, expect, test } from 'vitest';
import { startNatsServer, type NatsCluster } from '../../cluster/dev/nats-launcher.ts';
import { client, startAgent, tempDataDir, type Agent } from '../support/agent.ts';
import { until } from '../support/until.ts';

let nats: NatsCluster;
const agents: Agent[] = [];

beforeAll(async () => {
  nats = await startNatsServer();
}, 60_000);

afterAll(async () => {
  nats?.servers[0]!.resume();
  for (const a of agents) await a.stop().catch(() => undefined);
  for (const a of agents) a.cleanup();
  await nats?.shutdown();
});

async function start(dialect: string): Promise<Agent> {
  const configFile = join(tempDataDir(), 'agent.json');
  writeFileSync(configFile, JSON.stringify({ write_timeout: '2s' }));
  const agent = await startAgent({
    args: ['--nats', nats.urls[0]!, '--replicas', '1', '--gossip-listen', '127.0.0.1:0', '--dialect', dialect, '--config-file', configFile],
    readyTimeoutMs: 60_000,
  });
  agents.push(agent);
  return agent;
}

test('a write on a log that hangs is answered at the write timeout, outcome unknown, in both dialects', async () => {
  const [seed, consul] = [await start('seed'), await start('consul')];
  expect((await client(seed).put('/v1/kv/wt/before', 'v')).status).toBe(200);
  const server = nats.servers[0]!;
  await server.pause();
  try {
    const t0 = Date.now();
    const [s, c] = await Promise.all([client(seed).put('/v1/kv/wt/during', 'v'), client(consul).put('/v1/kv/wt/during-c', 'v')]);
    const tookMs = Date.now() - t0;
    expect(s.status).toBe(503);
    expect(s.json()).toEqual({
      code: 1016,
      message: 'the write was not confirmed within 2000 ms (write_timeout): it may still take effect; read it back before retrying',
      details: { timeoutMs: 2000, outcome: 'unknown' },
    });
    expect(s.headers.get('retry-after')).toBeNull();
    expect([c.status, c.text]).toEqual([500, 'timed out enqueuing operation']);
    // Answered at the timeout (plus the check's half-second period), not when the publish gives up (30 s).
    expect(tookMs).toBeGreaterThanOrEqual(2_000);
    expect(tookMs).toBeLessThan(10_000);
  } finally {
    server.resume();
  }
  await until('writes taken again', async () => ((await client(seed).put('/v1/kv/wt/after', 'v')).status === 200 ? true : undefined), 60_000);
  expect((await client(seed).get('/v1/kv/wt/after?raw')).text).toBe('v');
}, 120_000);
