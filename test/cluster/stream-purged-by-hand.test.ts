// Goal: a purge of the log's stream that this cluster did not make (an operator's `nats stream purge`)
// does not leave a node started later without a start: the running node sees the stream's start move past
// every snapshot, saves one at once (saying why), and after a crash it starts from that snapshot with every
// acknowledged write, before and after the purge. Before, it retried "no usable snapshot" until the open
// timeout and stopped: the writes were in no snapshot and no longer in the stream. The stream's settings
// edited by hand while the node runs (`nats stream edit`) are said once, with what they do to the log, and
// their return is said too.
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

test('the stream\'s settings edited by hand: the node says once what changed and what it does, and when they are back', async () => {
  const node = cluster.nodes.get('solo')!;
  const edit = (change: { max_age?: number; duplicate_window?: number }) => withJsm(cluster.nats.urls, async (jsm) => {
    const { config } = await jsm.streams.info('ROSTER_LOG');
    await jsm.streams.update('ROSTER_LOG', { ...config, ...change });
    return config;
  });
  const lines = (text: string) => node.output().split('\n').filter((l) => l.includes(text));
  const original = await edit({ max_age: 3_600e9, duplicate_window: 1e9 });
  const warned = await until('the warning', async () => lines('the stream\'s settings were changed on the nats-servers')[0], 20_000);
  const record = JSON.parse(warned) as { changed: Record<string, number>; effects: string[] };
  expect(record.changed).toEqual({ maxAgeNs: 3_600e9, duplicateWindowNs: 1e9 });
  expect(record.effects).toEqual(expect.arrayContaining([
    'a publish retried after a lost answer may be stored twice', expect.stringContaining('JetStream removes messages by itself'),
  ]));
  // Said once, not at every look.
  await new Promise((r) => setTimeout(r, 5_000));
  expect(lines('the stream\'s settings were changed on the nats-servers')).toHaveLength(1);

  await edit({ max_age: original.max_age, duplicate_window: original.duplicate_window });
  const back = await until('the return', async () => lines('the stream\'s settings are back to what the log needs')[0], 20_000);
  expect((JSON.parse(back) as { restored: string[] }).restored.sort()).toEqual(['duplicateWindowNs', 'maxAgeNs']);
  expect((await call(node.url, 'PUT', '/v1/kv/after-the-edits', 'v')).status).toBe(200);
}, 120_000);
