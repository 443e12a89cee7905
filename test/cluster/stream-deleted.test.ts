// Goal: a cluster node whose JetStream stream is deleted on the nats-servers while it runs (an operator's
// `nats stream rm`) refuses writes at once with a clear 503 naming the cause, instead of retrying each for
// half a minute and answering an internal error; reads keep answering from the state the node holds, so
// `roster snapshot save --stale` can still take it out; the cause is logged once. Started again, it does
// not create an empty stream in the deleted one's place: its data dir records the log it joined (exit 2),
// and without that record, a fresh node's start is refused while the snapshot bucket holds snapshots of it.
import { rmSync } from 'node:fs';
import { join } from 'node:path';
import { afterAll, beforeAll, expect, test } from 'vitest';
import { call, expectError } from '../support/agent.ts';
import { TestCluster } from '../support/cluster-node.ts';
import { processHealth } from '../support/grpc-health.ts';
import { withJsm } from '../support/jetstream.ts';

// A snapshot every few entries, so the bucket holds snapshots of the stream when it is deleted.
const cluster = new TestCluster(['solo'], () => ['--snapshot-every', '2']);
beforeAll(async () => {
  await cluster.prepare();
}, 120_000);
afterAll(async () => {
  await cluster.stop();
});

test('the stream deleted under a running node: writes answer 503 at once naming it, reads still answer', async () => {
  const node = await cluster.start('solo');
  for (let k = 0; k < 5; k++) expect((await call(node.url, 'PUT', `/v1/kv/kept/${k}`, `v${k}`)).status).toBe(200);

  await withJsm(cluster.nats.urls, async (jsm) => expect(await jsm.streams.delete('ROSTER_LOG')).toBe(true));

  for (let k = 0; k < 3; k++) {
    const r = await call(node.url, 'PUT', `/v1/kv/refused/${k}`, 'x');
    const body = expectError(r, 503, 1016);
    expect(body.message).toMatch(/JetStream stream was deleted on the nats-servers/);
    expect(r.headers.get('retry-after')).toBeNull();
  }
  // No write can commit: the agent's gRPC health is NOT_SERVING and no leader is known, as with a full disk.
  expect(await processHealth(node)).toBe('NOT_SERVING');
  expect((await call(node.url, 'GET', '/v1/status/leader')).json<string>()).toBe('');
  for (let k = 0; k < 5; k++) expect((await call(node.url, 'GET', `/v1/kv/kept/${k}?raw`)).text).toBe(`v${k}`);
  expect((await call(node.url, 'GET', '/v1/kv/refused/0')).status).toBe(404);
  // The state can still be taken out, as the logged line says.
  expectError(await call(node.url, 'GET', '/v1/snapshot'), 503, 1016);
  const saved = await call(node.url, 'GET', '/v1/snapshot?stale');
  expect(saved.status).toBe(200);
  expect(saved.headers.get('content-type')).toBe('application/gzip');
  expect(Number(saved.headers.get('x-consul-index'))).toBeGreaterThanOrEqual(5);
  const logged = node.output().split('\n').filter((l) => l.includes('JetStream log: the stream is gone'));
  expect(logged).toHaveLength(1);
  expect(logged[0]).toContain('roster snapshot save --stale');

  // Started again, the node does not create an empty stream in its place: it stops, saying what to do.
  expect(await node.stop()).toBe(0);
  const marker = join(cluster.dataDirs.get('solo')!, 'cluster');
  const refused = await cluster.start('solo').then(() => 'started', (err: Error) => err.message);
  expect(refused).toMatch(/exited \(2\) before ready/);
  expect(refused).toMatch(/this node joined the log ROSTER_LOG@\S+ \(recorded in .*\), but the nats-servers \S+ have no stream ROSTER_LOG, while their snapshot bucket ROSTER_SNAPSHOTS holds \d+ snapshots? of it \(the newest at index \d+\): the stream was deleted on them/);
  expect(refused).toContain(`remove the marker (${marker}) on every node`);
  await withJsm(cluster.nats.urls, async (jsm) => expect(await jsm.streams.info('ROSTER_LOG').catch(() => 'none')).toBe('none'));

  // Without the record (a node's fresh data dir), the bucket's snapshots still keep it from creating one.
  rmSync(marker);
  const unrecorded = await cluster.start('solo').then(() => 'started', (err: Error) => err.message);
  expect(unrecorded).toMatch(/exited \(1\) before ready/);
  expect(unrecorded).toMatch(/the stream ROSTER_LOG does not exist, but the snapshot bucket ROSTER_SNAPSHOTS holds \d+ snapshots? of it \(the newest at index \d+\): the stream was deleted/);

  // With the bucket's snapshots of it removed too, as the messages say, it starts with an empty registry.
  await withJsm(cluster.nats.urls, async (jsm) => expect(await jsm.streams.delete('OBJ_ROSTER_SNAPSHOTS')).toBe(true));
  const fresh = await cluster.start('solo');
  expect((await call(fresh.url, 'GET', '/v1/kv/kept/0')).status).toBe(404);
  expect((await call(fresh.url, 'PUT', '/v1/kv/new', 'n')).status).toBe(200);
}, 180_000);
