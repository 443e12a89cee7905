// Goal: a cluster node whose gossip address is taken stops the start with exit code 2 naming the flag and
// the address, as a taken HTTP or gRPC port does, instead of libp2p's advice about its own settings and a
// stack trace; the node that holds the port keeps serving, and the catalog holds no node for the start
// that stopped (it would count towards the majority the failure detector needs, and never be alive).
import { rmSync } from 'node:fs';
import { expect, test } from 'vitest';
import { freePort } from '../../cluster/dev/nats-launcher.ts';
import { call, startAgent, tempDataDir } from '../support/agent.ts';
import { useSuiteNats } from '../support/jetstream.ts';

const suite = useSuiteNats(1);

test('a gossip address in use stops the start: exit 2 naming the flag and the address', async () => {
  const port = await freePort();
  const cluster = ['--nats', suite.nats.urls.join(','), '--replicas', '1', '--gossip-listen', `127.0.0.1:${port}`];
  const first = await startAgent({ args: [...cluster, '--node-name', 'first'] });
  try {
    const dataDir = tempDataDir();
    const second = await startAgent({ dataDir, args: [...cluster, '--node-name', 'second'] }).then(
      async (a) => { await a.stop(); return 'started'; }, (err: Error) => err.message);
    rmSync(dataDir, { recursive: true, force: true });
    expect(second).toMatch(/exited \(2\) before ready/);
    expect(second).toContain(`--gossip-listen 127.0.0.1:${port}: address 127.0.0.1:${port} is already in use`);
    expect(second).not.toContain('faultTolerance');
    expect((await call(first.url, 'PUT', '/v1/kv/still', 'serving')).status).toBe(200);
    const nodes = (await call(first.url, 'GET', '/v1/catalog/nodes?consistent')).json<Array<{ Node: string }>>();
    expect(nodes.map((n) => n.Node)).toEqual(['first']);
  } finally {
    await first.stop();
    first.cleanup();
  }
}, 90_000);
