// Goal: an operator's `nats stream rm OBJ_ROSTER_SNAPSHOTS` (the snapshot bucket) under a running node
// costs nothing for good: writes go on, the node's next snapshot creates the bucket again (said once in
// its log) and is saved there, and the node started again loads that snapshot. Before the bucket was made
// again, every snapshot failed until the node restarted, with a warning at every commit.
import { afterAll, beforeAll, expect, test } from 'vitest';
import { Objm } from '@nats-io/obj';
import { jetstream } from '@nats-io/jetstream';
import { connect } from '@nats-io/transport-node';
import { call } from '../support/agent.ts';
import { TestCluster } from '../support/cluster-node.ts';
import { withJsm } from '../support/jetstream.ts';
import { until } from '../support/until.ts';

// A snapshot every few entries (and, as always, at most one per state's worth of entries: the writes
// below overwrite three keys so that the state stays small).
const cluster = new TestCluster(['solo'], () => ['--snapshot-every', '3']);
beforeAll(async () => {
  await cluster.prepare();
}, 120_000);
afterAll(async () => {
  await cluster.stop();
});

/** The snapshot bucket's objects, with the index each holds; undefined when there is no bucket. */
async function objects(servers: string[]): Promise<Array<{ name: string; index: number }> | undefined> {
  const nc = await connect({ servers });
  try {
    const store = await new Objm(jetstream(nc)).open('ROSTER_SNAPSHOTS').catch(() => undefined);
    const list = await store?.list().catch(() => undefined);
    return list?.filter((o) => !o.deleted).map((o) => ({ name: o.name, index: Number(o.metadata?.index) }));
  } finally {
    await nc.close();
  }
}

const lines = (output: string, text: string): string[] => output.split('\n').filter((l) => l.includes(text));

test('the snapshot bucket deleted under a running node: the next snapshot creates it again, and a restart loads it', async () => {
  let node = await cluster.start('solo');
  let k = 0;
  const write = async (n: number) => {
    for (let i = 0; i < n; i++, k++) expect((await call(node.url, 'PUT', `/v1/kv/hot/${k % 3}`, `v${k}`)).status).toBe(200);
  };
  await write(10);
  await until('a snapshot in the bucket', async () => ((await objects(cluster.nats.urls))?.length ? true : undefined));

  await withJsm(cluster.nats.urls, async (jsm) => expect(await jsm.streams.delete('OBJ_ROSTER_SNAPSHOTS')).toBe(true));
  expect(await objects(cluster.nats.urls)).toBeUndefined();

  await write(30);
  const saved = await until('a snapshot in the bucket made again', async () => {
    const o = await objects(cluster.nats.urls);
    return o !== undefined && o.length > 0 ? o : undefined;
  });
  const newest = Math.max(...saved.map((o) => o.index));
  expect(newest).toBeGreaterThan(10);
  const output = node.output();
  expect(lines(output, 'the snapshot bucket was gone from the nats-servers (deleted); created it again')).toHaveLength(1);
  expect(lines(output, 'snapshot failed')).toEqual([]);

  // Started again, the node loads a snapshot from the new bucket and has every write.
  expect(await node.stop()).toBe(0);
  node = await cluster.start('solo');
  const loaded = lines(node.output(), 'JetStream log: loaded a snapshot');
  expect(loaded).toHaveLength(1);
  expect(JSON.parse(loaded[0]!).index).toBeGreaterThanOrEqual(newest);
  for (let key = 0; key < 3; key++) {
    const last = k - 1 - ((k - 1 - key) % 3);
    expect((await call(node.url, 'GET', `/v1/kv/hot/${key}?raw`)).text).toBe(`v${last}`);
  }
}, 180_000);
