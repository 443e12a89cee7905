// Goal: a data dir the agent cannot use while it runs — moved away with a plain file put at its path, or its
// permissions taken away (the agent running as another user than root) — neither stops the agent nor loses
// or half-applies a write. Writes answer 503/1016 with Retry-After ("cannot use its data dir"), gRPC "" is
// NOT_SERVING, the cause is logged once with the path and what to mend; once it is mended, writes are taken
// again without a restart. After a SIGKILL and a start, every acknowledged write is there and no write
// answered otherwise is.
import { chmodSync, chownSync, mkdirSync, renameSync, rmSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { afterEach, describe, expect, test } from 'vitest';
import { call, expectError, startAgent, tempDataDir, type Agent, type AgentOptions } from '../support/agent.ts';
import { processHealth } from '../support/grpc-health.ts';
import { until } from '../support/until.ts';

const started: Agent[] = [];
const dirs: string[] = [];
afterEach(async () => {
  for (const a of started.splice(0)) await a.kill9();
  for (const d of dirs.splice(0)) rmSync(d, { recursive: true, force: true });
});

async function agentOn(dataDir: string, o: AgentOptions = {}): Promise<Agent> {
  const agent = await startAgent({ dataDir, ...o });
  started.push(agent);
  return agent;
}

/** Writers putting keys of their own one after another; what each write was answered. */
function writers(agent: Agent, count: number) {
  const answers = new Map<string, number>();
  let stop = false;
  let n = 0;
  const run = async (w: number) => {
    while (!stop) {
      const key = `load/${w}/${n++}`;
      const r = await call(agent.url, 'PUT', `/v1/kv/${key}`, key).catch(() => undefined);
      answers.set(key, r?.status ?? 0);
      if (r !== undefined && r.status !== 200) {
        expectError(r, 503, 1016);
        await new Promise((res) => setTimeout(res, 20));
      }
    }
  };
  const running = Promise.all(Array.from({ length: count }, (_, w) => run(w)));
  return { answers, stop: async () => { stop = true; await running; } };
}

/** After a start: every key answered 200 reads back, and no key answered otherwise is there. */
async function expectOnlyAcknowledged(agent: Agent, answers: Map<string, number>): Promise<void> {
  const present = new Set((await call(agent.url, 'GET', '/v1/kv/load/?keys')).json<string[]>());
  const lost = [...answers].filter(([k, s]) => s === 200 && !present.has(k)).map(([k]) => k);
  const refusedApplied = [...answers].filter(([k, s]) => s !== 200 && present.has(k)).map(([k, s]) => `${k} (${s})`);
  expect({ lost, refusedApplied }).toEqual({ lost: [], refusedApplied: [] });
  expect([...answers.values()].filter((s) => s === 200).length).toBeGreaterThan(20);
}

/** Writes probes until one is refused as the data dir unusable; returns the probes acknowledged before that. */
async function refusedAsUnusable(agent: Agent): Promise<string[]> {
  const acknowledged: string[] = [];
  let n = 0;
  const r = await until('a write refused as the data dir unusable', async () => {
    const key = `probe/${n++}`;
    const a = await call(agent.url, 'PUT', `/v1/kv/${key}`, key);
    if (a.status === 200) acknowledged.push(key);
    return a.status === 503 && /cannot use its data dir/.test(a.text) ? a : undefined;
  }, 15_000);
  expectError(r, 503, 1016);
  expect(r.headers.get('retry-after')).toBe('1');
  expect(await processHealth(agent)).toBe('NOT_SERVING');
  expect((await call(agent.url, 'GET', '/v1/status/leader')).json()).toBe('');
  return acknowledged;
}

describe('a data dir the agent cannot use while it runs', () => {
  test('moved away with a file put at its path, while idle: the agent keeps running, refuses writes, and makes the dir again once the file is gone', async () => {
    const parent = tempDataDir();
    dirs.push(parent);
    const dataDir = join(parent, 'data');
    const agent = await agentOn(dataDir);
    for (let k = 0; k < 10; k++) expect((await call(agent.url, 'PUT', `/v1/kv/idle/${k}`, `i${k}`)).status).toBe(200);

    renameSync(dataDir, join(parent, 'data.moved'));
    writeFileSync(dataDir, 'not a directory\n');
    const probes = await refusedAsUnusable(agent);
    expect(agent.proc.exitCode).toBe(null);
    expect(agent.output()).toMatch(/cannot use \S+: a file is where the agent keeps a directory/);
    // Reads answer from the state in memory meanwhile.
    expect((await call(agent.url, 'GET', '/v1/kv/idle/3?raw')).text).toBe('i3');

    rmSync(dataDir);
    await until('writes taken again', async () => ((await call(agent.url, 'PUT', '/v1/kv/idle/after', 'a')).status === 200 ? true : undefined), 15_000);
    expect(agent.output()).not.toMatch(/WAL failed/);
    await agent.kill9();
    const again = await agentOn(dataDir);
    for (let k = 0; k < 10; k++) expect((await call(again.url, 'GET', `/v1/kv/idle/${k}?raw`)).text).toBe(`i${k}`);
    expect((await call(again.url, 'GET', '/v1/kv/idle/after?raw')).text).toBe('a');
    for (const key of probes) expect((await call(again.url, 'GET', `/v1/kv/${key}?raw`)).text).toBe(key);
  }, 90_000);

  test('moved away with a file put at its path under a stream of writes: no write answered otherwise than 200 is there after a start', async () => {
    const parent = tempDataDir();
    dirs.push(parent);
    const dataDir = join(parent, 'data');
    const agent = await agentOn(dataDir);
    const load = writers(agent, 4);
    await new Promise((r) => setTimeout(r, 1_000));
    renameSync(dataDir, join(parent, 'data.moved'));
    writeFileSync(dataDir, 'not a directory\n');
    await refusedAsUnusable(agent);
    rmSync(dataDir);
    await until('writes taken again', async () => ((await call(agent.url, 'PUT', '/v1/kv/after', 'a')).status === 200 ? true : undefined), 15_000);
    await new Promise((r) => setTimeout(r, 500));
    await load.stop();
    await agent.kill9();
    await expectOnlyAcknowledged(await agentOn(dataDir), load.answers);
  }, 90_000);

  test.skipIf(process.getuid?.() !== 0)('its permissions taken away under a stream of writes (the agent runs as nobody): refused meanwhile, taken again once given back, nothing half-applied', async () => {
    const parent = tempDataDir();
    dirs.push(parent);
    chmodSync(parent, 0o755);
    const dataDir = join(parent, 'data');
    mkdirSync(dataDir);
    chownSync(dataDir, 65534, 65534);
    const asNobody = { wrap: ['setpriv', '--reuid=65534', '--regid=65534', '--clear-groups'] };
    const agent = await agentOn(dataDir, asNobody);
    const load = writers(agent, 4);
    await new Promise((r) => setTimeout(r, 1_000));
    chmodSync(dataDir, 0);
    await refusedAsUnusable(agent);
    expect(agent.output()).toMatch(/permission denied: give the agent's user access to it/);
    chmodSync(dataDir, 0o755);
    await until('writes taken again', async () => ((await call(agent.url, 'PUT', '/v1/kv/after', 'a')).status === 200 ? true : undefined), 15_000);
    expect(await processHealth(agent)).toBe('SERVING');
    await new Promise((r) => setTimeout(r, 500));
    await load.stop();
    expect(agent.output()).not.toMatch(/WAL failed/);
    await agent.kill9();
    await expectOnlyAcknowledged(await agentOn(dataDir, asNobody), load.answers);
  }, 90_000);
});
