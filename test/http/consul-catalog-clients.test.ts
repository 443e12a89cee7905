// Goal: the catalog answers what real Consul clients send it — Go's api package, the npm `consul` client, Patroni —
// as Consul does, in both dialects, through the HTTP API of a started agent: a deregistration carrying empty
// ServiceID/CheckID fields (Go sends them always).
import { describe, expect, test } from 'vitest';
import { client, expectError, withAgent } from '../support/agent.ts';

type Client = ReturnType<typeof client>;
const dialects = ['consul', 'seed'] as const;

async function registerNode(c: Client, body: Record<string, unknown>): Promise<void> {
  const r = await c.put('/v1/catalog/register', body);
  expect(r.status, r.text).toBe(200);
}

async function nodeNames(c: Client): Promise<string[]> {
  const r = await c.get('/v1/catalog/nodes');
  expect(r.status, r.text).toBe(200);
  return r.json<{ Node: string }[]>().map((n) => n.Node);
}

describe.each(dialects)('%s dialect', (dialect) => {
  let c: Client;
  withAgent((a) => { c = client(a); }, { args: dialect === 'consul' ? ['--dialect', 'consul'] : [] });

  describe('PUT /v1/catalog/deregister', () => {
    test('empty ServiceID and CheckID, as Go\'s api.CatalogDeregistration sends them, deregister the node', async () => {
      await registerNode(c, { Node: 'ext1', Address: '10.0.0.9' });
      expect(await nodeNames(c)).toContain('ext1');
      const r = await c.put('/v1/catalog/deregister', { Node: 'ext1', Datacenter: '', ServiceID: '', CheckID: '' });
      expect(r.status, r.text).toBe(200);
      expect(r.json()).toBe(true);
      expect(await nodeNames(c)).not.toContain('ext1');
    });

    test('an empty ServiceID beside a CheckID deregisters only that check', async () => {
      await registerNode(c, { Node: 'ext2', Address: '10.0.0.10', Checks: [{ CheckID: 'disk', Name: 'disk', Status: 'passing' }, { CheckID: 'mem', Name: 'mem', Status: 'passing' }] });
      const r = await c.put('/v1/catalog/deregister', { Node: 'ext2', ServiceID: '', CheckID: 'disk' });
      expect(r.status, r.text).toBe(200);
      const checks = await c.get('/v1/health/node/ext2');
      expect(checks.json<{ CheckID: string }[]>().map((k) => k.CheckID)).toEqual(['mem']);
      expect(await nodeNames(c)).toContain('ext2');
    });

    test('a ServiceID that names a service is still refused, changing nothing', async () => {
      await registerNode(c, { Node: 'ext3', Address: '10.0.0.11' });
      const r = await c.put('/v1/catalog/deregister', { Node: 'ext3', ServiceID: 'redis1' });
      if (dialect === 'seed') expectError(r, 400, 1009);
      else expect([r.status, r.text]).toEqual([400, 'ServiceID: services are deregistered through /v1/agent/service/deregister']);
      expect(await nodeNames(c)).toContain('ext3');
    });
  });
});
