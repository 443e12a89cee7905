// Goal: a cluster node whose JetStream stream is deleted on the nats-servers while it runs (an operator's
// `nats stream rm`) refuses writes at once with a clear 503 naming the cause, instead of retrying each for
// half a minute and answering an internal error; reads keep answering from the state the node holds, so
// `roster snapshot save --stale` can still take it out; the cause is logged once.
import { afterAll, beforeAll, expect, test } from 'vitest';
import { connect } from '@nats-io/transport-node';
import { jetstreamManager } from '@nats-io/jetstream';
import { call, expectError } from '../support/agent.ts';
import { TestCluster } from '../support/cluster-node.ts';

const cluster = new TestCluster(['solo']);
beforeAll(async () => {
  await cluster.prepare();
}, 120_000);
afterAll(async () => {
  await cluster.stop();
});

test('the stream deleted under a running node: writes answer 503 at once naming it, reads still answer', async () => {
  const node = await cluster.start('solo');
  for (let k = 0; k < 5; k++) expect((await call(node.url, 'PUT', `/v1/kv/kept/${k}`, `v${k}`)).status).toBe(200);

  const nc = await connect({ servers: cluster.nats.urls });
  try {
    const jsm = await jetstreamManager(nc);
    expect(await jsm.streams.delete('ROSTER_LOG')).toBe(true);
  } finally {
    await nc.close();
  }

  for (let k = 0; k < 3; k++) {
    const r = await call(node.url, 'PUT', `/v1/kv/refused/${k}`, 'x');
    const body = expectError(r, 503, 1016);
    expect(body.message).toMatch(/JetStream stream was deleted on the nats-servers/);
    expect(r.headers.get('retry-after')).toBeNull();
  }
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
}, 120_000);
