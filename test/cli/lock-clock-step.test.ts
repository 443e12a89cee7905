// Goal: `roster lock` measures how long its session went unrenewed on the monotonic clock. Its wall clock set
// back an hour (libfaketime, an NTP step) while the agent stops answering, it still gives the lock up and
// stops its command after the TTL, as the agent invalidates the session then; measured on the wall clock,
// the command ran on for the hour without the lock.
import { existsSync, mkdtempSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, beforeAll, expect, test } from 'vitest';
import { startAgent, type Agent } from '../support/agent.ts';
import { libfaketime } from '../support/stepped-agent.ts';
import { startRoster, until } from './support.ts';

let agent: Agent;
let scratch: string;

beforeAll(async () => {
  scratch = mkdtempSync(join(tmpdir(), 'roster-cli-lock-step-'));
  writeFileSync(join(scratch, 'config.json'), JSON.stringify({ session_ttl_min: '1s' }));
  agent = await startAgent({ args: ['--config-file', join(scratch, 'config.json')] });
}, 60_000);

afterAll(async () => {
  if (agent !== undefined && agent.proc.exitCode === null) agent.proc.kill('SIGCONT');
  await agent?.stop();
  agent?.cleanup();
  rmSync(scratch, { recursive: true, force: true });
});

test('set back an hour while the agent does not answer, the lock is given up after its TTL and the command stopped', async () => {
  const offset = join(scratch, 'offset');
  writeFileSync(offset, '+0');
  const marks = join(scratch, 'marks');
  const child = `trap 'echo got-term >> ${marks}; exit 0' TERM; echo ready >> ${marks}; while true; do sleep 0.1; done`;
  const run = startRoster(['lock', '--ttl', '2s', 'stepped', '--', child], {
    agent: agent.url, timeoutMs: 30_000,
    env: { LD_PRELOAD: libfaketime, FAKETIME_TIMESTAMP_FILE: offset, FAKETIME_NO_CACHE: '1', FAKETIME_DONT_FAKE_MONOTONIC: '1' },
  });
  const read = () => (existsSync(marks) ? readFileSync(marks, 'utf8') : '');
  await until('the command to start', () => read().includes('ready'));
  agent.proc.kill('SIGSTOP');
  try {
    writeFileSync(offset, '-1h');
    const started = Date.now();
    await until('the command to be stopped', () => read().includes('got-term'), 12_000);
    expect(Date.now() - started).toBeLessThan(12_000);
    const r = await run.exited;
    expect(r.stderr).toContain('roster: lock lost:');
  } finally {
    agent.proc.kill('SIGCONT');
    if (run.proc.exitCode === null) run.proc.kill('SIGKILL');
  }
}, 60_000);
