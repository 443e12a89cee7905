// Goal: a single node's data dir whose log is gone — `wal/` and `snap/` removed by an operator, or their
// files emptied — no longer starts as an empty registry as if nothing had been stored: the start stops
// (exit 2) saying what happened and how to go on. Removing the marker it names starts an empty registry
// on purpose; a data dir whose first start never got that far (no marker) starts as a new one.
import { readdirSync, rmSync, truncateSync, unlinkSync } from 'node:fs';
import { join } from 'node:path';
import { afterEach, expect, test } from 'vitest';
import { call, startAgent, tempDataDir, type Agent } from '../support/agent.ts';

const started: Agent[] = [];
const dirs: string[] = [];
afterEach(async () => {
  for (const a of started.splice(0)) await a.stop();
  for (const d of dirs.splice(0)) rmSync(d, { recursive: true, force: true });
});

async function agentOn(dataDir: string): Promise<Agent> {
  const agent = await startAgent({ dataDir });
  started.push(agent);
  return agent;
}

/** A data dir an agent has kept a key in, then stopped cleanly. */
async function usedDataDir(): Promise<string> {
  const dataDir = join(tempDataDir(), 'data');
  dirs.push(dataDir);
  const agent = await agentOn(dataDir);
  expect((await call(agent.url, 'PUT', '/v1/kv/kept', 'value')).status).toBe(200);
  expect(await started.pop()!.stop()).toBe(0);
  return dataDir;
}

/** The start's failure text, or 'started'. */
async function startOutcome(dataDir: string): Promise<string> {
  return startAgent({ dataDir }).then(async (a) => { started.push(a); return 'started'; }, (err: Error) => err.message);
}

test('wal/ and snap/ removed: the start stops naming the marker; removing the marker starts an empty registry', async () => {
  const dataDir = await usedDataDir();
  rmSync(join(dataDir, 'wal'), { recursive: true });
  rmSync(join(dataDir, 'snap'), { recursive: true });
  const refused = await startOutcome(dataDir);
  expect(refused).toMatch(/exited \(2\) before ready/);
  expect(refused).toContain(`--data-dir ${dataDir}: its log is gone: wal/ and snap/ hold nothing, but a registry was kept here before (${join(dataDir, 'embedded-log')})`);
  unlinkSync(join(dataDir, 'embedded-log'));
  expect(await startOutcome(dataDir)).toBe('started');
  expect((await call(started[0]!.url, 'GET', '/v1/kv/kept')).status).toBe(404);
}, 60_000);

test('the log\'s files emptied in place: the start stops', async () => {
  const dataDir = await usedDataDir();
  for (const dir of ['wal', 'snap']) {
    for (const name of readdirSync(join(dataDir, dir))) truncateSync(join(dataDir, dir, name), 0);
  }
  expect(await startOutcome(dataDir)).toContain('its log is gone');
}, 60_000);

test('a kept log starts as before, and a data dir never marked (a first start stopped early) starts as a new one', async () => {
  const dataDir = await usedDataDir();
  expect(await startOutcome(dataDir)).toBe('started');
  expect((await call(started[0]!.url, 'GET', '/v1/kv/kept?raw')).text).toBe('value');
  expect(await started.pop()!.stop()).toBe(0);
  rmSync(join(dataDir, 'wal'), { recursive: true });
  rmSync(join(dataDir, 'snap'), { recursive: true });
  unlinkSync(join(dataDir, 'embedded-log'));
  expect(await startOutcome(dataDir)).toBe('started');
}, 60_000);
