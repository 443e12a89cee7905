// Goal: a data dir the agent cannot use because of what an operator left in it — a plain file where the log
// keeps a directory (`wal`, `snap`) — stops the start with exit code 2
// and a message naming the path and what to do, as a lock it cannot take does; not a bare system error and
// exit code 1.
import { mkdirSync, rmSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { afterEach, expect, test } from 'vitest';
import { startAgent, tempDataDir, type Agent } from '../support/agent.ts';

const started: Agent[] = [];
const dirs: string[] = [];
afterEach(async () => {
  for (const a of started.splice(0)) await a.stop();
  for (const d of dirs.splice(0)) rmSync(d, { recursive: true, force: true });
});

async function startOutcome(dataDir: string): Promise<string> {
  return startAgent({ dataDir }).then(async (a) => { started.push(a); return 'started'; }, (err: Error) => err.message);
}

function freshDataDir(): string {
  const dataDir = join(tempDataDir(), 'data');
  dirs.push(dataDir);
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
