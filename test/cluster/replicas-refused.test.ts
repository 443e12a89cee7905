// Goal: a cluster node whose nats-servers cannot keep the stream's replicas says what to do. Against a
// nats-server running JetStream without a cluster (which keeps one copy), a node with the default three
// replicas stops at once with exit code 1 naming --replicas 1, instead of retrying for the open timeout
// and printing JetStream's "replicas > 1 not supported in non-clustered mode" alone. Asking more copies
// than the cluster has servers fails the open after its timeout naming --replicas and the servers.
import { rmSync } from 'node:fs';
import { describe, expect, test } from 'vitest';
import { JetStreamLog } from '../../cluster/index.ts';
import { SystemClock } from '../../src/ports/clock.ts';
import { startAgent, tempDataDir } from '../support/agent.ts';
import { freshStream, useSuiteNats } from '../support/jetstream.ts';

describe('one nats-server without a cluster', () => {
  const suite = useSuiteNats(1);

  test('a node with three replicas stops at once with exit code 1 naming --replicas 1', async () => {
    const dataDir = tempDataDir();
    const refused = await startAgent({ dataDir, args: ['--nats', suite.nats.urls.join(','), '--node-name', 'solo'], readyTimeoutMs: 60_000 })
      .then(async (a) => { await a.stop(); return 'started'; }, (err: Error) => err.message);
    rmSync(dataDir, { recursive: true, force: true });
    expect(refused).toMatch(/exited \(1\) before ready/);
    expect(refused).toMatch(/replicas > 1 not supported in non-clustered mode: these nats-servers run JetStream without a cluster, which keeps one copy of a stream: start the nodes with --replicas 1/);
    // Refused at the first answer, not retried until the open timeout.
    expect(refused).not.toContain('setup step failed, retrying');
  }, 90_000);
});

describe('three nats-servers', () => {
  const suite = useSuiteNats(3);

  test('five replicas: the open fails after its timeout naming --replicas and the servers', async () => {
    const log = new JetStreamLog({ servers: suite.nats.urls, stream: freshStream('REPLICAS'), replicas: 5, nodeName: 'n1', clock: new SystemClock(), openTimeoutMs: 3_000 });
    const failure = await log.open().then(() => 'opened', (err: Error) => err.message);
    await log.close().catch(() => undefined);
    expect(failure).toMatch(/no suitable peers for placement: JetStream could not place 5 copies of the stream: fewer nats-servers with JetStream are up, or in their cluster, than --replicas 5 asks for/);
  }, 60_000);
});
