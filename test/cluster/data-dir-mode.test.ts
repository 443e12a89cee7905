// Goal: a data dir serves one kind of node, on started agents. A cluster node marks its data dir once its
// log is open; started again on that dir without --nats (a flag lost from a unit file), it stops with exit
// code 2 naming the dir and what to do, instead of serving an empty registry of its own and granting locks
// the cluster's clients hold. A single node's data dir, which holds its registry, is refused to a start
// with --nats the same way (before any connection to NATS), and still serves as a single node. Removing the
// marker, as the message says, lets the node start alone with an empty registry. A cluster node's dir
// removed while it runs is made again with its lock, node ID and marker, so all of this still holds.
import { existsSync, lstatSync, readFileSync, readlinkSync, rmSync } from 'node:fs';
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, test } from 'vitest';
import { call, startAgent, tempDataDir } from '../support/agent.ts';
import { TestCluster } from '../support/cluster-node.ts';
import { until } from '../support/until.ts';

const cluster = new TestCluster(['solo']);
const dirs: string[] = [];

beforeAll(async () => {
  await cluster.prepare();
}, 120_000);
afterAll(async () => {
  await cluster.stop();
  for (const d of dirs) rmSync(d, { recursive: true, force: true });
});

describe('a data dir serves one kind of node', () => {
  test('a cluster node\'s dir is refused to a start without --nats, until its marker is removed', async () => {
    const node = await cluster.start('solo');
    const dataDir = cluster.dataDirs.get('solo')!;
    expect((await call(node.url, 'PUT', '/v1/kv/cluster/key', 'in the stream')).status).toBe(200);
    expect(existsSync(join(dataDir, 'cluster'))).toBe(true);
    expect(await node.stop()).toBe(0);

    const refused = await startAgent({ dataDir }).then(() => 'started', (err: Error) => err.message);
    expect(refused).toMatch(/exited \(2\) before ready/);
    expect(refused).toContain(`--data-dir ${dataDir}: it belongs to a cluster node`);
    expect(refused).toContain(`remove ${join(dataDir, 'cluster')}`);

    // Started again with --nats, the node serves the cluster's registry as before.
    const again = await cluster.start('solo');
    expect((await call(again.url, 'GET', '/v1/kv/cluster/key?raw')).text).toBe('in the stream');
    expect(await again.stop()).toBe(0);

    rmSync(join(dataDir, 'cluster'));
    const alone = await startAgent({ dataDir });
    expect((await call(alone.url, 'GET', '/v1/kv/cluster/key')).status).toBe(404);
    expect(await alone.stop()).toBe(0);
  }, 120_000);

  test('a cluster node\'s dir removed while it runs gets its lock, node ID and marker back: a start without --nats is still refused', async () => {
    // A dir of its own: the test above left a single node's files in the first one.
    const dataDir = tempDataDir();
    dirs.push(dataDir);
    cluster.dataDirs.set('solo', dataDir);
    const node = await cluster.start('solo');
    const nodeId = (await call(node.url, 'GET', '/v1/agent/self')).json<{ Config: { NodeID: string } }>().Config.NodeID;
    rmSync(dataDir, { recursive: true, force: true });
    // LOCK is a symlink to its holder's text, which names no file: lstat, not exists.
    const present = (f: string) => lstatSync(join(dataDir, f), { throwIfNoEntry: false }) !== undefined;
    await until('the dir made again', async () => (['LOCK', 'node-id', 'cluster'].every(present) ? true : undefined), 15_000);
    expect(readFileSync(join(dataDir, 'node-id'), 'utf8').trim()).toBe(nodeId);
    expect(readlinkSync(join(dataDir, 'LOCK'))).toMatch(new RegExp(`^${node.proc.pid}:`));
    // A second agent on the path is refused while the node runs.
    const second = await startAgent({ dataDir, args: ['--nats', 'nats://127.0.0.1:9'] }).then(() => 'started', (err: Error) => err.message);
    expect(second).toMatch(/exited \(2\) before ready/);
    expect(await node.stop()).toBe(0);

    const refused = await startAgent({ dataDir }).then(() => 'started', (err: Error) => err.message);
    expect(refused).toContain(`--data-dir ${dataDir}: it belongs to a cluster node`);
    const again = await cluster.start('solo');
    expect((await call(again.url, 'GET', '/v1/agent/self')).json<{ Config: { NodeID: string } }>().Config.NodeID).toBe(nodeId);
    expect(await again.stop()).toBe(0);
  }, 120_000);

  test('a single node\'s dir is refused to a start with --nats, and still serves as a single node', async () => {
    const dataDir = tempDataDir();
    dirs.push(dataDir);
    const single = await startAgent({ dataDir });
    expect((await call(single.url, 'PUT', '/v1/kv/single/key', 'in the wal')).status).toBe(200);
    expect(await single.stop()).toBe(0);

    // No nats-server listens there: the refusal comes before any connection.
    const refused = await startAgent({ dataDir, args: ['--nats', 'nats://127.0.0.1:9'] }).then(() => 'started', (err: Error) => err.message);
    expect(refused).toMatch(/exited \(2\) before ready/);
    expect(refused).toContain(`--data-dir ${dataDir}: it holds a single node's embedded log`);
    expect(refused).toContain('roster snapshot save');
    expect(existsSync(join(dataDir, 'cluster'))).toBe(false);

    const again = await startAgent({ dataDir });
    expect((await call(again.url, 'GET', '/v1/kv/single/key?raw')).text).toBe('in the wal');
    expect(await again.stop()).toBe(0);
  }, 60_000);
});
