// Goal: `roster monitor` as an operator runs it against a started agent: it prints the agent's log at the level
// asked for (`-log-level=debug`, Consul's spelling, shows request lines), `--log-json` prints the agent's
// JSON lines; Ctrl-C ends it with 0, the agent stopping with 1 and a message, an unknown level is a usage
// error (2) with nothing sent. Registry text in a text line (a key name in a request path) is shown with its
// control characters escaped, as other commands show it; --log-json keeps it exact.
import { connect } from 'node:net';
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

  test('a request path with a raw C1 CSI, DEL and a bidi override: escaped in text, exact with --log-json', async () => {
    const text = startRoster(['monitor', '-log-level=debug'], { agent: agent.url });
    const json = startRoster(['monitor', '-log-level=debug', '--log-json'], { agent: agent.url });
    await Promise.all([text.waitFor(/monitor started/), json.waitFor(/"msg":"monitor started"/)]);
    // A client that sends the key's bytes as they are: the agent takes them, and logs the path it got.
    const path = '/v1/kv/evil\u009b2J\u007f\u202eX';
    const answer = await new Promise<string>((resolve, reject) => {
      const s = connect(Number(new URL(agent.url).port), '127.0.0.1', () => s.write(Buffer.from(`PUT ${path} HTTP/1.1\r\nHost: localhost\r\nContent-Length: 1\r\n\r\nv`)));
      s.once('data', (d) => { resolve(d.toString()); s.end(); });
      s.once('error', reject);
    });
    expect(answer).toMatch(/^HTTP\/1\.1 200/);
    await Promise.all([text.waitFor(/path=\/v1\/kv\/evil/), json.waitFor(/evil/)]);
    text.proc.kill('SIGINT');
    json.proc.kill('SIGINT');
    const [t, j] = await Promise.all([text.exited, json.exited]);
    expect([t.code, j.code]).toEqual([0, 0]);
    expect(t.stdout).toContain('path=/v1/kv/evil\\x9b2J\\x7f\\u202eX status=200');
    // eslint-disable-next-line no-control-regex
    expect(t.stdout).not.toMatch(/[\u0000-\u0009\u000b-\u001f\u007f-\u009f\u061c\u200e\u200f\u202a-\u202e\u2066-\u2069]/);
    const logged = j.stdout.trimEnd().split('\n').map((l) => JSON.parse(l) as { msg: string; path?: string }).find((l) => l.path?.startsWith('/v1/kv/evil'));
    expect(logged?.path).toBe(path);
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
