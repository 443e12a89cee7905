// Goal: a node started on a copy of a live node's data dir (a cloned machine: the same node-id file under
// another node name, or under its name too) takes nothing of that node's and stops with exit code 2 naming
// the file to remove.
// It used to take the ID over at start as a rename would: the live node went from the catalog with its
// services, and its sessions were invalidated, releasing its locks. A node renamed on its own data dir,
// whose old name no longer runs, still takes its old node over, and then registers its config file's services.
import { copyFileSync, mkdirSync, rmSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
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

/** Starts node `name` on gossip port k with the other ports as seeds; resolves once it is ready, or with the error when it exited first. */
async function start(name: string, k: number, dataDir = tempDataDir(), extra: string[] = []): Promise<Agent | string> {
  dirs.push(dataDir);
  const seeds = gossipPorts.filter((_, j) => j !== k).flatMap((p) => ['--join', `127.0.0.1:${p}`]);
  return startAgent({
    bare: true, dataDir, readyTimeoutMs: 60_000,
    args: ['--http-port', '0', '--grpc-port', '0', '--data-dir', dataDir, '--node-name', name, '--nats', nats.urls.join(','),
      '--gossip-listen', `127.0.0.1:${gossipPorts[k]}`, ...seeds, ...extra],
  }).then((a) => { agents.push(a); return a; }, (err: Error) => err.message);
}

/** Resolves with the agent's exit code, or 'still running' after `ms`. */
const exitOf = (agent: Agent, ms: number) => new Promise<number | null | 'still running'>((resolve) => {
  if (agent.proc.exitCode !== null) resolve(agent.proc.exitCode);
  agent.proc.once('exit', (code) => resolve(code));
  setTimeout(() => resolve('still running'), ms);
});

interface CatalogNode { ID: string; Node: string; ModifyIndex: number }
const catalogNodes = async (agent: Agent) => (await call(agent.url, 'GET', '/v1/catalog/nodes')).json<CatalogNode[]>();
const nodeId = async (agent: Agent) => (await call(agent.url, 'GET', '/v1/agent/self')).json<{ Config: { NodeID: string } }>().Config.NodeID;
const hears = (agent: Agent, name: string) => until(`${name} heard`, async () => ((await call(agent.url, 'GET', '/v1/agent/members'))
  .json<Array<{ Name: string; Status: number }>>().some((m) => m.Name === name && m.Status === 1) ? true : undefined), 30_000);

test('a node started on a copy of a live node\'s data dir takes nothing of it and stops with exit code 2', async () => {
  const a = await start('a', 0) as Agent;
  const b = await start('b', 1) as Agent;
  await hears(b, 'a');
  const aId = await nodeId(a);
  expect((await call(a.url, 'PUT', '/v1/agent/service/register', { Name: 'web', ID: 'web1', Port: 80 })).status).toBe(200);
  const session = (await call(a.url, 'PUT', '/v1/session/create', { Name: 'holder' })).json<{ ID: string }>().ID;
  expect((await call(a.url, 'PUT', `/v1/kv/leader?acquire=${session}`, 'a')).text).toBe('true');
  const aNode = (await catalogNodes(b)).find((n) => n.Node === 'a')!;

  // The copy: the node-id file and the cluster marker, as a cloned machine has them.
  const copy = tempDataDir();
  mkdirSync(copy, { recursive: true });
  for (const f of ['node-id', 'cluster']) copyFileSync(join(a.dataDir, f), join(copy, f));
  const clone = await start('c', 2, copy);
  const code = typeof clone === 'string' ? undefined : await exitOf(clone, 60_000);
  const output = typeof clone === 'string' ? clone : clone.output();
  if (typeof clone === 'string') expect(clone).toMatch(/exited \(2\)/);
  else expect(code).toBe(2);
  expect(output).toContain(`another node of the cluster runs with this node's ID ${aId} under the name a and started first`);
  expect(output).toContain(`remove ${join(copy, 'node-id')} to give this node an ID of its own`);
  expect(output).not.toContain('that node is removed from the catalog');

  // Node a keeps its node, untouched, its service, its session and its lock; the copy never registered.
  await sleep(1_000);
  const nodes = await catalogNodes(b);
  expect(nodes.map((n) => [n.Node, n.ID])).toEqual([['a', aId], ['b', await nodeId(b)]]);
  expect(nodes.find((n) => n.Node === 'a')!.ModifyIndex).toBe(aNode.ModifyIndex);
  expect((await call(b.url, 'GET', '/v1/catalog/service/web')).json<Array<{ Node: string }>>().map((s) => s.Node)).toEqual(['a']);
  expect((await call(b.url, 'GET', `/v1/session/info/${session}`)).json<Array<{ ID: string }>>().map((s) => s.ID)).toEqual([session]);
  expect((await call(b.url, 'GET', '/v1/kv/leader')).json<Array<{ Session?: string }>>()[0]!.Session).toBe(session);
  expect(a.output()).not.toContain('this node\'s ID is also held by another node');
}, 180_000);

test('a copy of a live node started under its name too (a cloned machine) stops with exit code 2; the node keeps everything', async () => {
  const a = agents.find((x) => x.proc.exitCode === null && /"node":"a"/.test(x.output()))!;
  const b = agents.find((x) => x.proc.exitCode === null && /"node":"b"/.test(x.output()))!;
  const session = (await call(a.url, 'PUT', '/v1/session/create', { Name: 'twin-holder' })).json<{ ID: string }>().ID;
  expect((await call(a.url, 'PUT', `/v1/kv/twin-lock?acquire=${session}`, 'a')).text).toBe('true');
  const copy = tempDataDir();
  mkdirSync(copy, { recursive: true });
  for (const f of ['node-id', 'cluster']) copyFileSync(join(a.dataDir, f), join(copy, f));
  const twin = await start('a', 2, copy);
  const code = typeof twin === 'string' ? undefined : await exitOf(twin, 60_000);
  const output = typeof twin === 'string' ? twin : twin.output();
  if (typeof twin === 'string') expect(twin).toMatch(/exited \(2\)/);
  else expect(code).toBe(2);
  expect(output).toContain(`another process runs as this node (name a, node ID ${await nodeId(a)}) and started first`);
  expect(output).toContain(`give it its own node_name (--node-name) and remove ${join(copy, 'node-id')}`);
  expect(a.proc.exitCode).toBeNull();
  expect((await call(b.url, 'GET', `/v1/session/info/${session}`)).json<Array<{ ID: string }>>().map((x) => x.ID)).toEqual([session]);
  expect((await call(b.url, 'GET', '/v1/kv/twin-lock')).json<Array<{ Session?: string }>>()[0]!.Session).toBe(session);
  const members = (await call(b.url, 'GET', '/v1/agent/members')).json<Array<{ Name: string; Status: number }>>();
  expect(members.filter((m) => m.Name === 'a')).toEqual([expect.objectContaining({ Status: 1 })]);
}, 120_000);

test('a node restarted on its data dir under a new name, its old name no longer running, takes its old node over', async () => {
  const b = agents.find((x) => x.proc.exitCode === null && /"node":"b"/.test(x.output()))!;
  const a = agents.find((x) => x.proc.exitCode === null && /"node":"a"/.test(x.output()))!;
  const aId = await nodeId(a);
  await a.stop();
  const configFile = join(a.dataDir, '..', `roster-renamed-${process.pid}.json`);
  writeFileSync(configFile, JSON.stringify({ services: [{ name: 'from-config', id: 'from-config-1', port: 9000 }] }));
  dirs.push(configFile);
  const renamed = await start('a2', 0, a.dataDir, ['--config-file', configFile]) as Agent;
  expect(await nodeId(renamed)).toBe(aId);
  const nodes = await until('a2 registered in place of a', async () => {
    const all = await catalogNodes(b);
    return all.some((n) => n.Node === 'a2') ? all : undefined;
  }, 60_000);
  expect(nodes.map((n) => [n.Node, n.ID])).toEqual([['a2', aId], ['b', await nodeId(b)]]);
  expect(renamed.output()).toContain('this node\'s ID was held by another node: that node is removed from the catalog');
  // The config file's service, registered once the node is.
  await until('the config file\'s service', async () => ((await call(b.url, 'GET', '/v1/catalog/service/from-config'))
    .json<Array<{ Node: string }>>().map((s) => s.Node).join() === 'a2' ? true : undefined), 20_000);
}, 120_000);
