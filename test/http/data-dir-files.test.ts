// Goal: a data dir the agent cannot use because of what an operator left in it — a plain file where the log
// keeps a directory (`wal`, `snap`) — stops the start with exit code 2
// and a message naming the path and what to do, as a lock it cannot take does; not a bare system error and
// exit code 1.
import { mkdirSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { expect, test } from 'vitest';
import { dataDirAgents } from '../support/data-dir-agents.ts';

const { dataDir: newDataDir, agentOn } = dataDirAgents('stop');

async function startOutcome(dataDir: string): Promise<string> {
  return agentOn(dataDir).then(() => 'started', (err: Error) => err.message);
}

function freshDataDir(): string {
  const dataDir = join(newDataDir(), 'data');
  mkdirSync(dataDir, { recursive: true });
  return dataDir;
}

test.each(['wal', 'snap'])('a plain file named %s in the data dir: exit 2 naming it', async (name) => {
  const dataDir = freshDataDir();
  writeFileSync(join(dataDir, name), 'not a directory');
  const refused = await startOutcome(dataDir);
  expect(refused).toMatch(/exited \(2\) before ready/);
  expect(refused).toContain(`--data-dir ${dataDir}: cannot use ${join(dataDir, name)}: a file is where the agent keeps a directory`);
}, 60_000);
