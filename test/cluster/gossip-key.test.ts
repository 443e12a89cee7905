// Goal: with a gossip key (`encrypt`, as in Consul) only nodes that hold it take part in membership. Two
// nodes with the key see each other; a third node on the same log, its seeds pointing at them, but
// without the key, never becomes a member of theirs nor they of its (it cannot connect, so it can neither
// send heartbeats, such as a forged leave, nor read them), and it warns that it hears no member, naming
// its seeds and what dialling them failed with. Started again with the key, it joins. A key that is not
// 32 bytes of base64 stops the start with exit code 2, and the error does not quote it; so does a
// suspicion timeout not above the heartbeat interval.
import { randomBytes } from 'node:crypto';
import { writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { setTimeout as sleep } from 'node:timers/promises';
import { afterAll, beforeAll, expect, test } from 'vitest';
import { client, startAgent, tempDataDir, type Agent } from '../support/agent.ts';
import { TestCluster } from '../support/cluster-node.ts';
import { until } from '../support/until.ts';

const key = randomBytes(32).toString('base64');
const configDir = tempDataDir();
const withKey = join(configDir, 'with-key.json');
const withoutKey = join(configDir, 'without-key.json');
writeFileSync(withKey, JSON.stringify({ encrypt: key }));
// A short suspicion timeout, so that the node kept out warns that it hears nobody (after twice that) within the test.
writeFileSync(withoutKey, JSON.stringify({ suspicion: '1500ms' }));

let configFile = withKey;
const cluster = new TestCluster(['n1', 'n2', 'n3'], () => ['--config-file', configFile]);

const aliveAt = async (agent: Agent): Promise<string[]> =>
  (await client(agent).get('/v1/agent/members')).json<{ Name: string; Status: number }[]>().filter((m) => m.Status === 1).map((m) => m.Name);

beforeAll(async () => {
  await cluster.prepare();
  await Promise.all([cluster.start('n1'), cluster.start('n2')]);
  for (const n of ['n1', 'n2']) await until(`n1 and n2 alive at ${n}`, async () => ((await aliveAt(cluster.nodes.get(n)!)).length === 2 ? true : undefined), 40_000);
}, 150_000);

afterAll(() => cluster.stop());

test('a node without the gossip key is kept out of membership; with it, it joins', async () => {
  configFile = withoutKey;
  const outsider = await cluster.start('n3');
  // Several redial rounds (every 2 s) and heartbeats (every 1 s): a node that could connect would be in by now.
  await sleep(8_000);
  expect(await aliveAt(cluster.nodes.get('n1')!)).toEqual(['n1', 'n2']);
  expect(await aliveAt(cluster.nodes.get('n2')!)).toEqual(['n1', 'n2']);
  expect(await aliveAt(outsider)).toEqual(['n3']);
  // It says why it may be alone, naming each seed and what dialling it failed with; the members do not.
  const warnings = () => outsider.output().split('\n').filter((l) => l.includes('membership: no other member heard'));
  const warned = await until('the outsider\'s warning', async () => (warnings().length > 0 ? warnings() : undefined));
  expect(warned).toHaveLength(1);
  const seeds = (JSON.parse(warned[0]!) as { seeds: Array<{ addr: string; lastError: string }> }).seeds;
  expect(seeds.map((s) => s.addr).sort()).toEqual([cluster.gossipPorts.get('n1'), cluster.gossipPorts.get('n2')].map((p) => `/ip4/127.0.0.1/tcp/${p}`).sort());
  for (const s of seeds) expect(s.lastError).not.toMatch(/no heartbeat heard/);
  expect(warned[0]).toContain('the same gossip key (encrypt)');
  for (const n of ['n1', 'n2']) expect(cluster.nodes.get(n)!.output()).not.toContain('no other member heard');
  // It leaves (a last heartbeat saying so): nobody with the key hears it.
  expect(await outsider.stop()).toBe(0);
  configFile = withKey;
  const member = await cluster.start('n3');
  for (const viewer of [cluster.nodes.get('n1')!, member]) {
    await until('n3 a member', async () => ((await aliveAt(viewer)).length === 3 ? true : undefined), 40_000);
  }
}, 120_000);

test('a gossip key that is not 32 bytes of base64 stops the start with exit 2, without quoting it', async () => {
  const short = randomBytes(16).toString('base64');
  const file = join(configDir, 'short-key.json');
  writeFileSync(file, JSON.stringify({ encrypt: short }));
  const started = startAgent({ args: ['--config-file', file] });
  await expect(started).rejects.toThrow(/exited \(2\)/);
  await expect(started).rejects.toThrow(/the config file's encrypt: not 32 bytes as base64/);
  await expect(started).rejects.not.toThrow(short);
  const fromEnv = startAgent({ env: { ROSTER_ENCRYPT: 'not base64 at all' } });
  await expect(fromEnv).rejects.toThrow(/ROSTER_ENCRYPT: not 32 bytes as base64/);
}, 60_000);

test('a suspicion timeout not above the heartbeat interval stops the start with exit 2 naming it', async () => {
  const file = join(configDir, 'short-suspicion.json');
  writeFileSync(file, JSON.stringify({ suspicion: '1s' }));
  const started = startAgent({ args: ['--config-file', file] });
  await expect(started).rejects.toThrow(/exited \(2\)/);
  await expect(started).rejects.toThrow(/the config file's suspicion: "1s" is not more than the gossip heartbeat interval \(1s\)/);
});
