// Goal: a snapshot of agent "srcnode" restored into a single agent "dstnode": srcnode is a Roster node of
// the restored catalog (it has the gossip check) that is not, and never will be, a member, so the agent
// judges it failed as a cluster judges a failed member: its gossip check goes critical and the sessions bound
// to it are invalidated, releasing their locks. A node registered through the catalog API without a gossip
// check (an external node) is not judged: it stays, with its session and lock. So does the agent itself.
import { afterAll, beforeAll, describe, expect, test } from 'vitest';
import { client, sleep, startAgent, tempDataDir, type Agent } from '../support/agent.ts';

type Data = Record<string, any>;

const named = (name: string, dataDir = tempDataDir()) => startAgent({
  bare: true, dataDir, args: ['--http-port', '0', '--grpc-port', '0', '--data-dir', dataDir, '--node-name', name],
});
let source: Agent;
let target: Agent;
let worker = '';
let external = '';

beforeAll(async () => {
  [source, target] = await Promise.all([named('srcnode'), named('dstnode')]);
  const c = client(source);
  worker = await c.session({ Name: 'worker', TTL: '0s' });
  expect((await c.put(`/v1/kv/jobs/leader?acquire=${worker}`, 'me')).text).toBe('true');
  expect((await c.put('/v1/catalog/register', { Node: 'ext', Address: '10.0.0.9' })).status).toBe(200);
  external = await c.session({ Name: 'on ext', Node: 'ext', NodeChecks: [] });
  expect((await c.put(`/v1/kv/ext/lock?acquire=${external}`, 'ext')).text).toBe('true');
  const saved = await c.get('/v1/snapshot');
  expect(saved.status, saved.text).toBe(200);
  await source.stop();
  const r = await client(target).put('/v1/snapshot', saved.body);
  expect(r.status, r.text).toBe(200);
}, 60_000);

afterAll(async () => {
  for (const a of [source, target]) { await a?.stop(); a?.cleanup(); }
});

const gossipOf = async (node: string) =>
  ((await client(target).get(`/v1/health/node/${node}`)).json() as Data[]).find((x) => x.CheckID === 'serfHealth' || x.CheckID === 'gossipHealth');

describe('restore into a single agent of a snapshot of another node', () => {
  test('the other node\'s gossip check goes critical and its session is invalidated, releasing the lock', async () => {
    const c = client(target);
    let lock: Data = {};
    for (let i = 0; i < 100; i++) {
      lock = (await c.get('/v1/kv/jobs/leader')).json<Data[]>()[0]!;
      if (lock.Session === undefined) break;
      await sleep(100);
    }
    expect(lock.Session).toBeUndefined();
    expect((await c.get(`/v1/session/info/${worker}`)).json()).toEqual([]);
    expect((await gossipOf('srcnode'))?.Status).toBe('critical');
    expect((await c.get('/v1/catalog/nodes')).json<Data[]>().map((n) => n.Node).sort()).toEqual(['dstnode', 'ext', 'srcnode']);
  }, 30_000);

  test('the external node, and the agent itself, are not judged', async () => {
    const c = client(target);
    expect((await c.get(`/v1/session/info/${external}`)).json<Data[]>()[0]?.ID).toBe(external);
    expect((await c.get('/v1/kv/ext/lock')).json<Data[]>()[0]!.Session).toBe(external);
    expect(((await c.get('/v1/health/node/ext')).json() as Data[])).toEqual([]);
    expect((await gossipOf('dstnode'))?.Status).toBe('passing');
  });
});
