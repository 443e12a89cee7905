// Goal: a data dir removed while the agent runs (an `rm -rf` by mistake, a cleaner of temporary files),
// or moved away (an `mv` taken for a backup), loses nothing acknowledged. The write that meets the removal answers 503 and changes nothing; within
// seconds the agent makes the dir again — its lock, its node ID, a snapshot of its state as of the last
// acknowledged write, a new segment — and takes writes again; an idle agent does so without any write.
// After a SIGKILL and a start on the same path, every acknowledged key, session and lock is there.
// A LOCK removed by hand (taken for a stale one) is put back within a second, so a second agent is refused;
// an agent that finds another live agent holding its LOCK stops (exit 70) rather than write beside it.
import { spawn } from 'node:child_process';
import { existsSync, readFileSync, readlinkSync, renameSync, rmSync, symlinkSync } from 'node:fs';
import { join } from 'node:path';
import { afterEach, describe, expect, test } from 'vitest';
import { call, client, expectError, startAgent, tempDataDir, type Agent } from '../support/agent.ts';
import { until } from '../support/until.ts';
import { startTicksOf } from '../../src/util/data-dir-lock.ts';

const started: Agent[] = [];
const dirs: string[] = [];
afterEach(async () => {
  for (const a of started.splice(0)) await a.kill9();
  for (const d of dirs.splice(0)) rmSync(d, { recursive: true, force: true });
});

async function agentOn(parent: string, args: string[] = []): Promise<Agent> {
  const agent = await startAgent({ dataDir: join(parent, 'data'), args });
  started.push(agent);
  return agent;
}

function freshParent(): string {
  const parent = tempDataDir();
  dirs.push(parent);
  return parent;
}

const nodeIdOf = async (agent: Agent) => (await call(agent.url, 'GET', '/v1/agent/self')).json<{ Config: { NodeID: string } }>().Config.NodeID;

/** The data dir holds what a start needs: the agent's lock, its node ID, a snapshot and a segment. */
function expectMadeAgain(dataDir: string, agent: Agent, nodeId: string): void {
  expect(readlinkSync(join(dataDir, 'LOCK'))).toMatch(new RegExp(`^${agent.proc.pid}:`));
  expect(readFileSync(join(dataDir, 'node-id'), 'utf8').trim()).toBe(nodeId);
  expect(existsSync(join(dataDir, 'snap'))).toBe(true);
  expect(existsSync(join(dataDir, 'wal'))).toBe(true);
}

/**
 * `rm -rf` of a running agent's data dir. The agent takes its lock again each second when it finds it gone
 * (so that a second agent is refused), and when that lands between the removal of the dir's files and of
 * the dir itself the dir is not empty any more: rm fails, as it would for an operator, and is run again.
 */
function removeWhileRunning(dir: string): void {
  rmSync(dir, { recursive: true, force: true, maxRetries: 5, retryDelay: 20 });
}

describe('a data dir removed while the agent runs', () => {
  test('the write that meets it is refused and changes nothing; writes resume and every acknowledged one survives a SIGKILL', async () => {
    const parent = freshParent();
    const agent = await agentOn(parent);
    const c = client(agent);
    const nodeId = await nodeIdOf(agent);
    const session = await c.session({ Name: 'holder', LockDelay: '0s' });
    expect((await call(agent.url, 'PUT', `/v1/kv/jobs/lock?acquire=${session}`, 'held')).text).toBe('true');
    for (let k = 0; k < 20; k++) expect((await call(agent.url, 'PUT', `/v1/kv/before/${k}`, `v${k}`)).status).toBe(200);

    removeWhileRunning(agent.dataDir);
    const refused = await call(agent.url, 'PUT', '/v1/kv/refused', 'x');
    const body = expectError(refused, 503, 1016);
    expect(body.message).toMatch(/data dir was removed/);
    expect(refused.headers.get('retry-after')).toBe('1');
    expect((await call(agent.url, 'GET', '/v1/kv/refused')).status).toBe(404);
    // Reads are served meanwhile, from the state in memory.
    expect((await call(agent.url, 'GET', '/v1/kv/before/7?raw')).text).toBe('v7');

    const after: string[] = [];
    await until('writes accepted again', async () => ((await call(agent.url, 'PUT', '/v1/kv/after/0', 'a0')).status === 200 ? true : undefined), 15_000);
    after.push('after/0');
    for (let k = 1; k < 20; k++) {
      expect((await call(agent.url, 'PUT', `/v1/kv/after/${k}`, `a${k}`)).status).toBe(200);
      after.push(`after/${k}`);
    }
    expectMadeAgain(agent.dataDir, agent, nodeId);
    expect(agent.output()).toMatch(/the data dir was removed or moved while the agent ran/);

    await agent.kill9();
    const again = await agentOn(parent);
    expect(await nodeIdOf(again)).toBe(nodeId);
    for (let k = 0; k < 20; k++) expect((await call(again.url, 'GET', `/v1/kv/before/${k}?raw`)).text).toBe(`v${k}`);
    for (const [k, key] of after.entries()) expect((await call(again.url, 'GET', `/v1/kv/${key}?raw`)).text).toBe(`a${k}`);
    expect((await call(again.url, 'GET', '/v1/kv/refused')).status).toBe(404);
    const lock = (await call(again.url, 'GET', '/v1/kv/jobs/lock')).json<{ Session: string; LockIndex: number }[]>()[0]!;
    expect(lock).toMatchObject({ Session: session, LockIndex: 1 });
    expect((await call(again.url, 'GET', `/v1/session/info/${session}`)).json<unknown[]>()).toHaveLength(1);
  });

  test('a data dir moved away under a stream of writes is made again at its path; a SIGKILL then loses no acknowledged write', async () => {
    const parent = freshParent();
    const agent = await agentOn(parent);
    const nodeId = await nodeIdOf(agent);
    const acknowledged: string[] = [];
    let refused = 0;
    let acknowledgedSinceRefused = 0;
    const put = async (key: string) => {
      const r = await call(agent.url, 'PUT', `/v1/kv/${key}`, key);
      if (r.status === 200) { acknowledged.push(key); acknowledgedSinceRefused++; }
      else { expectError(r, 503, 1016); refused++; acknowledgedSinceRefused = 0; }
    };
    for (let k = 0; k < 50; k++) await put(`before/${k}`);
    renameSync(agent.dataDir, join(parent, 'data.moved'));
    // Writes go on, one after another, until the dir is back at its path (written afresh: writes refused
    // meanwhile) and writes are acknowledged again.
    let k = 0;
    const stopAt = Date.now() + 20_000;
    while (Date.now() < stopAt && !(existsSync(join(agent.dataDir, 'wal')) && refused > 0 && acknowledgedSinceRefused >= 20)) await put(`during/${k++}`);
    for (let j = 0; j < 20; j++) await put(`after/${j}`);
    expect(refused).toBeGreaterThan(0);
    expectMadeAgain(agent.dataDir, agent, nodeId);

    await agent.kill9();
    const again = await agentOn(parent);
    expect(await nodeIdOf(again)).toBe(nodeId);
    const lost: string[] = [];
    for (const key of acknowledged) if ((await call(again.url, 'GET', `/v1/kv/${key}?raw`)).text !== key) lost.push(key);
    expect(lost).toEqual([]);
    expect(acknowledged.filter((key) => key.startsWith('after/'))).toHaveLength(20);
  });

  test('an idle agent makes the dir again without a write, and a SIGKILL then loses nothing (consul dialect)', async () => {
    const parent = freshParent();
    const agent = await agentOn(parent, ['--dialect', 'consul']);
    const nodeId = await nodeIdOf(agent);
    for (let k = 0; k < 10; k++) expect((await call(agent.url, 'PUT', `/v1/kv/idle/${k}`, `i${k}`)).text).toBe('true');

    removeWhileRunning(agent.dataDir);
    await until('the data dir made again', async () => (existsSync(join(agent.dataDir, 'wal')) && existsSync(join(agent.dataDir, 'node-id')) ? true : undefined), 15_000);
    await until('writes accepted', async () => ((await call(agent.url, 'PUT', '/v1/kv/idle/last', 'l')).text === 'true' ? true : undefined), 15_000);
    expectMadeAgain(agent.dataDir, agent, nodeId);

    await agent.kill9();
    const again = await agentOn(parent, ['--dialect', 'consul']);
    expect(await nodeIdOf(again)).toBe(nodeId);
    for (let k = 0; k < 10; k++) expect((await call(again.url, 'GET', `/v1/kv/idle/${k}?raw`)).text).toBe(`i${k}`);
    expect((await call(again.url, 'GET', '/v1/kv/idle/last?raw')).text).toBe('l');
  });

  test('a LOCK removed by hand is put back, so a second agent is refused; one taken by another live agent stops this one', async () => {
    const parent = freshParent();
    const agent = await agentOn(parent);
    const lockPath = join(agent.dataDir, 'LOCK');
    const mine = readlinkSync(lockPath);
    rmSync(lockPath);
    await until('the LOCK put back', async () => readlinkSync(lockPath), 10_000);
    expect(readlinkSync(lockPath)).toBe(mine);
    const second = await startAgent({ dataDir: agent.dataDir }).then(() => 'started', (err: Error) => err.message);
    expect(second).toMatch(/exited \(2\) before ready/);
    expect(second).toContain('in use by another roster agent');
    expect((await call(agent.url, 'PUT', '/v1/kv/still', 'here')).status).toBe(200);

    // Another live process now holds the LOCK (swapped in whole, as a takeover does).
    const other = spawn('sleep', ['60'], { stdio: 'ignore' });
    try {
      symlinkSync(`${other.pid}:${startTicksOf(other.pid!) ?? ''}:elsewhere`, `${lockPath}.other`);
      renameSync(`${lockPath}.other`, lockPath);
      const code = await until('the agent stopped', async () => agent.proc.exitCode ?? undefined, 10_000);
      expect(code).toBe(70);
      expect(agent.output()).toMatch(/another agent has taken this data dir/);
      expect(readlinkSync(lockPath)).toMatch(new RegExp(`^${other.pid}:`));
    } finally {
      other.kill('SIGKILL');
    }
  });
});
