// Goal: the cluster floor bench:compare measures Roster's cluster against (bench/floor-server.ts --nats)
// really is one replicated lock server across its three nodes: a session made on one node holds locks
// through the others, a lock is held by one session at a time whichever node is asked, a queued acquire
// on one node is handed the lock by a release on another, a wait that runs out is refused, and every
// answered write is in the JetStream stream, replicated on the three servers.
import { afterAll, beforeAll, expect, test } from 'vitest';
import { connect } from '@nats-io/transport-node';
import { jetstreamManager } from '@nats-io/jetstream';
import { startFloorCluster, type FloorCluster } from '../../bench/peers/floor.ts';
import { floorStream } from '../../bench/floor/stream-log.ts';

let cluster: FloorCluster;
beforeAll(async () => { cluster = await startFloorCluster(); }, 90_000);
afterAll(async () => { await cluster?.stop(); }, 30_000);

const call = async (node: number, method: string, path: string, body?: string) => {
  const res = await fetch(`${cluster.nodes[node]!.url}${path}`, { method, body });
  return { status: res.status, text: await res.text() };
};
const session = async (node: number) => (JSON.parse((await call(node, 'PUT', '/v1/session/create', '{}')).text) as { ID: string }).ID;

test('one holder at a time across the nodes; a session made on one node is known to all', async () => {
  const [a, b] = [await session(0), await session(1)];
  expect(a).not.toBe(b);
  expect(await call(1, 'PUT', `/v1/kv/k1?acquire=${a}`, 'x')).toEqual({ status: 200, text: 'true' });
  expect(await call(2, 'PUT', `/v1/kv/k1?acquire=${b}`, 'x')).toEqual({ status: 200, text: 'false' });
  expect(await call(0, 'PUT', `/v1/kv/k1?release=${b}`)).toEqual({ status: 200, text: 'false' });
  expect(await call(2, 'PUT', `/v1/kv/k1?release=${a}`)).toEqual({ status: 200, text: 'true' });
  expect(await call(0, 'PUT', `/v1/kv/k1?acquire=${b}`, 'x')).toEqual({ status: 200, text: 'true' });
  expect(await call(1, 'PUT', `/v1/session/destroy/${b}`)).toEqual({ status: 200, text: 'true' });
  expect(await call(2, 'PUT', `/v1/kv/k1?acquire=${a}`, 'x')).toEqual({ status: 200, text: 'true' });
  expect(await call(0, 'PUT', '/v1/kv/k1?acquire=nobody', 'x')).toMatchObject({ status: 400 });
});

test('a queued acquire on one node is handed the lock by a release on another; a wait that runs out is refused', async () => {
  const [a, b, c] = [await session(0), await session(1), await session(2)];
  expect((await call(0, 'PUT', `/v1/kv/k2?acquire=${a}`, 'x')).text).toBe('true');
  const waited = call(1, 'PUT', `/v1/kv/k2?acquire=${b}&wait=5000ms`, 'x');
  await new Promise((r) => setTimeout(r, 200));
  expect((await call(2, 'PUT', `/v1/kv/k2?release=${a}`)).text).toBe('true');
  expect(await waited).toEqual({ status: 200, text: 'true' });
  expect(await call(2, 'PUT', `/v1/kv/k2?acquire=${c}&wait=150ms`, 'x')).toEqual({ status: 200, text: 'false' });
  // The refused waiter left the queue on every node: the next release frees the key for anybody.
  expect((await call(0, 'PUT', `/v1/kv/k2?release=${b}`)).text).toBe('true');
  expect((await call(1, 'PUT', `/v1/kv/k2?acquire=${a}`, 'x')).text).toBe('true');
});

test('every answered write is in the stream, replicated on the three servers', async () => {
  const a = await session(2);
  expect((await call(2, 'PUT', `/v1/kv/logged-key?acquire=${a}`, 'x')).text).toBe('true');
  const nc = await connect({ servers: cluster.nats.urls });
  try {
    const jsm = await jetstreamManager(nc);
    const info = await jsm.streams.info(floorStream);
    expect(info.config.num_replicas).toBe(3);
    const entries: { t: string; key?: string; session?: string }[] = [];
    for (let seq = info.state.first_seq; seq <= info.state.last_seq; seq++) {
      const m = await jsm.streams.getMessage(floorStream, { seq });
      entries.push(...(m!.json() as { t: string }[]));
    }
    expect(entries).toContainEqual(expect.objectContaining({ t: 'acquire', key: 'logged-key', session: a }));
  } finally {
    await nc.close();
  }
});
