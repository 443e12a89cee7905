// Goal: when the nats-servers have no JetStream storage left for the log (a server's max_file_store, or
// the account's storage limit, taken by another stream here), a write is refused at once with 503/1016
// and Retry-After, naming the cause, and nothing of it is applied; reads answer; gRPC health turns
// NOT_SERVING. Once storage is free again the node notices by itself, without a client write, and writes
// go through. Before, a write was retried for half a minute (a server's limit) or failed at once (the
// account's), and answered "internal error ... outcome unknown". (A nats-server of a cluster that reaches
// its own max_file_store turns JetStream off instead, see docs/cluster.md: no answer a node can act on.)
import { rmSync } from 'node:fs';
import { afterAll, beforeAll, describe, expect, test } from 'vitest';
import { jetstream } from '@nats-io/jetstream';
import { connect } from '@nats-io/transport-node';
import { freePort, startNatsCluster, startNatsServer, type NatsCluster } from '../../cluster/dev/nats-launcher.ts';
import { call, expectError, startAgent, tempDataDir, type Agent } from '../support/agent.ts';
import { processHealth } from '../support/grpc-health.ts';
import { withJsm } from '../support/jetstream.ts';
import { until } from '../support/until.ts';

/**
 * Fills the JetStream storage with a stream of its own, in smaller messages each time one is refused for
 * want of it, until even a small one is; resolves with JetStream's refusal.
 */
async function fillStorage(urls: string[]): Promise<string> {
  await withJsm(urls, (jsm) => jsm.streams.add({ name: 'BALLAST', subjects: ['ballast.>'], num_replicas: urls.length }));
  const nc = await connect({ servers: urls });
  try {
    const js = jetstream(nc);
    let refused: string | undefined;
    for (const bytes of [512 * 1024, 32 * 1024, 1024, 64]) {
      for (let k = 0; k < 400; k++) {
        refused = await js.publish('ballast.chunk', new Uint8Array(bytes)).then(() => undefined, (err: Error) => err.message);
        if (refused !== undefined) break;
      }
      if (refused === undefined) throw new Error(`the storage never filled with messages of ${bytes} bytes`);
    }
    return refused!;
  } finally {
    await nc.close();
  }
}

describe.each([
  { setup: 'one nats-server at its max_file_store', start: () => startNatsServer({ maxFileStore: '16MB' }), refusal: /insufficient resources/ },
  { setup: 'three nats-servers, the account at its storage limit', start: () => startNatsCluster({ accountMaxFile: '24MB' }), refusal: /resource limits exceeded for account/ },
])('$setup', ({ start: startNats, refusal }) => {
  let nats: NatsCluster;
  let gossipPort: number;
  const dataDir = tempDataDir();
  const agents: Agent[] = [];
  beforeAll(async () => {
    nats = await startNats();
    gossipPort = await freePort();
  }, 120_000);
  afterAll(async () => {
    for (const a of agents) if (a.proc.exitCode === null && a.proc.signalCode === null) await a.stop().catch(() => undefined);
    await nats?.shutdown();
    rmSync(dataDir, { recursive: true, force: true });
  });

  async function start(): Promise<Agent> {
    const agent = await startAgent({
      bare: true, dataDir, readyTimeoutMs: 60_000,
      args: ['--http-port', '0', '--grpc-port', '0', '--data-dir', dataDir, '--node-name', 'solo', '--nats', nats.urls.join(','),
        '--replicas', String(nats.urls.length), '--gossip-listen', `127.0.0.1:${gossipPort}`],
    });
    agents.push(agent);
    return agent;
  }

  test('storage full: writes refused at once naming it, nothing applied; storage freed: writes go through again by themselves', async () => {
    const node = await start();
    for (let k = 0; k < 3; k++) expect((await call(node.url, 'PUT', `/v1/kv/kept/${k}`, `v${k}`)).status).toBe(200);
    expect(await fillStorage(nats.urls)).toMatch(refusal);
    // The first write to meet the full storage tells the node. On a loaded machine the nats-servers of a
    // cluster were once seen not answering that write for the whole write timeout (their own retries or an
    // election): it is answered as any write the log could not confirm, and the next one finds out.
    let tries = 0;
    await until('a write refused for want of storage', async () => {
      const r = await call(node.url, 'PUT', `/v1/kv/first-refused/${tries++}`, 'x');
      return r.status === 503 && /no JetStream storage left/.test(r.text) ? true : undefined;
    }, 120_000);

    for (let k = 0; k < 3; k++) {
      const r = await call(node.url, 'PUT', `/v1/kv/refused/${k}`, 'x');
      const body = expectError(r, 503, 1016);
      expect(body.message).toMatch(/nats-servers have no JetStream storage left for its log/);
      expect(r.headers.get('retry-after')).toBe('1');
    }
    expect(await processHealth(node)).toBe('NOT_SERVING');
    for (let k = 0; k < 3; k++) expect((await call(node.url, 'GET', `/v1/kv/kept/${k}?raw`)).text).toBe(`v${k}`);
    expect((await call(node.url, 'GET', '/v1/kv/refused/0')).status).toBe(404);
    const logged = () => node.output().split('\n');
    const cause = logged().filter((l) => l.includes('the nats-servers have no JetStream storage left for the stream'));
    expect(cause).toHaveLength(1);
    expect(cause[0]).toMatch(refusal);
    expect(node.output()).not.toContain('publish failed, retrying');

    // Storage freed: the node finds out by itself (no client write in between) and serves writes again.
    await withJsm(nats.urls, (jsm) => jsm.streams.delete('BALLAST'));
    await until('SERVING again', async () => (await processHealth(node)) === 'SERVING' || undefined, 30_000);
    expect(logged().filter((l) => l.includes('the nats-servers store writes again'))).toHaveLength(1);
    expect((await call(node.url, 'PUT', '/v1/kv/after', 'a')).status).toBe(200);
    expect((await call(node.url, 'GET', '/v1/kv/after?raw')).text).toBe('a');
    expect((await call(node.url, 'GET', '/v1/kv/refused/?keys')).status).toBe(404);
    // The probe's empty commits are no message to skip.
    expect(node.output()).not.toContain('skipping a message that is not a commit');

    // Started again, the node reads the whole stream, the empty commits included, to the same state.
    const index = Number((await call(node.url, 'GET', '/v1/kv/after')).headers.get('x-consul-index'));
    expect(await node.stop()).toBe(0);
    const again = await start();
    expect((await call(again.url, 'GET', '/v1/kv/kept/?keys')).json<string[]>()).toEqual(['kept/0', 'kept/1', 'kept/2']);
    expect(Number((await call(again.url, 'GET', '/v1/kv/after')).headers.get('x-consul-index'))).toBe(index);
  }, 180_000);
});
