// Goal: a WAL segment cut short from outside never leaves an agent that cannot start again. While the agent
// runs (`: > wal/*.seg`), the write that meets the cut is refused and changes nothing, the log is written
// afresh (a snapshot of the state as of the last acknowledged write, a new segment), and after a SIGKILL
// every acknowledged write is there. After a clean stop, segments emptied or removed are not needed: the
// shutdown snapshot holds every entry, and the agent starts from it. After a crash, damage the snapshot
// cannot stand in for is refused (exit 2) with one `roster:` line saying what to do, and doing it works.
import { execSync } from 'node:child_process';
import { existsSync, readdirSync, renameSync, rmSync, truncateSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { afterEach, describe, expect, test } from 'vitest';
import { call, expectError, startAgent, tempDataDir, type Agent } from '../support/agent.ts';
import { until } from '../support/until.ts';
import { exitCodeOf } from '../faults/wal-crash-support.ts';

const started: Agent[] = [];
const dirs: string[] = [];
afterEach(async () => {
  for (const a of started.splice(0)) await a.kill9();
  for (const d of dirs.splice(0)) rmSync(d, { recursive: true, force: true });
});

async function agentOn(dataDir: string, args: string[] = []): Promise<Agent> {
  const agent = await startAgent({ dataDir, args });
  started.push(agent);
  return agent;
}

function freshDir(): string {
  const dir = tempDataDir();
  dirs.push(dir);
  return dir;
}

const segments = (dataDir: string) => readdirSync(join(dataDir, 'wal')).filter((n) => n.endsWith('.seg')).sort().map((n) => join(dataDir, 'wal', n));

/** PUTs `key` = `key`; true when acknowledged, false when refused as the agent writing its log afresh. */
async function put(agent: Agent, key: string): Promise<boolean> {
  const r = await call(agent.url, 'PUT', `/v1/kv/${key}`, key);
  if (r.status === 200) return true;
  expectError(r, 503, 1016);
  return false;
}

async function putAll(agent: Agent, keys: string[]): Promise<void> {
  for (const key of keys) expect(await put(agent, key)).toBe(true);
}

async function expectKeys(agent: Agent, keys: string[]): Promise<void> {
  const missing: string[] = [];
  for (const key of keys) if ((await call(agent.url, 'GET', `/v1/kv/${key}?raw`)).text !== key) missing.push(key);
  expect(missing).toEqual([]);
}

const keys = (prefix: string, n: number) => Array.from({ length: n }, (_, k) => `${prefix}/${k}`);

describe('a segment cut short while the agent runs', () => {
  test('the write that meets it is refused, the log is written afresh, and a SIGKILL loses no acknowledged write', async () => {
    const dataDir = freshDir();
    const agent = await agentOn(dataDir, ['--snapshot-every', '40']);
    const acknowledged = keys('before', 50);
    await putAll(agent, acknowledged);
    for (const seg of segments(dataDir)) truncateSync(seg, 0);

    const refused: string[] = [];
    for (let k = 0; k < 5_000 && acknowledged.filter((key) => key.startsWith('after/')).length < 50; k++) {
      if (await put(agent, `after/${k}`)) acknowledged.push(`after/${k}`);
      else refused.push(`after/${k}`);
    }
    expect(refused.length).toBeGreaterThan(0);
    expect(agent.output()).toMatch(/the current segment was cut short while the agent ran/);

    await agent.kill9();
    const again = await agentOn(dataDir);
    await expectKeys(again, acknowledged);
    for (const key of refused) expect((await call(again.url, 'GET', `/v1/kv/${key}`)).status).toBe(404);
  });

  test('an idle agent notices a cut without a write, and a SIGKILL then loses nothing', async () => {
    const dataDir = freshDir();
    const agent = await agentOn(dataDir);
    const acknowledged = keys('idle', 20);
    await putAll(agent, acknowledged);
    const [cut] = segments(dataDir);
    truncateSync(cut!, 0);
    // Written afresh: a snapshot at the last write and a new segment after it, the cut one gone.
    await until('the log written afresh', async () => (segments(dataDir).includes(cut!) ? undefined : true), 15_000);
    await until('writes accepted', async () => ((await put(agent, 'idle/last')) ? true : undefined), 15_000);

    await agent.kill9();
    const again = await agentOn(dataDir);
    await expectKeys(again, [...acknowledged, 'idle/last']);
  });
});

describe('segments damaged while the agent is stopped', () => {
  test('after a clean stop, emptied or removed segments are not needed: the agent starts from the shutdown snapshot', async () => {
    const dataDir = freshDir();
    const first = await agentOn(dataDir);
    await putAll(first, keys('clean', 30));
    expect(await first.stop()).toBe(0);
    for (const seg of segments(dataDir)) writeFileSync(seg, '');

    const second = await agentOn(dataDir);
    await expectKeys(second, keys('clean', 30));
    expect(second.output()).toMatch(/the log was closed cleanly at the snapshot/);
    await putAll(second, keys('more', 10));
    expect(await second.stop()).toBe(0);
    rmSync(join(dataDir, 'wal'), { recursive: true });

    const third = await agentOn(dataDir);
    await expectKeys(third, [...keys('clean', 30), ...keys('more', 10)]);
  });

  test('after a crash, removed segments are refused with what to do; doing it starts from the snapshot', async () => {
    const dataDir = freshDir();
    const first = await agentOn(dataDir, ['--snapshot-every', '10']);
    await putAll(first, keys('crash', 25));
    await until('a snapshot', async () => (readdirSync(join(dataDir, 'snap')).some((n) => n.endsWith('.snap')) ? true : undefined), 10_000);
    await first.kill9();
    const walDir = join(dataDir, 'wal');
    renameSync(walDir, `${walDir}.lost`);

    const err: unknown = await agentOn(dataDir).then(() => undefined, (e: unknown) => e);
    expect(exitCodeOf(err)).toBe(2);
    const line = (err as Error).message.split('\n').find((l) => l.startsWith('roster: '));
    const m = /snapshot at (\d+) but no segment in .* start from the snapshot at \1, .* an empty one, (mv \S+ \S+ && mkdir (\S+) && touch (\S+))$/.exec(line ?? '');
    expect(m, line).not.toBeNull();
    // The advice, followed as given.
    expect(m![3]).toBe(walDir);
    execSync(m![2]!);
    expect(existsSync(m![4]!)).toBe(true);

    // The state as of the snapshot: the writes up to some point, in order, and none after it.
    const second = await agentOn(dataDir);
    const present: boolean[] = [];
    for (const key of keys('crash', 25)) present.push((await call(second.url, 'GET', `/v1/kv/${key}?raw`)).text === key);
    const held = present.indexOf(false) === -1 ? 25 : present.indexOf(false);
    expect(held).toBeGreaterThan(0);
    expect(present.slice(held).every((p) => !p)).toBe(true);
  });
});
