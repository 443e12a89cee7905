// Goal: a node that left never counts towards the majority a node needs before it reports failures, also
// after the survivors restarted and gossip forgot it, so a killed node's locks are released within the
// documented bound (suspicion + one heartbeat + the 2 s confirmation + one commit). Four nodes; n4 runs
// `roster leave`; n1–n3 restart one by one; a lock held through n3 is released once n3 is killed, and n4's
// gossip check records that it left. Then, with a node that did not leave but was killed (counted, so the
// survivors are no majority), the owner logs once why it withholds the report, and deregistering the dead
// node from the catalog judges again and releases the lock. Last, force-leave of a node no member of a
// restarted agent names (gone before its start) records it left instead of answering 404.
import { afterAll, beforeAll, describe, expect, test } from 'vitest';
import { writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { once } from 'node:events';
import { ownerOf } from '../../src/runtime/ownership.ts';
import { client, tempDataDir } from '../support/agent.ts';
import { TestCluster } from '../support/cluster-node.ts';
import { until } from '../support/until.ts';

const suspicionMs = 3_000;
/** The documented bound for a failure's report (suspicion, a heartbeat, the confirmation, a commit), with room for a loaded machine. */
const reportBoundMs = suspicionMs + 1_000 + 2_000 + 4_000;
const names = ['n1', 'n2', 'n3', 'n4'];

let configFile: string;
const cluster = new TestCluster(names, () => ['--config-file', configFile]);
const node = (name: string) => cluster.nodes.get(name)!;

/** The status number of `member` in `viewer`'s /v1/agent/members (1 alive, 3 left, 4 failed). */
async function statusOf(viewer: string, member: string): Promise<number | undefined> {
  const members = (await client(node(viewer)).get('/v1/agent/members')).json<{ Name: string; Status: number }[]>();
  return members.find((m) => m.Name === member)?.Status;
}

async function allAlive(group: string[]): Promise<void> {
  for (const viewer of group) {
    for (const member of group) await until(`${member} alive at ${viewer}`, async () => ((await statusOf(viewer, member)) === 1 ? true : undefined), 40_000);
  }
}

/** `name`'s gossip check as `viewer` has it. */
async function gossipCheck(viewer: string, name: string): Promise<{ Status: string; Output: string } | undefined> {
  const checks = (await client(node(viewer)).get(`/v1/health/node/${name}`)).json<{ CheckID: string; Status: string; Output: string }[]>();
  return checks.find((c) => c.CheckID === 'gossipHealth');
}

/** A session on `holder`, bound to its gossip check, holding `key`; the session id. */
async function holdLock(holder: string, key: string): Promise<string> {
  const sid = await client(node(holder)).session({ Name: `held-by-${holder}`, LockDelay: '1s' });
  const r = await client(node(holder)).put(`/v1/kv/${key}?acquire=${sid}`, holder);
  expect(r.text).toBe('true');
  return sid;
}

/** Kills `name` and waits at `viewer` until `key` has no holder; how long that took. */
async function killAndTimeRelease(name: string, viewer: string, key: string, ms: number): Promise<number> {
  const killedAt = Date.now();
  await node(name).kill9();
  await until(`${key} released after ${name} was killed`, async () => {
    const entry = (await client(node(viewer)).get(`/v1/kv/${key}`)).json<{ Session?: string }[]>()[0];
    return entry !== undefined && entry.Session === undefined ? true : undefined;
  }, ms);
  return Date.now() - killedAt;
}

beforeAll(async () => {
  await cluster.prepare();
  configFile = join(tempDataDir(), 'agent.json');
  writeFileSync(configFile, JSON.stringify({ suspicion: `${suspicionMs}ms` }));
  await Promise.all(names.map((n) => cluster.start(n)));
  await allAlive(names);
}, 180_000);

afterAll(() => cluster.stop(), 60_000);

describe('nodes that left do not count towards the majority', () => {
  test('n4 leaves, n1–n3 restart one by one, n3 is killed: its lock is released within the documented bound', async () => {
    const exited = once(node('n4').proc, 'exit');
    expect((await client(node('n4')).put('/v1/agent/leave')).status).toBe(200);
    expect((await exited)[0]).toBe(0);
    for (const name of ['n1', 'n2', 'n3']) {
      expect(await node(name).stop()).toBe(0);
      await cluster.start(name);
      await allAlive(['n1', 'n2', 'n3']);
    }
    // Past every restarted node's start grace (twice the suspicion timeout): unheard nodes are judged now.
    await new Promise((r) => setTimeout(r, 2 * suspicionMs + 500));
    // No restarted node has heard of n4; the log says it left.
    for (const viewer of ['n1', 'n2', 'n3']) expect(await statusOf(viewer, 'n4')).toBeUndefined();
    expect(await gossipCheck('n1', 'n4')).toMatchObject({ Status: 'critical', Output: 'Agent left the cluster' });
    await holdLock('n3', 'jobs/X');
    const took = await killAndTimeRelease('n3', 'n1', 'jobs/X', 30_000);
    expect(took).toBeLessThan(reportBoundMs);
    expect(await gossipCheck('n1', 'n3')).toMatchObject({ Status: 'critical', Output: 'Agent not live or unreachable' });
  }, 240_000);

  test('a killed node that did not leave still counts: the report is withheld and logged once; deregistering it judges again', async () => {
    await cluster.start('n3');
    await cluster.start('n4');
    await allAlive(names);
    await until('n3 and n4 passing again', async () =>
      ((await gossipCheck('n1', 'n3'))?.Status === 'passing' && (await gossipCheck('n1', 'n4'))?.Status === 'passing' ? true : undefined), 20_000);
    await node('n4').kill9();
    await until('n4 reported failed', async () => ((await gossipCheck('n1', 'n4'))?.Status === 'critical' ? true : undefined), reportBoundMs);
    await holdLock('n3', 'jobs/Y');
    await node('n3').kill9();
    // Two of the four Roster nodes that have not left are alive: no majority, so n3's failure is not reported.
    const owner = ownerOf('node:n3', ['n1', 'n2'])!;
    const line = await until('the withheld report logged', async () => {
      const found = node(owner).output().split('\n').filter((l) => l.includes('node n3 is not alive, but its failure is not reported'));
      return found.length > 0 ? found : undefined;
    }, reportBoundMs);
    expect(line[0]).toContain('sees 2 of the 4 Roster nodes');
    expect(line[0]).toContain('roster force-leave');
    expect((await client(node('n1')).get('/v1/kv/jobs/Y')).json<{ Session?: string }[]>()[0]?.Session).toBeDefined();
    const deregisteredAt = Date.now();
    expect((await client(node('n1')).put('/v1/catalog/deregister', { Node: 'n4' })).status).toBe(200);
    await until('jobs/Y released once n4 was deregistered', async () =>
      ((await client(node('n1')).get('/v1/kv/jobs/Y')).json<{ Session?: string }[]>()[0]?.Session === undefined ? true : undefined), 10_000);
    expect(Date.now() - deregisteredAt).toBeLessThan(8_000);
    expect(node(owner).output().split('\n').filter((l) => l.includes('node n3 is not alive, but its failure is not reported'))).toHaveLength(1);
  }, 180_000);

  test('force-leave of a node a restarted agent never heard records it left', async () => {
    expect(await node('n1').stop()).toBe(0);
    await cluster.start('n1');
    await allAlive(['n1', 'n2']);
    expect(await statusOf('n1', 'n3')).toBeUndefined();
    const r = await client(node('n1')).put('/v1/agent/force-leave/n3');
    expect(r.status).toBe(200);
    expect(await gossipCheck('n1', 'n3')).toMatchObject({ Status: 'critical', Output: 'Agent left the cluster' });
    expect((await client(node('n1')).put('/v1/agent/force-leave/n9')).status).toBe(404);
  }, 120_000);
});
