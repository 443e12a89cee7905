// Goal: the agent's standard output never holds it. A log reader slower than the lines come (here the test
// stops reading the agent's stdout pipe) costs lines, not memory: past the bound they are dropped, the agent
// keeps answering, and once the reader catches up the agent logs how many it dropped. A stop finishes
// whatever the log's state: with lines still queued it waits a bounded time for the reader, exits when the
// reader goes away (EPIPE), and a second SIGTERM while it stops ends the process at once with exit code 1.
// Each agent is a real process whose stdout is a pipe the test reads slowly or not at all.
import { afterEach, describe, expect, test } from 'vitest';
import { logBacklogMax } from '../../src/agent/log-output.ts';
import { startAgent, type Agent } from '../support/agent.ts';
import { pipelinedGets } from '../support/pipelined-gets.ts';
import { until } from '../support/until.ts';

const agents: Agent[] = [];
afterEach(async () => {
  for (const a of agents.splice(0)) { await a.kill9(); a.cleanup(); }
});

/** An agent logging every request (debug), whose stdout the test has stopped reading. */
async function agentWithStalledReader(): Promise<{ agent: Agent; stdout: () => string; stderr: () => string }> {
  const agent = await startAgent({ args: ['--log-level', 'debug'] });
  agents.push(agent);
  let out = '';
  let err = '';
  agent.proc.stdout!.on('data', (d: Buffer) => { out += d.toString(); });
  agent.proc.stderr!.on('data', (d: Buffer) => { err += d.toString(); });
  agent.proc.stdout!.pause();
  return { agent, stdout: () => out, stderr: () => err };
}

/** `count` GETs of an absent key whose ~1,000-character name each request line carries: ~1.2 KB of log each. */
async function logHeavyRequests(base: string, count: number): Promise<number> {
  const key = 'k'.repeat(1000);
  const statuses = await pipelinedGets(base, { count, path: (c, i) => `/v1/kv/${key}${c}-${i}` });
  return statuses[404] ?? 0;
}

/** The exit code, or 'running' when the process has not exited within `waitMs`. */
async function exitWithin(agent: Agent, waitMs: number): Promise<number | null | 'running'> {
  const proc = agent.proc;
  if (proc.exitCode !== null || proc.signalCode !== null) return proc.exitCode;
  return await new Promise((resolve) => {
    const timer = setTimeout(() => resolve('running'), waitMs);
    proc.once('exit', (code) => { clearTimeout(timer); resolve(code); });
  });
}

// 6,000 lines of ~1.2 KB: about 7 MB, well past the bound.
const requests = 6000;
// 800 lines: about 1 MB, more than the pipe holds, so that lines are still queued when the stop comes.
const queuedRequests = 800;

describe('a log reader slower than the lines', () => {
  test('costs lines, not memory: the agent keeps answering and logs how many it dropped once the reader catches up', async () => {
    const { agent, stdout } = await agentWithStalledReader();
    expect(await logHeavyRequests(agent.url, requests)).toBe(requests);
    const leader = await fetch(`${agent.url}/v1/status/leader`, { signal: AbortSignal.timeout(10_000) });
    expect(leader.status).toBe(200);
    // The reader catches up: it gets at most what the agent queued (the bound, plus what the pipe holds).
    agent.proc.stdout!.resume();
    await until('the line counting the dropped lines', async () => (stdout().includes('log lines dropped: the log reader is too slow') ? true : undefined));
    const line = stdout().split('\n').find((l) => l.includes('log lines dropped'))!;
    const dropped = (JSON.parse(line) as { dropped: number }).dropped;
    expect(dropped).toBeGreaterThan(0);
    const before = stdout().slice(0, stdout().indexOf(line));
    const requestLines = before.split('\n').filter((l) => l.includes('"msg":"request"')).length;
    expect(requestLines + dropped).toBeGreaterThanOrEqual(requests);
    expect(before.length).toBeLessThan(logBacklogMax + 1024 * 1024);
    expect(await agent.stop()).toBe(0);
  }, 90_000);
});

describe('a stop with log lines still queued', () => {
  test('ends when the log reader goes away, and says so on stderr', async () => {
    const { agent, stderr } = await agentWithStalledReader();
    await logHeavyRequests(agent.url, queuedRequests);
    agent.proc.kill('SIGTERM');
    await new Promise((resolve) => setTimeout(resolve, 500));
    agent.proc.stdout!.destroy();
    expect(await exitWithin(agent, 20_000)).toBe(0);
    expect(stderr()).toContain('roster: the log output failed (EPIPE)');
  }, 90_000);

  test('waits a bounded time for a reader that takes nothing, then exits saying what was not written', async () => {
    const { agent, stderr } = await agentWithStalledReader();
    await logHeavyRequests(agent.url, queuedRequests);
    agent.proc.kill('SIGTERM');
    expect(await exitWithin(agent, 20_000)).toBe(0);
    expect(stderr()).toMatch(/roster: about \d+ bytes of log lines were not written: the log reader had not taken them 3 s after the agent stopped/);
  }, 90_000);

  test('a second SIGTERM while it stops ends the process at once, with exit code 1', async () => {
    const { agent, stderr } = await agentWithStalledReader();
    await logHeavyRequests(agent.url, queuedRequests);
    agent.proc.kill('SIGTERM');
    await new Promise((resolve) => setTimeout(resolve, 200));
    agent.proc.kill('SIGTERM');
    expect(await exitWithin(agent, 20_000)).toBe(1);
    expect(stderr()).toContain('roster: SIGTERM while stopping: exiting now');
  }, 90_000);
});
