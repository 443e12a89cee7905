// Goal: a node cut off from every nats-server while its gossip still works does not keep the TTL sessions
// it owns alive. Three nodes; n1 reaches its nats-server only through a proxy that the test cuts (the
// servers do not advertise each other, so n1's client cannot go around it), n2 and n3 reach theirs
// directly. A never-renewed session whose timer n1 owns, holding a lock, is made just before the cut:
// n1 stays alive to gossip, says in its heartbeat that it cannot use the log once its stream has been silent
// for twice the suspicion timeout (at least 6 s), and another node takes the timer over and expires the
// session, lock released, within about 2 × TTL after that. Once the link is back, n1 reads the expiry,
// takes writes, and counts among the owners again.
import { writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { afterAll, beforeAll, expect, test } from 'vitest';
import { ownerOf } from '../../src/runtime/ownership.ts';
import { client, tempDataDir } from '../support/agent.ts';
import { TestCluster } from '../support/cluster-node.ts';
import { cuttableProxy, type CuttableProxy } from '../support/cuttable-proxy.ts';
import { until } from '../support/until.ts';
import { roster } from '../cli/support.ts';

const names = ['n1', 'n2', 'n3'];
const suspicionMs = 2_000;
const ttlMs = 3_000;
/** The stream's silence after which a node counts as cut off: twice the suspicion timeout, at least 6 s. */
const cutJudgedMs = Math.max(6_000, 2 * suspicionMs);

let configFile: string;
let proxy: CuttableProxy | undefined;
const cluster = new TestCluster(names, () => ['--session-ttl-min', '1s', '--config-file', configFile]);
const node = (name: string) => cluster.nodes.get(name)!;

beforeAll(async () => {
  const nats = await cluster.prepare({ noAdvertise: true });
  configFile = join(tempDataDir(), 'agent.json');
  writeFileSync(configFile, JSON.stringify({ suspicion: `${suspicionMs}ms` }));
  proxy = await cuttableProxy(Number(new URL(nats.urls[0]!).port));
  await Promise.all([
    cluster.start('n1', `nats://127.0.0.1:${proxy.port}`),
    cluster.start('n2', nats.urls[1]!),
    cluster.start('n3', nats.urls[2]!),
  ]);
  for (const viewer of names) {
    await until(`every member alive at ${viewer}`, async () => {
      const members = (await client(node(viewer)).get('/v1/agent/members')).json<{ Name: string; Status: number }[]>();
      return names.every((n) => members.some((m) => m.Name === n && m.Status === 1)) ? true : undefined;
    }, 40_000);
  }
}, 120_000);

afterAll(async () => {
  proxy?.heal();
  await cluster.stop();
  await proxy?.close();
});

test('a session whose timer owner is cut off from NATS, but not from gossip, is expired by another node', async () => {
  const c2 = client(node('n2'));
  let owned: string | undefined;
  for (let i = 0; i < 40 && owned === undefined; i++) {
    const id = await c2.session({ TTL: `${ttlMs}ms`, NodeChecks: [], LockDelay: '0s', Behavior: 'release' });
    if (ownerOf(`session:${id}`, names) === 'n1') owned = id;
  }
  expect(owned, 'a session whose timer n1 owns').toBeDefined();
  expect((await c2.put(`/v1/kv/cut/lock?acquire=${owned}`, 'held')).text).toBe('true');
  proxy!.cut();
  const cutAt = Date.now();

  const goneAfterMs = await until('the session expired by another node', async () =>
    ((await c2.get(`/v1/session/info/${owned}`)).json<unknown[]>().length === 0 ? Date.now() - cutAt : undefined),
  cutJudgedMs + 2 * ttlMs + 8_000);
  console.log(`session expired ${goneAfterMs} ms after n1 was cut off from NATS (bound: ${cutJudgedMs} + 2 × ${ttlMs} ms and a heartbeat)`);
  expect((await c2.get('/v1/kv/cut/lock?consistent')).json<{ Session?: string }[]>()[0]!.Session).toBeUndefined();
  // n1 was never failed: only its log was cut, which its member record and `roster members` say.
  const n1Member = async () => (await c2.get('/v1/agent/members')).json<{ Name: string; Status: number; Tags: Record<string, string> }[]>()
    .find((m) => m.Name === 'n1')!;
  expect(await n1Member()).toMatchObject({ Status: 1, Tags: { log: 'unreachable' } });
  expect(node('n1').output()).toContain('no answer from the stream');
  const listed = await roster(['members'], { agent: node('n2').url });
  expect(listed.stdout.split('\n').find((l) => l.startsWith('n1'))).toMatch(/alive \(log unreachable\)/);

  proxy!.heal();
  const c1 = client(node('n1'));
  await until('n1 reads the expiry', async () => ((await c1.get(`/v1/session/info/${owned}`)).json<unknown[]>().length === 0 ? true : undefined), 30_000);
  await until('n1 takes a write', async () => ((await c1.put('/v1/kv/cut/after', 'v')).status === 200 ? true : undefined), 30_000);
  await until('n1 counts among the owners again', async () => (node('n1').output().includes('the stream answers this node again') ? true : undefined), 30_000);
  await until('n1 says so in its heartbeats', async () => ((await n1Member()).Tags.log === undefined ? true : undefined), 10_000);
}, 120_000);
