// Goal: a snapshot of a single agent restored into a fresh three-node cluster (PUT /v1/snapshot on one
// node): every node converges on the restored keys, sessions and checks at the same index, the restored
// session's lock is still held, writes after the restore go above its index and reach every node, and a
// node killed and restarted afterwards rebuilds the restored state from the stream. A snapshot larger than
// one stream message travels through the object store. A node of the file the cluster never had is judged
// failed, as a member that failed would be: its gossip check goes critical and its sessions' locks are released.
import { afterAll, beforeAll, describe, expect, test } from 'vitest';
import { encodeSnapshotFile, readSnapshotFile } from '../../src/state/index.ts';
import { client, sleep, startAgent, tempDataDir, type Agent } from '../support/agent.ts';
import { TestCluster } from '../support/cluster-node.ts';
import { until } from '../support/until.ts';

const names = ['n1', 'n2', 'n3'];
let source: Agent;
const cluster = new TestCluster(names);
const { nodes, dataDirs } = cluster;
let sessionId = '';
/** When the nodes were up: each judges members it has not heard only once its start's grace (2 × the 5 s suspicion) is over. */
let startedAtMs = 0;

const startNode = (name: string) => cluster.start(name);

beforeAll(async () => {
  // The source is a single agent named as one of the cluster's nodes, so its sessions' node is alive there.
  const sourceDir = tempDataDir();
  dataDirs.set('source', sourceDir);
  [source] = await Promise.all([
    startAgent({ bare: true, dataDir: sourceDir, args: ['--http-port', '0', '--grpc-port', '0', '--data-dir', sourceDir, '--node-name', 'n1'] }),
    cluster.prepare(),
  ]);
  const c = client(source);
  sessionId = await c.session({ Name: 'holder', TTL: '60s' });
  expect((await c.put(`/v1/kv/lock/a?acquire=${sessionId}`, 'held')).text).toBe('true');
  for (let i = 0; i < 200; i++) await c.put(`/v1/kv/data/${i}`, `v${i}`);
  await Promise.all(names.map(startNode));
  startedAtMs = Date.now();
}, 120_000);

afterAll(async () => {
  await source?.stop().catch(() => undefined);
  await cluster.stop();
});

/** Keys and sessions as a node lists them after a barrier, the indexes a restore renumbers left out. */
async function view(agent: Agent): Promise<unknown> {
  const strip = (items: Record<string, unknown>[]) => items.map(({ ModifyIndex: _m, CreateIndex: _c, ...rest }) => rest);
  const kv = await client(agent).get('/v1/kv/?recurse&consistent');
  const sessions = await client(agent).get('/v1/session/list?consistent');
  return { kv: strip(kv.json()), sessions: strip(sessions.json()) };
}

describe('restore into a fresh cluster', () => {
  test('every node converges on the restored state; later writes go above it and reach every node', async () => {
    const file = (await client(source).get('/v1/snapshot')).body;
    expect((await client(nodes.get('n1')!).put('/v1/kv/before/restore', 'gone')).text).toBe('true');
    const r = await client(nodes.get('n2')!).put('/v1/snapshot', file);
    expect(r.status, r.text).toBe(200);
    const index = r.json<{ Index: number }>().Index;
    const expected = await view(source);
    for (const n of names) {
      expect(await view(nodes.get(n)!), n).toEqual(expected);
      const lock = (await client(nodes.get(n)!).get('/v1/kv/lock/a')).json<{ Session: string; ModifyIndex: number }[]>()[0]!;
      expect([lock.Session, lock.ModifyIndex]).toEqual([sessionId, index]);
    }
    const w = await client(nodes.get('n3')!).put('/v1/kv/after/restore', 'kept');
    expect(w.text).toBe('true');
    for (const n of names) {
      const got = await client(nodes.get(n)!).get('/v1/kv/after/restore?consistent');
      expect(got.json<{ ModifyIndex: number }[]>()[0]!.ModifyIndex).toBeGreaterThan(index);
    }
    // Every node registers itself again after the restore.
    await until('the three nodes in the catalog', async () => {
      const listed = (await client(nodes.get('n1')!).get('/v1/catalog/nodes?consistent')).json<{ Node: string }[]>();
      return names.every((n) => listed.some((x) => x.Node === n)) ? true : undefined;
    }, 30_000);
  }, 120_000);

  test('a snapshot larger than one stream message travels through the object store; every node converges', async () => {
    const { data } = readSnapshotFile((await client(source).get('/v1/snapshot')).body);
    const kv = [...data.kv, ...Array.from({ length: 20_000 }, (_, i) => ({
      key: `big/${String(i).padStart(6, '0')}`, value: 'dmFsdWUtdmFsdWUtdmFsdWU=', flags: '0', session: undefined, lockIndex: 0, createIndex: 1, modifyIndex: 1,
    }))].sort((a, b) => (a.key < b.key ? -1 : a.key > b.key ? 1 : 0));
    const big = await encodeSnapshotFile({ ...data, kv }, 'n1', Date.now());
    const r = await client(nodes.get('n1')!).put('/v1/snapshot', big.file);
    expect(r.status, r.text).toBe(200);
    const index = r.json<{ Index: number }>().Index;
    for (const n of names) {
      const keys = await client(nodes.get(n)!).get('/v1/kv/big/?keys&consistent');
      expect(keys.json<string[]>(), n).toHaveLength(20_000);
      const lock = (await client(nodes.get(n)!).get('/v1/kv/lock/a')).json<{ Session: string; ModifyIndex: number }[]>()[0]!;
      expect([lock.Session, lock.ModifyIndex]).toEqual([sessionId, index]);
    }
  }, 60_000);

  test('a restored node the cluster never had is judged failed: its gossip check goes critical and its session\'s lock is released', async () => {
    const { data } = readSnapshotFile((await client(source).get('/v1/snapshot')).body);
    const node = data.nodes.find((x) => x.node === 'n1')!;
    const gossip = data.checks.find((x) => x.node === 'n1' && x.checkId === 'gossipHealth')!;
    const bound = { ...data.sessions[0]!, id: '0f4c2e55-7d1b-4d8a-9a57-3c1f2b9e6d01', node: 'gone1', ttl: '', ttlMs: 0, nodeChecks: ['gossipHealth'] };
    const file = await encodeSnapshotFile({
      ...data,
      nodes: [...data.nodes, { ...node, node: 'gone1', id: '5b0e7a3c-1f7e-4c55-8d0b-2a9f6c4e8b11' }],
      checks: [...data.checks, { ...gossip, node: 'gone1' }],
      sessions: [...data.sessions, bound],
      kv: [{ key: 'gone/lock', value: null, flags: '0', session: bound.id, lockIndex: 1, createIndex: 1, modifyIndex: 1 }, ...data.kv]
        .sort((a, b) => (a.key < b.key ? -1 : a.key > b.key ? 1 : 0)),
    }, 'n1', Date.now());
    // After the grace, so no timer of the start judges it: the restore itself must.
    await sleep(Math.max(0, startedAtMs + 11_000 - Date.now()));
    const r = await client(nodes.get('n2')!).put('/v1/snapshot', file.file);
    expect(r.status, r.text).toBe(200);
    for (const n of names) {
      const c = client(nodes.get(n)!);
      await until(`gone/lock released on ${n}`, async () => {
        const lock = (await c.get('/v1/kv/gone/lock?consistent')).json<{ Session?: string }[]>()[0]!;
        return lock.Session === undefined ? true : undefined;
      }, 60_000);
      const checks = (await c.get('/v1/health/node/gone1')).json<{ CheckID: string; Status: string }[]>();
      expect(checks.find((x) => x.CheckID === 'serfHealth' || x.CheckID === 'gossipHealth')?.Status, n).toBe('critical');
      expect((await c.get('/v1/kv/lock/a')).json<{ Session: string }[]>()[0]!.Session, n).toBe(sessionId);
    }
  }, 120_000);

  test('a node killed and restarted after the restore rebuilds the restored state from the stream', async () => {
    const before = await view(nodes.get('n2')!);
    // SIGKILL: no snapshot of its own on the way out, so it replays the stream, restores included.
    await nodes.get('n3')!.kill9();
    await startNode('n3');
    expect(await view(nodes.get('n3')!)).toEqual(before);
  }, 120_000);
});
