// Goal: a node's TaggedAddresses given to PUT /v1/catalog/register are what the catalog and health answers
// show, on a started agent, in both dialects: stored as given (not replaced by the node's address), kept
// across a restart and through a snapshot saved and restored, cleared by a registration without them (a
// registration replaces the node's fields, as Consul's does). A node registered without them shows its
// address as lan and wan. TaggedAddresses that are not an object of strings are refused and change nothing.
import { rmSync } from 'node:fs';
import { afterAll, beforeAll, describe, expect, test } from 'vitest';
import { call, startAgent, tempDataDir, type Agent } from '../support/agent.ts';

const dataDir = tempDataDir();
let seed: Agent;
let consul: Agent;

beforeAll(async () => {
  [seed, consul] = await Promise.all([startAgent({ dataDir }), startAgent({ args: ['--dialect', 'consul'] })]);
});
afterAll(async () => {
  for (const a of [seed, consul]) { await a?.stop(); a?.cleanup(); }
  rmSync(dataDir, { recursive: true, force: true });
});

const tagged = { lan: '10.0.0.9', wan: '203.0.113.9', wan_ipv4: '203.0.113.9' };
const nodeOf = async (agent: Agent, name: string) => (await call(agent.url, 'GET', `/v1/catalog/node/${name}`)).json<{ Node: { TaggedAddresses: Record<string, string> } } | null>();
const listed = async (agent: Agent, name: string) =>
  (await call(agent.url, 'GET', '/v1/catalog/nodes')).json<{ Node: string; TaggedAddresses: Record<string, string> }[]>().find((n) => n.Node === name);

describe('node TaggedAddresses', () => {
  test.each(['seed', 'consul'] as const)('stored and shown as given, cleared by a registration without them (%s dialect)', async (dialect) => {
    const agent = dialect === 'seed' ? seed : consul;
    const register = (body: object) => call(agent.url, 'PUT', '/v1/catalog/register', body);
    expect((await register({ Node: 'edge-1', Address: '10.0.0.9', TaggedAddresses: tagged })).status).toBe(200);
    expect((await nodeOf(agent, 'edge-1'))!.Node.TaggedAddresses).toEqual(tagged);
    expect((await listed(agent, 'edge-1'))!.TaggedAddresses).toEqual(tagged);

    expect((await register({ Node: 'edge-1', Address: '10.0.0.9' })).status).toBe(200);
    expect((await nodeOf(agent, 'edge-1'))!.Node.TaggedAddresses).toEqual({ lan: '10.0.0.9', lan_ipv4: '10.0.0.9', wan: '10.0.0.9', wan_ipv4: '10.0.0.9' });
  });

  test('the agent\'s own node shows them in health answers too', async () => {
    const self = (await call(seed.url, 'GET', '/v1/agent/self')).json<{ Config: { NodeName: string; NodeID: string } }>().Config;
    const address = (await nodeOf(seed, self.NodeName))! as unknown as { Node: { Address: string } };
    expect((await call(seed.url, 'PUT', '/v1/agent/service/register', { Name: 'api', ID: 'api', Port: 80 })).status).toBe(200);
    const mine = { lan: address.Node.Address, wan: '198.51.100.7' };
    expect((await call(seed.url, 'PUT', '/v1/catalog/register', { Node: self.NodeName, ID: self.NodeID, Address: address.Node.Address, TaggedAddresses: mine })).status).toBe(200);
    const entries = (await call(seed.url, 'GET', '/v1/health/service/api')).json<{ Node: { TaggedAddresses: Record<string, string> } }[]>();
    expect(entries[0]!.Node.TaggedAddresses).toEqual(mine);
    const instances = (await call(seed.url, 'GET', '/v1/catalog/service/api')).json<{ TaggedAddresses: Record<string, string> }[]>();
    expect(instances[0]!.TaggedAddresses).toEqual(mine);
  });

  test('anything but an object of strings is refused and changes nothing', async () => {
    const before = await nodeOf(seed, 'edge-2');
    for (const bad of [{ wan: 5 }, ['1.2.3.4'], 'wan=1.2.3.4']) {
      const r = await call(seed.url, 'PUT', '/v1/catalog/register', { Node: 'edge-2', Address: '10.0.0.10', TaggedAddresses: bad });
      expect(r.status).toBe(400);
      expect(r.json<{ code: number; details: Record<string, string[]> }>()).toMatchObject({ code: 1009, details: { TaggedAddresses: ['Type:must be an object of strings'] } });
    }
    expect(await nodeOf(seed, 'edge-2')).toEqual(before);
    const r = await call(consul.url, 'PUT', '/v1/catalog/register', { Node: 'edge-2', Address: '10.0.0.10', TaggedAddresses: { wan: 5 } });
    expect(r.status).toBeGreaterThanOrEqual(400);
    expect(await nodeOf(consul, 'edge-2')).toBeNull();
  });

  test('kept across a restart and through a snapshot saved and restored', async () => {
    expect((await call(seed.url, 'PUT', '/v1/catalog/register', { Node: 'edge-3', Address: '10.0.0.11', TaggedAddresses: tagged })).status).toBe(200);
    const saved = await fetch(`${seed.url}/v1/snapshot`);
    expect(saved.status).toBe(200);
    const file = Buffer.from(await saved.arrayBuffer());
    expect((await call(seed.url, 'PUT', '/v1/catalog/register', { Node: 'edge-3', Address: '10.0.0.11' })).status).toBe(200);
    expect((await call(seed.url, 'PUT', '/v1/snapshot', file, { 'content-type': 'application/octet-stream' })).status).toBe(200);
    expect((await nodeOf(seed, 'edge-3'))!.Node.TaggedAddresses).toEqual(tagged);
    await seed.stop();
    seed = await startAgent({ dataDir });
    expect((await nodeOf(seed, 'edge-3'))!.Node.TaggedAddresses).toEqual(tagged);
  });
});
