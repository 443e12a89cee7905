// Goal: `roster monitor` as an operator runs it against a started agent: it prints the agent's log at the level
// asked for (`-log-level=debug`, Consul's spelling, shows request lines), `--log-json` prints the agent's
// JSON lines; Ctrl-C ends it with 0, the agent stopping with 1 and a message, an unknown level is a usage
// error (2) with nothing sent.
import { afterAll, beforeAll, describe, expect, test } from 'vitest';
import { client, startAgent, type Agent } from '../support/agent.ts';
import { roster, startRoster } from './support.ts';

describe('roster monitor', () => {
  let agent: Agent;

  beforeAll(async () => {
    agent = await startAgent();
  }, 30_000);

  afterAll(async () => {
    if (agent?.proc.exitCode === null) await agent.stop();
    agent?.cleanup();
  });

  test('-log-level=debug prints request lines as text; Ctrl-C exits 0', async () => {
    const m = startRoster(['monitor', '-log-level=debug'], { agent: agent.url });
    await m.waitFor(/\[INFO\] {2}monitor started: reqId=\S+ loglevel=debug\n/);
    expect((await client(agent).put('/v1/kv/from-the-cli', 'v')).status).toBe(200);
    await m.waitFor(/\[DEBUG\] request: .*path=\/v1\/kv\/from-the-cli status=200/);
    m.proc.kill('SIGINT');
    const done = await m.exited;
    expect(done.code).toBe(0);
    expect(done.stderr).toBe('');
  });

  test('an unknown level is a usage error', async () => {
    const r = await roster(['monitor', '--log-level', 'loud'], { agent: agent.url });
    expect(r.code).toBe(2);
    expect(r.stderr).toContain('--log-level: "loud" is not one of trace, debug, info, warn, error');
  });

  test('--log-json prints JSON lines; the agent stopping ends it with exit code 1', async () => {
    const m = startRoster(['monitor', '--log-json'], { agent: agent.url });
    await m.waitFor(/"msg":"monitor started"/);
    expect(await agent.stop()).toBe(0);
    const done = await m.exited;
    expect(done.code).toBe(1);
    expect(done.stderr).toContain('roster: the agent ended the monitor');
    const lines = done.stdout.trimEnd().split('\n').map((l) => JSON.parse(l) as { msg: string });
    expect(lines.map((l) => l.msg)).toContain('shutting down');
  });
});
