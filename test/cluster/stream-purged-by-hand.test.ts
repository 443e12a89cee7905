// Goal: a purge of the log's stream that this cluster did not make (an operator's `nats stream purge`)
// does not leave a node started later without a start: the running node sees the stream's start move past
// every snapshot, saves one at once (saying why), and after a crash it starts from that snapshot with every
// acknowledged write, before and after the purge. Before, it retried "no usable snapshot" until the open
// timeout and stopped: the writes were in no snapshot and no longer in the stream.
import { afterAll, beforeAll, expect, test } from 'vitest';
import { call } from '../support/agent.ts';
import { TestCluster } from '../support/cluster-node.ts';
import { withJsm } from '../support/jetstream.ts';
import { until } from '../support/until.ts';

const cluster = new TestCluster(['solo']);
beforeAll(async () => {
  await cluster.prepare();
}, 120_000);
afterAll(async () => {
  await cluster.stop();
});

test('a stream purged by hand: the node saves a snapshot at once, and starts from it after a crash', async () => {
  let node = await cluster.start('solo');
  for (let k = 0; k < 20; k++) expect((await call(node.url, 'PUT', `/v1/kv/k/${k}`, `v${k}`)).status).toBe(200);
  await withJsm(cluster.nats.urls, async (jsm) => expect((await jsm.streams.purge('ROSTER_LOG')).success).toBe(true));
  for (let k = 20; k < 25; k++) expect((await call(node.url, 'PUT', `/v1/kv/k/${k}`, `v${k}`)).status).toBe(200);

  const warned = await until('the node\'s warning', async () => node.output().split('\n')
    .find((l) => l.includes('the stream was purged below messages no snapshot covers')), 30_000);
  const firstSeq = (JSON.parse(warned) as { firstSeq: number }).firstSeq;
  expect(firstSeq).toBeGreaterThan(1);
  // The snapshot is in the bucket (a clean stop would save one too: the node is killed instead).
  await until('a snapshot at the new start', async () => withJsm(cluster.nats.urls, async (jsm) => {
    const info = await jsm.streams.info('OBJ_ROSTER_SNAPSHOTS', { subjects_filter: '$O.ROSTER_SNAPSHOTS.M.>' });
    return Object.keys(info.state.subjects ?? {}).length > 0 ? true : undefined;
  }), 20_000);
  await node.kill9();

  node = await cluster.start('solo');
  for (let k = 0; k < 25; k++) expect((await call(node.url, 'GET', `/v1/kv/k/${k}?raw`)).text).toBe(`v${k}`);
  expect(node.output()).toContain('JetStream log: loaded a snapshot');
}, 180_000);
