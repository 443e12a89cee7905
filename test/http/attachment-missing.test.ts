// Goal: a restore of a large snapshot keeps the file beside the log (`attachments/<sha256>.bin`) until
// snapshots of the log replace the restore entry. Removed or changed by hand before then, the next start
// stops before the log opens (exit 2) with one `roster:` line naming the file, the restore's index and
// SHA-256, and what to do; the data dir is left as it was, and with a copy of the restored file put back
// there the agent starts with the restored state.
import { createHash } from 'node:crypto';
import { readdirSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { describe, expect, test } from 'vitest';
import { call } from '../support/agent.ts';
import { dataDirAgents, largeKeys, largeValueOf } from '../support/data-dir-agents.ts';
import { exitCodeOf } from '../faults/wal-crash-support.ts';

const { dataDir: newDataDir, agentOn } = dataDirAgents('kill9');
const keys = largeKeys;
const valueOf = largeValueOf;

/**
 * A data dir whose log ends with the restore of a large snapshot (stored as an attachment), left by a
 * SIGKILL before the log snapshot the restore makes due was written: the restore entry is still to replay.
 */
async function restoredThenKilled(): Promise<{ dataDir: string; file: Buffer; attachment: string }> {
  const dataDir = newDataDir();
  const agent = await agentOn(dataDir);
  for (const key of keys) expect((await call(agent.url, 'PUT', `/v1/kv/${key}`, valueOf(key))).status).toBe(200);
  const file = (await call(agent.url, 'GET', '/v1/snapshot')).body;
  for (const key of keys) expect((await call(agent.url, 'DELETE', `/v1/kv/${key}`)).status).toBe(200);
  const restored = await call(agent.url, 'PUT', '/v1/snapshot', file);
  expect(restored.status).toBe(200);
  const sha256 = createHash('sha256').update(file).digest('hex');
  expect(readdirSync(join(dataDir, 'attachments'))).toContain(`${sha256}.bin`);
  await agent.kill9();
  // That snapshot is written at once in the background; the kill may have come after it. Taken away, the
  // data dir is as a kill before it leaves it (it is the only snapshot: no segment was dropped for it).
  const snapDir = join(dataDir, 'snap');
  for (const name of readdirSync(snapDir)) {
    if (Number(name.slice(0, 20)) >= restored.json<{ Index: number }>().Index) rmSync(join(snapDir, name));
  }
  return { dataDir, file, attachment: join(dataDir, 'attachments', `${sha256}.bin`) };
}

async function refusedStart(dataDir: string): Promise<string> {
  const err: unknown = await agentOn(dataDir).then(() => undefined, (e: unknown) => e);
  expect(exitCodeOf(err)).toBe(2);
  const lines = (err as Error).message.split('\n').filter((l) => l.startsWith('roster: '));
  expect(lines).toHaveLength(1);
  return lines[0]!;
}

async function expectRestored(dataDir: string): Promise<void> {
  const agent = await agentOn(dataDir);
  for (const key of keys) expect((await call(agent.url, 'GET', `/v1/kv/${key}?raw`)).text).toBe(valueOf(key));
}

describe('the attachment of a restore still to replay', () => {
  test('removed: the start is refused with one line naming it and what to do; the file put back, the agent starts', async () => {
    const { dataDir, file, attachment } = await restoredThenKilled();
    rmSync(attachment);
    const sha256 = createHash('sha256').update(file).digest('hex');
    const line = await refusedStart(dataDir);
    expect(line).toContain(`the attachment ${attachment} is missing`);
    expect(line).toMatch(/the snapshot file restored at index \d+/);
    expect(line).toContain(`Put a copy of the snapshot file restored then back at ${attachment} (a file whose sha256 is ${sha256})`);
    expect(readdirSync(join(dataDir, 'attachments'))).toEqual([]);

    writeFileSync(attachment, file);
    await expectRestored(dataDir);
  });

  test('changed: the start is refused naming it as damaged; the right bytes put back, the agent starts', async () => {
    const { dataDir, file, attachment } = await restoredThenKilled();
    writeFileSync(attachment, file.subarray(0, file.length - 1));
    const line = await refusedStart(dataDir);
    expect(line).toMatch(new RegExp(`the attachment ${attachment} is damaged \\(its sha256 is [0-9a-f]{64}\\)`));
    expect(readFileSync(attachment).length).toBe(file.length - 1);

    writeFileSync(attachment, file);
    await expectRestored(dataDir);
  });
});
