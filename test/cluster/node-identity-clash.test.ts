// Goal: no two live nodes act under one identity. A node started under a live member's name stops with
// exit code 2 naming the node that holds the name, instead of running beside it (the two took the name
// from each other in the catalog, hundreds of registrations a second); the node that was there first keeps
// its name, its catalog registration and its place in every member list. A node started on a copy of a
// live node's data dir (a cloned machine: the same node-id file, under another node name or under its
// name too) takes nothing of that node's and stops with exit code 2 naming the file to remove; under
// another name it used to take the ID over at start as a rename would (the live node went from the catalog
// with its services, its sessions were invalidated and its locks released), under the same name it ran
// beside it as one node. A node renamed on its own data dir, whose old name no longer runs, still takes
// its old node over, and then registers its config file's services.
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
/** The first two nodes, started by the first test and used by the others. */
let a: Agent;
let b: Agent;

beforeAll(async () => {
  nats = await startNatsCluster();
  for (let k = 0; k < 3; k++) gossipPorts.push(await freePort());
}, 120_000);
afterAll(async () => {
  for (const x of agents) if (x.proc.exitCode === null && x.proc.signalCode === null) await x.stop().catch(() => undefined);
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
  }).then((x) => { agents.push(x); return x; }, (err: Error) => err.message);
}

/** Starts node `name` on gossip port 2, expecting it to stop with exit code 2; resolves with its output. */
async function startStopping(name: string, dataDir?: string): Promise<string> {
  const node = await start(name, 2, dataDir);
  if (typeof node === 'string') {
    expect(node).toMatch(/exited \(2\)/);
    return node;
  }
  const code = await new Promise<number | null | 'still running'>((resolve) => {
    if (node.proc.exitCode !== null) resolve(node.proc.exitCode);
    node.proc.once('exit', (c) => resolve(c));
    setTimeout(() => resolve('still running'), 60_000);
  });
  expect(code).toBe(2);
  return node.output();
}

/** A data dir holding `of`'s node-id file and cluster marker, as a cloned machine has them. */
function copyOf(of: Agent): string {
  const copy = tempDataDir();
  mkdirSync(copy, { recursive: true });
  for (const f of ['node-id', 'cluster']) copyFileSync(join(of.dataDir, f), join(copy, f));
  return copy;
}

interface CatalogNode { ID: string; Node: string; ModifyIndex: number }
const catalogNodes = async (agent: Agent) => (await call(agent.url, 'GET', '/v1/catalog/nodes')).json<CatalogNode[]>();
const catalogNode = async (agent: Agent, name: string) => (await catalogNodes(agent)).find((n) => n.Node === name);
const nodeId = async (agent: Agent) => (await call(agent.url, 'GET', '/v1/agent/self')).json<{ Config: { NodeID: string } }>().Config.NodeID;
const membersNamed = async (agent: Agent, name: string) => (await call(agent.url, 'GET', '/v1/agent/members'))
  .json<Array<{ Name: string; Status: number; Tags: { id: string } }>>().filter((m) => m.Name === name);
/** Creates a session on `a` and takes `key` with it. */
async function holdLock(key: string): Promise<string> {
  const session = (await call(a.url, 'PUT', '/v1/session/create', { Name: `holder-${key}` })).json<{ ID: string }>().ID;
  expect((await call(a.url, 'PUT', `/v1/kv/${key}?acquire=${session}`, 'a')).text).toBe('true');
  return session;
}
/** Seen through b: the session is there and still holds `key`. */
async function expectHeld(session: string, key: string): Promise<void> {
  expect((await call(b.url, 'GET', `/v1/session/info/${session}`)).json<Array<{ ID: string }>>().map((s) => s.ID)).toEqual([session]);
  expect((await call(b.url, 'GET', `/v1/kv/${key}`)).json<Array<{ Session?: string }>>()[0]!.Session).toBe(session);
}

test('a node started under a live member\'s name stops with exit code 2; the first keeps the name', async () => {
  a = await start('a', 0) as Agent;
  b = await start('b', 1) as Agent;
  const aId = await nodeId(a);
  await until('b hears a', async () => ((await membersNamed(b, 'a')).some((m) => m.Status === 1) ? true : undefined), 30_000);

  const output = await startStopping('a');
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
    expect(await membersNamed(view, 'a')).toEqual([expect.objectContaining({ Status: 1, Tags: expect.objectContaining({ id: aId }) })]);
  }
}, 180_000);

test('a node started on a copy of a live node\'s data dir takes nothing of it and stops with exit code 2', async () => {
  const aId = await nodeId(a);
  expect((await call(a.url, 'PUT', '/v1/agent/service/register', { Name: 'web', ID: 'web1', Port: 80 })).status).toBe(200);
  const session = await holdLock('leader');
  const aNode = (await catalogNode(b, 'a'))!;

  const copy = copyOf(a);
  const output = await startStopping('c', copy);
  expect(output).toContain(`another node of the cluster runs with this node's ID ${aId} under the name a and started first`);
  expect(output).toContain(`remove ${join(copy, 'node-id')} to give this node an ID of its own`);
  expect(output).not.toContain('that node is removed from the catalog');

  // Node a keeps its node, untouched, its service, its session and its lock; the copy never registered.
  await sleep(1_000);
  const nodes = await catalogNodes(b);
  expect(nodes.map((n) => [n.Node, n.ID])).toEqual([['a', aId], ['b', await nodeId(b)]]);
  expect(nodes.find((n) => n.Node === 'a')!.ModifyIndex).toBe(aNode.ModifyIndex);
  expect((await call(b.url, 'GET', '/v1/catalog/service/web')).json<Array<{ Node: string }>>().map((s) => s.Node)).toEqual(['a']);
  await expectHeld(session, 'leader');
  expect(a.output()).not.toContain('this node\'s ID is also held by another node');
}, 180_000);

test('a copy of a live node started under its name too (a cloned machine) stops with exit code 2; the node keeps everything', async () => {
  const session = await holdLock('twin-lock');
  const copy = copyOf(a);
  const output = await startStopping('a', copy);
  expect(output).toContain(`another process runs as this node (name a, node ID ${await nodeId(a)}) and started first`);
  expect(output).toContain(`give it its own node_name (--node-name) and remove ${join(copy, 'node-id')}`);
  expect(a.proc.exitCode).toBeNull();
  await expectHeld(session, 'twin-lock');
  expect(await membersNamed(b, 'a')).toEqual([expect.objectContaining({ Status: 1 })]);
}, 120_000);

test('a node restarted on its data dir under a new name, its old name no longer running, takes its old node over', async () => {
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
