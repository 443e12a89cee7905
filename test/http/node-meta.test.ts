// Goal: node_meta (config file) and --node-meta (flags), as Consul's agent settings, against a really started
// agent: the node's meta in the catalog and /v1/agent/self, a flag replacing the file's value of its key, the
// two keys a Consul agent adds to its own node in the consul dialect, the agent putting its meta back when a
// catalog registration changed it (as Consul's anti-entropy does), a restart with other meta, and meta that
// breaks Consul's rules refused at start (exit 2) with the reason.
import { mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, test } from 'vitest';
import { client, startAgent, tempDataDir, type Agent } from '../support/agent.ts';

let dir: string;
const configFile = (config: unknown) => {
  const file = join(dir, `config-${Math.random().toString(36).slice(2)}.json`);
  writeFileSync(file, JSON.stringify(config));
  return file;
};
beforeAll(() => { dir = mkdtempSync(join(tmpdir(), 'roster-node-meta-')); });
afterAll(() => rmSync(dir, { recursive: true, force: true }));

const nodeMeta = async (agent: Agent): Promise<Record<string, string>> => {
  const r = await client(agent).get('/v1/catalog/node/node1');
  expect(r.status, r.text).toBe(200);
  return r.json<{ Node: { Meta: Record<string, string> } }>().Node.Meta;
};

describe.each(['seed', 'consul'] as const)('%s dialect', (dialect) => {
  const consulKeys = dialect === 'consul' ? { 'consul-network-segment': '', 'consul-version': '1.21.4' } : {};
  const dialectArgs = dialect === 'consul' ? ['--dialect', 'consul'] : [];

  test('the file\'s pairs and the flags\' (a flag replaces its key\'s value) are the node\'s meta; a registration changing it is undone; a restart takes new meta', async () => {
    const dataDir = tempDataDir();
    let agent: Agent | undefined;
    try {
      const file = configFile({ node_meta: { rack: 'r1', env: 'staging' } });
      agent = await startAgent({ dataDir, args: ['--config-file', file, '--node-meta', 'env:prod', '--node-meta', 'url:http://a:1', ...dialectArgs] });
      const want = { rack: 'r1', env: 'prod', url: 'http://a:1', ...consulKeys };
      await expect.poll(() => nodeMeta(agent!)).toEqual(want);
      expect((await client(agent).get('/v1/agent/self')).json<{ Meta: unknown }>().Meta).toEqual(want);
      expect((await client(agent).get('/v1/catalog/nodes?node-meta=env:prod')).json<{ Node: string }[]>().map((n) => n.Node)).toEqual(['node1']);

      const address = (await client(agent).get('/v1/catalog/node/node1')).json<{ Node: { Address: string } }>().Node.Address;
      const r = await client(agent).put('/v1/catalog/register', { Node: 'node1', Address: address, NodeMeta: { env: 'dev' } });
      expect(r.status, r.text).toBe(200);
      await expect.poll(() => nodeMeta(agent!)).toEqual(want);

      expect(await agent.stop()).toBe(0);
      agent = await startAgent({ dataDir, args: ['--node-meta', 'zone:z2', ...dialectArgs] });
      await expect.poll(() => nodeMeta(agent!)).toEqual({ zone: 'z2', ...consulKeys });
    } finally {
      await agent?.stop();
      rmSync(dataDir, { recursive: true, force: true });
    }
  }, 60_000);
});

test('meta that breaks Consul\'s rules stops the start (exit 2), naming the reason', async () => {
  const tooMany = Object.fromEntries(Array.from({ length: 65 }, (_, i) => [`k${i}`, 'v']));
  const cases: [string[], RegExp][] = [
    [['--node-meta', 'consul-version:1'], /node_meta: Couldn't load metadata pair \('consul-version', '1'\): Key prefix 'consul-' is reserved/],
    [['--node-meta', 'a b:1'], /Key contains invalid characters/],
    [['--node-meta', 'novalue'], /--node-meta "novalue": give it as key:value/],
    [['--node-meta', `k:${'v'.repeat(513)}`], /Value is too long \(limit: 512 characters\)/],
    [['--config-file', configFile({ node_meta: tooMany })], /cannot contain more than 64 key\/value pairs/],
    [['--config-file', configFile({ node_meta: { rack: 1 } })], /node_meta\.rack must be a string/],
    [['--config-file', configFile({ node_meta: ['rack:r1'] })], /node_meta must be an object/],
  ];
  for (const [args, reason] of cases) {
    const outcome = await startAgent({ args }).then(async (a) => { await a.stop(); a.cleanup(); return 'started'; }, (err: Error) => err.message);
    expect(outcome, args.join(' ')).toMatch(/agent exited \(2\) before ready/);
    expect(outcome, args.join(' ')).toMatch(reason);
  }
}, 60_000);
