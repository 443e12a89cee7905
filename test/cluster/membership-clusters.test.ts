// Goal: two clusters stay apart when one's seeds reach into the other. Cluster B's only node is named n2,
// as a node of cluster A is, and joins through A's n1. Each node gossips its cluster (the identity of the
// log it shares), so A's nodes drop B's heartbeats: A's n2 keeps its address, and when
// B's n2 leaves, A's n2 stays alive. B's node sees only itself. A's node says in its log what it dropped.
import { afterAll, beforeAll, expect, test } from 'vitest';
import { client, type Agent } from '../support/agent.ts';
import { TestCluster } from '../support/cluster-node.ts';
import { until } from '../support/until.ts';

const a = new TestCluster(['n1', 'n2']);
const b = new TestCluster(['n2'], () => ['--join', `127.0.0.1:${a.gossipPorts.get('n1')}`]);

interface MemberView { Name: string; Port: number; Status: number }

const membersAt = async (agent: Agent): Promise<MemberView[]> =>
  (await client(agent).get('/v1/agent/members')).json<MemberView[]>().map(({ Name, Port, Status }) => ({ Name, Port, Status }));

beforeAll(async () => {
  await Promise.all([a.prepare(), b.prepare()]);
  await Promise.all(['n1', 'n2'].map((n) => a.start(n)));
  for (const viewer of ['n1', 'n2']) {
    await until(`both alive at ${viewer}`, async () => ((await membersAt(a.nodes.get(viewer)!)).filter((m) => m.Status === 1).length === 2 ? true : undefined), 40_000);
  }
}, 150_000);

afterAll(async () => {
  await b.stop();
  await a.stop();
});

test('a node of another cluster reached through the seeds is not taken for a member, nor is its leaving', async () => {
  const [n1, n2] = [a.nodes.get('n1')!, a.nodes.get('n2')!];
  const before = await membersAt(n1);
  const ownN2 = before.find((m) => m.Name === 'n2')!;
  const stranger = await b.start('n2');
  const strangerPort = Number(new URL(stranger.url).port);
  // Until A's n1 has dropped a heartbeat of B's (or, were it taken, until n2's entry shows B's node).
  await until('B\'s heartbeats reached A', async () => {
    if (/node of another cluster/.test(n1.output())) return true;
    return (await membersAt(n1)).some((m) => m.Port === strangerPort) ? true : undefined;
  }, 40_000);
  expect(await membersAt(n1)).toEqual(before);
  expect((await membersAt(stranger)).map((m) => m.Name)).toEqual(['n2']);
  // B's node leaves (its last heartbeat says so): A's n2 is still alive everywhere in A.
  expect(await stranger.stop()).toBe(0);
  await new Promise((res) => setTimeout(res, 3_000));
  for (const viewer of [n1, n2]) expect((await membersAt(viewer)).find((m) => m.Name === 'n2')).toEqual(ownN2);
  const warning = n1.output().split('\n').find((line) => line.includes('node of another cluster'));
  expect(warning).toMatch(/"name":"n2","cluster":"ROSTER_LOG@[^"]+","ours":"ROSTER_LOG@[^"]+"/);
}, 120_000);
