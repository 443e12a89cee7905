// Goal: the embedded log stays bounded across crash restarts. A snapshot is due once two segments' worth
// (128 MiB) of log lies past the last one, counting the log a start found past its snapshot, not only what
// the process wrote since: an agent killed each time before it had written 128 MiB itself would otherwise
// never snapshot, and its data dir would grow by all it wrote in every life.
import { readdirSync, rmSync } from 'node:fs';
import { join } from 'node:path';
import { afterEach, expect, test } from 'vitest';
import { call, startAgent, tempDataDir, type Agent } from '../support/agent.ts';
import { logLines } from '../faults/wal-crash-support.ts';

const started: Agent[] = [];
const dirs: string[] = [];
afterEach(async () => {
  for (const a of started.splice(0)) await a.kill9();
  for (const d of dirs.splice(0)) rmSync(d, { recursive: true, force: true });
});

/** 500 KB values, 110 of them a life: about 73 MB of log (as base64 in its entries), under the 128 MiB due. */
const perLife = 110;
const valueOf = (life: number, k: number): string => `${life}-${k}-`.padEnd(500_000, 'v');

/** One life: starts on `dataDir`, overwrites four keys `perLife` times, is SIGKILLed; returns its output. */
async function life(dataDir: string, n: number): Promise<string> {
  const agent = await startAgent({ dataDir });
  started.push(agent);
  for (let k = 0; k < perLife; k++) expect((await call(agent.url, 'PUT', `/v1/kv/grow/${k % 4}`, valueOf(n, k))).status).toBe(200);
  // A snapshot due at a write is saved in the background: give it time to land before the kill.
  for (let waited = 0; waited < 10_000 && !/snapshot saved/.test(agent.output()) && n > 0; waited += 100) await new Promise((r) => setTimeout(r, 100));
  await agent.kill9();
  return agent.output();
}

test('SIGKILLed before writing 128 MiB in each life: the second life snapshots, counting the log the first left', async () => {
  const dataDir = tempDataDir();
  dirs.push(dataDir);
  const first = await life(dataDir, 0);
  expect(logLines(first).filter((l) => l.msg === 'snapshot saved')).toEqual([]);
  const second = await life(dataDir, 1);
  const saved = logLines(second).filter((l) => l.msg === 'snapshot saved');
  expect(saved.length, 'no snapshot in the second life').toBeGreaterThan(0);
  expect(readdirSync(join(dataDir, 'snap')).filter((n) => n.endsWith('.snap')).length).toBeGreaterThan(0);

  // What was acknowledged is there after the snapshot, from it and the log after it.
  const third = await startAgent({ dataDir });
  started.push(third);
  for (let k = perLife - 4; k < perLife; k++) expect((await call(third.url, 'GET', `/v1/kv/grow/${k % 4}?raw`)).text).toBe(valueOf(1, k));
}, 180_000);
