// Goal: a node started under the name of a live member (a configuration copied with its node_name) stops
// with exit code 2 naming the node that holds the name, instead of running beside it: the two took the
// name from each other in the catalog for as long as both ran, hundreds of registrations a second. The
// node that was there first keeps its name, its catalog registration and its place in every member list.
import { rmSync } from 'node:fs';
import { afterAll, beforeAll, expect, test } from 'vitest';
import { freePort, startNatsCluster, type NatsCluster } from '../../cluster/dev/nats-launcher.ts';
import { call, sleep, startAgent, tempDataDir, type Agent } from '../support/agent.ts';
import { until } from '../support/until.ts';

let nats: NatsCluster;
const agents: Agent[] = [];
const dirs: string[] = [];
const gossipPorts: number[] = [];

beforeAll(async () => {
  nats = await startNatsCluster();
  for (let k = 0; k < 3; k++) gossipPorts.push(await freePort());
}, 120_000);
afterAll(async () => {
  for (const a of agents) if (a.proc.exitCode === null && a.proc.signalCode === null) await a.stop().catch(() => undefined);
  await nats?.shutdown();
  for (const d of dirs) rmSync(d, { recursive: true, force: true });
});

/** Starts node `name` on gossip port k with the other ports as seeds; resolves once it is ready or has exited. */
async function start(name: string, k: number): Promise<Agent | string> {
  const dataDir = tempDataDir();
  dirs.push(dataDir);
  const seeds = gossipPorts.filter((_, j) => j !== k).flatMap((p) => ['--join', `127.0.0.1:${p}`]);
  return startAgent({
    bare: true, dataDir, readyTimeoutMs: 60_000,
    args: ['--http-port', '0', '--grpc-port', '0', '--data-dir', dataDir, '--node-name', name, '--nats', nats.urls.join(','),
      '--gossip-listen', `127.0.0.1:${gossipPorts[k]}`, ...seeds],
  }).then((a) => { agents.push(a); return a; }, (err: Error) => err.message);
}

interface CatalogNode { ID: string; Node: string; ModifyIndex: number }
const catalogNode = async (agent: Agent, name: string) =>
  (await call(agent.url, 'GET', '/v1/catalog/nodes')).json<CatalogNode[]>().find((n) => n.Node === name);
const nodeId = async (agent: Agent) => (await call(agent.url, 'GET', '/v1/agent/self')).json<{ Config: { NodeID: string } }>().Config.NodeID;

test('a node started under a live member\'s name stops with exit code 2; the first keeps the name', async () => {
  const a = await start('a', 0) as Agent;
  const b = await start('b', 1) as Agent;
  const aId = await nodeId(a);
  await until('b hears a', async () => ((await call(b.url, 'GET', '/v1/agent/members')).json<Array<{ Name: string; Status: number }>>()
    .some((m) => m.Name === 'a' && m.Status === 1) ? true : undefined), 30_000);

  const twin = await start('a', 2);
  const exitCode = typeof twin === 'string' ? undefined : await new Promise<number | null | 'still running'>((resolve) => {
    if (twin.proc.exitCode !== null) resolve(twin.proc.exitCode);
    twin.proc.once('exit', (code) => resolve(code));
    setTimeout(() => resolve('still running'), 30_000);
  });
  const output = typeof twin === 'string' ? twin : twin.output();
  if (typeof twin === 'string') expect(twin).toMatch(/exited \(2\)/);
  else expect(exitCode).toBe(2);
  expect(output).toContain('another node of the cluster runs under this node name and started first');
  expect(output).toContain(`node ID ${aId}`);
  expect(output).toContain('give each node its own node_name');

  // The first node holds the name in the catalog, and it stays put: no registrations in turn.
  const held = await until('a registered under its own ID', async () => {
    const n = await catalogNode(b, 'a');
    return n?.ID === aId ? n : undefined;
  });
  await sleep(3_000);
  const after = await catalogNode(b, 'a');
  expect(after?.ID).toBe(aId);
  expect(after?.ModifyIndex).toBe(held.ModifyIndex);
  for (const view of [a, b]) {
    const members = (await call(view.url, 'GET', '/v1/agent/members')).json<Array<{ Name: string; Status: number; Tags: { id: string } }>>();
    expect(members.filter((m) => m.Name === 'a')).toEqual([expect.objectContaining({ Status: 1, Tags: expect.objectContaining({ id: aId }) })]);
  }
}, 180_000);
