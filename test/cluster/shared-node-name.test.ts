// Goal: two agents given one node name on one log, whose gossip does not join them (a careless operator's
// copied config), do not fill the log. Each writes its own ID over the other's node; a started pair of
// agents on one nats-server does so at most once a second each (the log's index grows by a few entries a
// second, not thousands), and each says in its log what is wrong and what to do.
import { join } from 'node:path';
import { writeFileSync } from 'node:fs';
import { afterAll, beforeAll, expect, test } from 'vitest';
import { startNatsServer, type NatsCluster } from '../../cluster/dev/nats-launcher.ts';
import { client, sleep, startAgent, tempDataDir, type Agent } from '../support/agent.ts';

let nats: NatsCluster;
const agents: Agent[] = [];

beforeAll(async () => { nats = await startNatsServer(); }, 60_000);
afterAll(async () => {
  for (const a of agents) await a.stop().catch(() => undefined);
  for (const a of agents) a.cleanup();
  await nats?.shutdown();
});

async function start(): Promise<Agent> {
  const configFile = join(tempDataDir(), 'agent.json');
  writeFileSync(configFile, JSON.stringify({}));
  // The harness names every agent node1.
  const agent = await startAgent({
    args: ['--nats', nats.urls[0]!, '--replicas', '1', '--gossip-listen', '127.0.0.1:0', '--config-file', configFile], readyTimeoutMs: 60_000,
  });
  agents.push(agent);
  return agent;
}

const indexOf = async (agent: Agent) => Number((await client(agent).get('/v1/catalog/nodes')).headers.get('x-consul-index'));

test('two agents of one node name on one log register their node again at most once a second each, and warn', async () => {
  const [a, b] = [await start(), await start()];
  await sleep(2_000);
  const before = await indexOf(a);
  await sleep(5_000);
  const grown = (await indexOf(a)) - before;
  // Once a second each for 5 s, with slack for the wake-ups: ten or so. Without the spacing: thousands.
  expect(grown).toBeLessThan(40);
  expect((await client(a).put('/v1/kv/shared/k', 'v')).status).toBe(200);
  const warning = /another agent registers this node name with its own ID on the same log: give each agent its own node name/;
  await expect.poll(() => warning.test(a.output()) || warning.test(b.output()), { timeout: 10_000 }).toBe(true);
}, 90_000);
