// Goal: an agent never removes an attachment (a large restore's snapshot file beside the log) that a start
// could still need. Five large restores in a row, each followed by a write, then SIGKILL: the agent starts
// again with every acknowledged write and the last restore's state. A restore makes a log snapshot due at
// once, so the restore entry need not be replayed from its attachment for long.
import { readdirSync } from 'node:fs';
import { join } from 'node:path';
import { describe, expect, test } from 'vitest';
import { call, sleep, type Agent } from '../support/agent.ts';
import { dataDirAgents, largeKeys, largeValueOf } from '../support/data-dir-agents.ts';

const { dataDir: newDataDir, agentOn } = dataDirAgents('kill9');
const keys = largeKeys;
const valueOf = largeValueOf;

/** Five distinct snapshot files of more than 256 KiB: the big keys, and `variant/<k>` for k up to its number. */
async function largeSnapshots(agent: Agent): Promise<Buffer[]> {
  for (const key of keys) expect((await call(agent.url, 'PUT', `/v1/kv/${key}`, valueOf(key))).status).toBe(200);
  const files: Buffer[] = [];
  for (let k = 1; k <= 5; k += 1) {
    expect((await call(agent.url, 'PUT', `/v1/kv/variant/${k}`, `v${k}`)).status).toBe(200);
    files.push((await call(agent.url, 'GET', '/v1/snapshot')).body);
  }
  return files;
}

/** The indexes of the log snapshots in a data dir. */
const snapshotIndexes = (dataDir: string): number[] => readdirSync(join(dataDir, 'snap'))
  .filter((n) => /^\d{20}\.snap$/.test(n)).map((n) => Number(n.slice(0, 20)));

describe('attachments of large restores', () => {
  test('five large restores in a row, then SIGKILL: the agent starts with every acknowledged write', async () => {
    const dataDir = newDataDir();
    const agent = await agentOn(dataDir);
    const files = await largeSnapshots(agent);
    for (const [k, file] of files.entries()) {
      expect((await call(agent.url, 'PUT', '/v1/snapshot', file)).status).toBe(200);
      expect((await call(agent.url, 'PUT', `/v1/kv/after/${k + 1}`, 'x')).status).toBe(200);
    }
    await agent.kill9();

    const again = await agentOn(dataDir);
    expect((await call(again.url, 'GET', '/v1/kv/after/5?raw')).text).toBe('x');
    expect((await call(again.url, 'GET', '/v1/kv/variant/5?raw')).text).toBe('v5');
    for (const key of keys.slice(0, 3)) expect((await call(again.url, 'GET', `/v1/kv/${key}?raw`)).text).toBe(valueOf(key));
    // Each restore replaced the state: the writes after the earlier ones went with it.
    expect((await call(again.url, 'GET', '/v1/kv/after/4')).status).toBe(404);
  });

  test('a restore makes a log snapshot due at once, and the attachment goes once two snapshots lie past it', async () => {
    const dataDir = newDataDir();
    const agent = await agentOn(dataDir);
    const [file] = await largeSnapshots(agent);
    const restored = await call(agent.url, 'PUT', '/v1/snapshot', file);
    expect(restored.status).toBe(200);
    const index = restored.json<{ Index: number }>().Index;
    for (let tries = 0; !snapshotIndexes(dataDir).some((i) => i >= index); tries += 1) {
      expect(tries).toBeLessThan(100);
      await sleep(100);
    }
    // The newest snapshot holds the restore; the fallback before it does not: the attachment stays.
    expect(readdirSync(join(dataDir, 'attachments'))).toHaveLength(1);
    // A clean stop snapshots again: both snapshots kept lie past the restore, which nothing replays now.
    expect((await call(agent.url, 'PUT', '/v1/kv/after', 'x')).status).toBe(200);
    await agent.stop();
    expect(readdirSync(join(dataDir, 'attachments'))).toEqual([]);
    const again = await agentOn(dataDir);
    expect((await call(again.url, 'GET', '/v1/kv/after?raw')).text).toBe('x');
    expect((await call(again.url, 'GET', '/v1/kv/variant/1?raw')).text).toBe('v1');
  });
});
