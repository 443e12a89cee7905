// Goal: PUT /v1/agent/leave on a single node: answered 200 with an empty body, then the agent stops with
// exit code 0, and every write it acknowledged is there after a restart on the same data dir. And
// force-leave of a name no member has: 404 (seed) with the node named, 500 with Consul's text (consul).
import { once } from 'node:events';
import { rmSync } from 'node:fs';
import { describe, expect, test } from 'vitest';
import { client, onFreshAgent, startAgent, tempDataDir } from '../support/agent.ts';

describe('leave on a single node', () => {
  test('answers 200, exits 0, keeps its acknowledged writes', async () => {
    const dataDir = tempDataDir();
    try {
      const agent = await startAgent({ dataDir });
      const c = client(agent);
      for (let i = 0; i < 50; i++) expect((await c.put(`/v1/kv/left/${i}`, `v${i}`)).status).toBe(200);
      const exited = once(agent.proc, 'exit');
      const r = await c.put('/v1/agent/leave');
      expect(r.status).toBe(200);
      expect(r.text).toBe('');
      const [code] = await exited;
      expect(code).toBe(0);
      expect(agent.output()).toMatch(/"signal":"leave"/);

      const again = await startAgent({ dataDir });
      try {
        const keys = (await client(again).get('/v1/kv/left/?keys')).json<string[]>();
        expect(keys).toHaveLength(50);
        expect((await client(again).get('/v1/kv/left/49?raw')).text).toBe('v49');
      } finally {
        await again.stop();
      }
    } finally {
      rmSync(dataDir, { recursive: true, force: true });
    }
  }, 60_000);

  test('force-leave of an unknown node: 404 naming it (consul: 500 with Consul\'s text); of the agent itself (alive): 200, nothing changes', async () => {
    await onFreshAgent(() => startAgent({ args: ['--dialect', 'consul'] }), async (c) => {
      const r = await c.put('/v1/agent/force-leave/nobody');
      expect(r.status).toBe(500);
      expect(r.text).toBe('agent: No node found with name \'nobody\'');
    });
    const agent = await startAgent();
    try {
      const c = client(agent);
      const r = await c.put('/v1/agent/force-leave/nobody');
      expect(r.status).toBe(404);
      expect(r.json().message).toMatch(/no member named "nobody"/);
      expect((await c.put('/v1/agent/force-leave/node1')).status).toBe(200);
      const members = (await c.get('/v1/agent/members')).json<{ Name: string; Status: number; Port: number; Tags: Record<string, string> }[]>();
      expect(members.map((m) => [m.Name, m.Status])).toEqual([['node1', 1]]);
      // Alone, the node's entry names the ports its servers listen on, as a cluster node's does.
      expect(members[0]!.Tags.grpc).toBe(agent.grpc);
      expect(`${members[0]!.Port}`).toBe(new URL(agent.url).port);
    } finally {
      await agent.stop();
      agent.cleanup();
    }
  }, 30_000);
});
