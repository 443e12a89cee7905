// Goal: maintenance, force-leave and leave in a three-node cluster, as users run them. Node and service
// maintenance set on one node show as the critical `_node_maintenance` / `_service_maintenance:<id>` checks
// on every node, and go away everywhere when ended. `PUT /v1/agent/force-leave/<node>`
// on a killed (failed) member moves it to left at once, at the other members too (told through gossip).
// Then `PUT /v1/agent/leave` on one node: it exits 0, the other marks it left (not failed) at once, well
// within the suspicion timeout, and the TTL sessions whose timers it owned still expire, their timers now
// owned by the remaining node.
import { once } from 'node:events';
import { writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, test } from 'vitest';
import { ownerOf } from '../../src/runtime/ownership.ts';
import { client, tempDataDir } from '../support/agent.ts';
import { TestCluster } from '../support/cluster-node.ts';
import { until } from '../support/until.ts';

/** Long enough that a member marked left before it passes was told, not suspected. */
const suspicionMs = 8_000;
const names = ['n1', 'n2', 'n3'];

let configFile: string;
const cluster = new TestCluster(names, () => ['--session-ttl-min', '1s', '--config-file', configFile]);
const { nodes } = cluster;

const startNode = (name: string) => cluster.start(name);

const node = (name: string) => nodes.get(name)!;

/** The status number of `member` in `viewer`'s /v1/agent/members (1 alive, 3 left, 4 failed). */
async function statusOf(viewer: string, member: string): Promise<number | undefined> {
  const members = (await client(node(viewer)).get('/v1/agent/members')).json<{ Name: string; Status: number }[]>();
  return members.find((m) => m.Name === member)?.Status;
}

beforeAll(async () => {
  await cluster.prepare();
  configFile = join(tempDataDir(), 'agent.json');
  writeFileSync(configFile, JSON.stringify({ suspicion: `${suspicionMs}ms` }));
  await Promise.all(names.map(startNode));
  for (const viewer of names) {
    for (const member of names) await until(`${member} alive at ${viewer}`, async () => ((await statusOf(viewer, member)) === 1 ? true : undefined), 40_000);
  }
}, 120_000);

afterAll(() => cluster.stop());

/** The checks of `node` as `viewer` sees them in /v1/health/node, by CheckID. */
async function healthChecksOf(viewer: string, nodeName: string): Promise<Record<string, { Status: string; Notes: string; ServiceID: string }>> {
  const checks = (await client(node(viewer)).get(`/v1/health/node/${nodeName}`)).json<{ CheckID: string; Status: string; Notes: string; ServiceID: string }[]>();
  return Object.fromEntries(checks.map((c) => [c.CheckID, c]));
}

describe('maintenance in a cluster', () => {
  test('node and service maintenance set on one node are seen on the others, and so is their end', async () => {
    const n1 = client(node('n1'));
    expect((await n1.put('/v1/agent/service/register', { ID: 'api-1', Name: 'api', Port: 81 })).status).toBe(200);
    expect((await n1.put('/v1/agent/maintenance?enable=true&reason=kernel%20upgrade')).status).toBe(200);
    expect((await n1.put('/v1/agent/service/maintenance/api-1?enable=true&reason=deploy')).status).toBe(200);
    for (const viewer of ['n2', 'n3']) {
      await until(`maintenance of n1 at ${viewer}`, async () => {
        const checks = await healthChecksOf(viewer, 'n1');
        return checks._node_maintenance !== undefined && checks['_service_maintenance:api-1'] !== undefined ? checks : undefined;
      }, 10_000);
      const checks = await healthChecksOf(viewer, 'n1');
      expect(checks._node_maintenance).toMatchObject({ Status: 'critical', Notes: 'kernel upgrade', ServiceID: '' });
      expect(checks['_service_maintenance:api-1']).toMatchObject({ Status: 'critical', Notes: 'deploy', ServiceID: 'api-1' });
      // A service in maintenance is not among the passing instances anywhere.
      expect((await client(node(viewer)).get('/v1/health/service/api?passing')).json<unknown[]>()).toEqual([]);
    }
    expect((await n1.put('/v1/agent/maintenance?enable=false')).status).toBe(200);
    expect((await n1.put('/v1/agent/service/maintenance/api-1?enable=false')).status).toBe(200);
    for (const viewer of ['n2', 'n3']) {
      await until(`maintenance of n1 over at ${viewer}`, async () => {
        const checks = await healthChecksOf(viewer, 'n1');
        return checks._node_maintenance === undefined && checks['_service_maintenance:api-1'] === undefined ? true : undefined;
      }, 10_000);
    }
    expect((await n1.put('/v1/agent/service/deregister/api-1')).status).toBe(200);
  });
});

describe('leave and force-leave in a cluster', () => {
  test('force-leave of a killed member moves it from failed to left at once, on the other members too; ?prune forgets it; an unknown name is 404', async () => {
    await node('n3').kill9();
    nodes.delete('n3');
    for (const viewer of ['n1', 'n2']) {
      await until(`n3 failed at ${viewer}`, async () => ((await statusOf(viewer, 'n3')) === 4 ? true : undefined), suspicionMs + 10_000);
    }
    const r = await client(node('n1')).put('/v1/agent/force-leave/n3');
    expect(r.status).toBe(200);
    expect(r.text).toBe('');
    expect(await statusOf('n1', 'n3')).toBe(3);
    // Told to the others through gossip.
    await until('n3 left at n2', async () => ((await statusOf('n2', 'n3')) === 3 ? true : undefined), 5_000);
    expect((await client(node('n1')).put('/v1/agent/force-leave/n9')).status).toBe(404);
    expect((await client(node('n2')).put('/v1/agent/force-leave/n3?prune')).status).toBe(200);
    expect(await statusOf('n2', 'n3')).toBeUndefined();
    await until('n3 forgotten at n1', async () => ((await statusOf('n1', 'n3')) === undefined ? true : undefined), 5_000);
  }, 60_000);

  test('leave: exit 0, left at the others within moments, the TTL timers it owned move and still fire', async () => {
    const leaver = 'n2';
    const alive = ['n1', 'n2'];
    const c1 = client(node('n1'));
    // TTL sessions whose timers the leaver owns (ownership hashes the random session id).
    const owned: string[] = [];
    for (let i = 0; i < 60 && owned.length < 3; i++) {
      const id = await client(node(leaver)).session({ TTL: '2s', NodeChecks: [], LockDelay: '0s' });
      if (ownerOf(`session:${id}`, alive) === leaver) owned.push(id);
    }
    expect(owned.length).toBeGreaterThan(0);
    for (const id of owned) await c1.put(`/v1/session/renew/${id}`);

    const exited = once(node(leaver).proc, 'exit');
    const leftAt = Date.now();
    const r = await client(node(leaver)).put('/v1/agent/leave');
    expect(r.status).toBe(200);
    expect(r.text).toBe('');
    expect((await exited)[0]).toBe(0);
    await until(`${leaver} left at n1`, async () => ((await statusOf('n1', leaver)) === 3 ? true : undefined), suspicionMs);
    expect(Date.now() - leftAt).toBeLessThan(suspicionMs);
    // Their timers are owned by the remaining node now (n1 alone is alive): each session still ends on time.
    for (const id of owned) {
      await until(`TTL session ${id} of the leaver expired`, async () =>
        ((await c1.get(`/v1/session/info/${id}`)).json<unknown[]>().length === 0 ? true : undefined), 15_000);
    }
  }, 90_000);
});
