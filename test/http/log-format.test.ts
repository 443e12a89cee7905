// Goal: the agent's log is for machines or for people, as asked: `--log-format json` (and the default
// when stdout is not a terminal, `roster agent --dev` included) writes one JSON object a line;
// `--log-format pretty` writes readable lines on stdout (local time, level name, message) and the
// harness still sees the agent become ready; a bad value exits 2 naming the flag or variable and the values.
// Each agent is a real process.
import { rmSync, writeFileSync } from 'node:fs';
import { dirname, join } from 'node:path';
import { afterAll, describe, expect, test } from 'vitest';
import { devDefaults } from '../../src/cli/agent.ts';
import { loadConfig, type Config } from '../../src/config.ts';
import { startAgent, tempDataDir, type Agent } from '../support/agent.ts';
import { roster, startRoster, type Running } from '../cli/support.ts';

const agents: Agent[] = [];
const running: Running[] = [];
afterAll(async () => {
  for (const a of agents) { await a.stop(); a.cleanup(); }
  for (const r of running) { r.proc.kill('SIGTERM'); await r.exited; }
});

const lines = (text: string) => text.split('\n').filter((l) => l.trim() !== '');

function isJson(line: string): boolean {
  try {
    return typeof JSON.parse(line) === 'object';
  } catch {
    return false;
  }
}

/** Nepal's zone (UTC+05:45): no other zone's clock reads the same minutes, so a match is local time. */
const zone = { name: 'Asia/Kathmandu', offsetMs: (5 * 60 + 45) * 60_000 };

describe('--log-format pretty', () => {
  test('stdout carries readable lines: local time, level name, message; no JSON; readiness still seen', async () => {
    const agent = startRoster(['agent', '--log-format', 'pretty', '--http-port', '0', '--grpc-port', '0', '--data-dir', tempDataDir()],
      { env: { TZ: zone.name }, timeoutMs: 60_000 });
    running.push(agent);
    await agent.waitFor(/roster listening http=http:\/\/[^\s"]+ grpc=[^\s"]+/, 30_000);
    agent.proc.kill('SIGTERM');
    const done = await agent.exited;
    expect(done.code).toBe(0);
    const out = lines(done.stdout);
    expect(out.filter(isJson), done.stdout).toEqual([]);
    const ready = out.find((l) => l.includes('roster listening'));
    const m = /^\[(\d{4}-\d\d-\d\d \d\d:\d\d:\d\d\.\d{3})\] INFO: roster listening http=http:\/\/127\.0\.0\.1:\d+ grpc=/.exec(ready ?? '');
    expect(m, done.stdout).not.toBeNull();
    // The time is the zone's wall clock: read as UTC, it is ahead of the real instant by the zone's offset.
    const shownMs = Date.parse(`${m![1]!.replace(' ', 'T')}Z`) - zone.offsetMs;
    expect(Math.abs(Date.now() - shownMs)).toBeLessThan(60_000);
    expect(out.at(-1)).toMatch(/^\[[^\]]+\] INFO: stopped/);
    expect(done.stdout.includes('\u001b['), 'colour codes').toBe(false); // no colours when stdout is not a terminal
  }, 60_000);

  test('the harness detects readiness of a pretty agent and it serves', async () => {
    const agent = await startAgent({ args: ['--log-format', 'pretty'] });
    agents.push(agent);
    const r = await fetch(`${agent.url}/v1/status/leader`);
    expect(r.status).toBe(200);
    expect(agent.output()).toMatch(/\] INFO: roster listening /);
  });
});

describe('--log-format json', () => {
  test('given or by default (stdout not a terminal), every stdout line is a JSON object with a level and a message', async () => {
    for (const args of [['--log-format', 'json'], []]) {
      const agent = await startAgent({ args });
      agents.push(agent);
      await agent.stop();
      const out = lines(agent.output());
      expect(out.length).toBeGreaterThan(2);
      for (const line of out) expect(isJson(line), line).toBe(true);
      expect(out.map((l) => JSON.parse(l) as { level: number; msg: string }).find((o) => o.msg.startsWith('roster listening'))?.level).toBe(30);
    }
  });

  test('roster agent --dev with stdout not a terminal keeps JSON lines', async () => {
    const agent = startRoster(['agent', '--dev', '--http-port', '0', '--grpc-port', '0'], { timeoutMs: 60_000 });
    running.push(agent);
    await agent.waitFor(/roster listening/, 30_000);
    agent.proc.kill('SIGTERM');
    const done = await agent.exited;
    for (const line of lines(done.stdout)) expect(isJson(line), line).toBe(true);
  }, 60_000);
});

describe('choosing the format', () => {
  const load = (argv: string[], env: NodeJS.ProcessEnv = {}, tty?: boolean) =>
    loadConfig(argv, env, tty === undefined ? {} : devDefaults('/tmp/dev-dir', tty)) as Config;

  test('json unless asked; --dev picks pretty only for a terminal; flag, environment and config file win', () => {
    expect(load([]).logFormat).toBe('json');
    expect(load([], {}, true).logFormat).toBe('pretty');
    expect(load([], {}, false).logFormat).toBe('json');
    expect(load(['--log-format', 'json'], {}, true).logFormat).toBe('json');
    expect(load([], { ROSTER_LOG_FORMAT: 'pretty' }).logFormat).toBe('pretty');
    const file = join(tempDataDir(), 'agent.json');
    writeFileSync(file, JSON.stringify({ log_format: 'pretty' }));
    expect(load(['--config-file', file]).logFormat).toBe('pretty');
    rmSync(dirname(file), { recursive: true, force: true });
  });

  test('a bad value exits 2 naming the flag or variable it came from and the allowed values', async () => {
    const r = await roster(['agent', '--log-format', 'fancy']);
    expect(r.code).toBe(2);
    expect(r.stderr).toMatch(/^roster: --log-format: "fancy" is not one of json, pretty$/m);
    const fromEnv = await roster(['agent'], { env: { ROSTER_LOG_FORMAT: 'text' } });
    expect(fromEnv.code).toBe(2);
    expect(fromEnv.stderr).toMatch(/^roster: ROSTER_LOG_FORMAT \(for --log-format\): "text" is not one of json, pretty$/m);
  });
});
