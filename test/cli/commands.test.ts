// Goal: the other `roster` subcommands as a user runs them: session list/info/create/destroy, members,
// checks, watch (prints a change live, --json one object per line), token (mints a token the agent
// accepts through --token / ROSTER_HTTP_TOKEN; a refusal says how to give a token, or where the refused
// one came from), and `roster agent --dev` starting, serving and
// cleaning up after itself. Every --json output parses; failures exit 1, usage errors 2.
import { execFile } from 'node:child_process';
import { existsSync, writeFileSync } from 'node:fs';
import { connect, createServer, type AddressInfo, type Socket } from 'node:net';
import { join } from 'node:path';
import { describe, expect, test } from 'vitest';
import { agentNode, call, client, startAgent, tempDataDir, withAgent, type Agent } from '../support/agent.ts';
import { roster, rosterBin, startRoster } from './support.ts';

let agent: Agent;
let http: ReturnType<typeof client>;
let run: (args: string[]) => ReturnType<typeof roster>;

withAgent((a) => {
  agent = a;
  http = client(a);
  run = (args) => roster(args, { agent: a.url });
});

describe('session', () => {
  test('create prints the id; list and info show it (text and --json); destroy removes it', async () => {
    const created = await run(['session', 'create', '-name=cli-session', '-ttl=30s', '-behavior=delete']);
    expect(created.code).toBe(0);
    const id = created.stdout.trim();
    expect(id).toMatch(/^[0-9a-f-]{36}$/);
    const list = await run(['session', 'list']);
    expect(list.stdout).toMatch(/^ID\s+Name\s+Node\s+TTL\s+Behavior\s+LockDelay$/m);
    expect(list.stdout).toMatch(new RegExp(`^${id}\\s+cli-session\\s+node1\\s+30s\\s+delete\\s+15s$`, 'm'));
    const listJson = JSON.parse((await run(['session', 'list', '--json'])).stdout) as { ID: string }[];
    expect(listJson.map((s) => s.ID)).toContain(id);
    expect(JSON.parse((await run(['session', 'list', '--node', 'node1', '--json'])).stdout).map((s: { ID: string }) => s.ID)).toContain(id);
    expect(JSON.parse((await run(['session', 'list', '--node', 'elsewhere', '--json'])).stdout)).toEqual([]);
    const info = await run(['session', 'info', id]);
    expect(info.code).toBe(0);
    expect(info.stdout).toMatch(/^Name\s+cli-session$/m);
    expect(info.stdout).toMatch(/^NodeChecks\s+gossipHealth$/m);
    expect(JSON.parse((await run(['session', 'info', id, '--json'])).stdout)).toMatchObject({ ID: id, Name: 'cli-session', TTL: '30s', Behavior: 'delete' });
    const destroyed = await run(['session', 'destroy', id, '--json']);
    expect(destroyed.code).toBe(0);
    expect(JSON.parse(destroyed.stdout)).toEqual({ ok: true, id });
    expect((await http.get(`/v1/session/info/${id}`)).json()).toEqual([]);
  });

  test('an unknown session: info and destroy exit 1 and say so; a bad TTL is the agent\'s error', async () => {
    const info = await run(['session', 'info', 'no-such-session']);
    expect(info).toMatchObject({ code: 1, stdout: '', stderr: 'roster: session "no-such-session" not found\n' });
    expect((await run(['session', 'destroy', 'no-such-session'])).code).toBe(1);
    const ttl = await run(['session', 'create', '--ttl', '1s']);
    expect(ttl.code).toBe(1);
    expect(ttl.stderr).toMatch(/^roster: invalid TTL: must be between 10s and 24h\n$/);
    expect((await run(['session', 'create', '--behavior', 'keep'])).code).toBe(2);
  });
});

describe('members and checks', () => {
  test('members lists the agent (text and --json)', async () => {
    const text = await run(['members']);
    expect(text.code).toBe(0);
    expect(text.stdout).toMatch(new RegExp(`^node1\\s+${new URL(agent.url).host.replace(/\./g, '\\.')}\\s+alive\\s+dc1$`, 'm'));
    const json = JSON.parse((await run(['members', '--json'])).stdout) as { Name: string; Status: number }[];
    expect(json).toEqual([expect.objectContaining({ Name: 'node1', Status: 1 })]);
  });

  test('checks lists every check, by state, node or service (text and --json)', async () => {
    expect((await http.put('/v1/agent/service/register', { Name: 'web', ID: 'web-1', Check: { CheckID: 'web-ttl', Name: 'web ttl', TTL: '60s' } })).status).toBe(200);
    expect((await http.put('/v1/agent/check/pass/web-ttl?note=all%20good')).status).toBe(200);
    const all = await run(['checks']);
    expect(all.code).toBe(0);
    expect(all.stdout).toMatch(/^Node\s+CheckID\s+Name\s+Status\s+Service\s+Output$/m);
    expect(all.stdout).toMatch(/^node1\s+gossipHealth\s+Gossip Health Status\s+passing\s+-/m);
    expect(all.stdout).toMatch(/^node1\s+web-ttl\s+web ttl\s+passing\s+web\s+all good$/m);
    const service = JSON.parse((await run(['checks', '--service', 'web', '--json'])).stdout) as { CheckID: string }[];
    expect(service.map((c) => c.CheckID)).toEqual(['web-ttl']);
    expect(JSON.parse((await run(['checks', '--state', 'critical', '--json'])).stdout)).toEqual([]);
    expect((await run(['checks', '--state', 'critical'])).stdout).toBe('No checks\n');
    const node = JSON.parse((await run(['checks', '-node=node1', '--json'])).stdout) as { CheckID: string }[];
    expect(node.map((c) => c.CheckID).sort()).toEqual(['gossipHealth', 'web-ttl']);
    expect((await run(['checks', '--state', 'sideways'])).code).toBe(2);
    expect((await run(['checks', '--state', 'passing', '--node', 'node1'])).code).toBe(2);
  });
});

describe('watch', () => {
  test('prints the snapshot, then a change as it happens; SIGINT ends it with 0', async () => {
    await http.put('/v1/kv/watched/one', 'first');
    const w = startRoster(['watch', 'kv_prefix', 'watched/'], { agent: agent.url });
    await w.waitFor(/end of snapshot/);
    expect(w.stdout()).toMatch(/^\d+ snapshot watched\/one \{.*"Value":"first".*\}$/m);
    await http.put('/v1/kv/watched/two', 'second');
    await w.waitFor(/upsert watched\/two/);
    await http.del('/v1/kv/watched/one');
    await w.waitFor(/delete watched\/one/);
    w.proc.kill('SIGINT');
    const r = await w.exited;
    expect(r.code).toBe(0);
    expect(r.stdout).toMatch(/^\d+ upsert watched\/two \{.*"Value":"second".*\}$/m);
  });

  test('--json prints one JSON object per line', async () => {
    const w = startRoster(['watch', 'kv_prefix', 'jwatch/', '--json'], { agent: agent.url });
    await w.waitFor(/end_of_snapshot/);
    await http.put('/v1/kv/jwatch/a', 'v');
    await w.waitFor(/"upsert"/);
    w.proc.kill('SIGINT');
    const r = await w.exited;
    const lines = r.stdout.trim().split('\n').map((l) => JSON.parse(l));
    expect(lines[0]).toMatchObject({ type: 'end_of_snapshot' });
    expect(lines[1]).toMatchObject({ type: 'upsert', key: 'jwatch/a', value: { Key: 'jwatch/a', Value: Buffer.from('v').toString('base64') } });
    expect(lines[1].index).toBeGreaterThan(lines[0].index);
  });

  test('a dropped connection: the watch reconnects by itself and resumes from its last index (nothing missed)', async () => {
    const proxy = await tcpProxy(new URL(agent.url).port);
    try {
      await http.put('/v1/kv/rw/a', 'before');
      const w = startRoster(['watch', 'kv_prefix', 'rw/', '--json'], { agent: `127.0.0.1:${proxy.port}`, timeoutMs: 60_000 });
      await w.waitFor(/end_of_snapshot/);
      proxy.cut();
      await w.waitFor(/reconnecting in/);
      await http.put('/v1/kv/rw/b', 'while away');
      await w.waitFor(/"type":"upsert","index":\d+,"key":"rw\/b"/);
      await http.put('/v1/kv/rw/c', 'after');
      await w.waitFor(/"type":"upsert","index":\d+,"key":"rw\/c"/);
      w.proc.kill('SIGINT');
      const r = await w.exited;
      expect(r.code).toBe(0);
      expect(r.stderr).toMatch(/^roster: stream closed \(1006\); reconnecting in/m);
      const types = r.stdout.trim().split('\n').map((l) => JSON.parse(l).type);
      // Resumed, not reset: one snapshot only, then the change made while away and the next one.
      expect(types).toEqual(['snapshot', 'end_of_snapshot', 'upsert', 'upsert']);
      expect(proxy.connections()).toBe(2);
    } finally {
      proxy.close();
    }
  });

  test('an unknown topic exits 2 with the agent\'s message; an unreachable agent exits 1', async () => {
    const r = await run(['watch', 'weather', 'x']);
    expect(r).toMatchObject({ code: 2, stderr: 'roster: unknown topic "weather"\n' });
    const down = await roster(['watch', 'kv_prefix', 'x'], { env: { ROSTER_HTTP_ADDR: '127.0.0.1:1' } });
    expect(down.code).toBe(1);
    expect(down.stderr).toContain('roster: cannot open the stream at ws://127.0.0.1:1/v1/stream');
  });
});

describe('token and authentication', () => {
  const secret = 'a-cli-test-secret-that-is-long-enough-0123456789';

  test('roster token mints a token the agent accepts through --token and ROSTER_HTTP_TOKEN', async () => {
    const dir = tempDataDir();
    const configFile = join(dir, 'agent.json');
    writeFileSync(configFile, JSON.stringify({ auth: { jwt_secret: secret } }));
    const secured = await startAgent({ args: ['--config-file', configFile] });
    try {
      const minted = await roster(['token', '--subject', 'ops', '--rules', '[{"resource":"key","prefix":"","access":"write"}]', '-config-file', configFile]);
      expect(minted.code).toBe(0);
      const token = minted.stdout.trim();
      expect(token.split('.')).toHaveLength(3);
      const denied = await roster(['kv', 'put', 'auth/k', 'v'], { agent: secured.url });
      expect(denied.code).toBe(1);
      expect(denied.stderr).toBe('roster: user not logged in: no token was sent; give one with --token or ROSTER_HTTP_TOKEN (or CONSUL_HTTP_TOKEN)\n');
      const stale = await roster(['token', '--subject', 'ops'], { env: { ROSTER_AUTH_SECRET: 'an-older-secret-that-is-also-long-enough-9876543210' } });
      const refusedToken = await roster(['kv', 'get', 'auth/k'], { agent: secured.url, env: { ROSTER_HTTP_TOKEN: stale.stdout.trim() } });
      expect(refusedToken).toMatchObject({ code: 1, stderr: expect.stringMatching(/^roster: invalid token.*: the agent refused the token from ROSTER_HTTP_TOKEN\n$/) });
      expect((await roster(['kv', 'put', '--token', token, 'auth/k', 'v'], { agent: secured.url })).code).toBe(0);
      expect(await roster(['kv', 'get', 'auth/k'], { agent: secured.url, env: { ROSTER_HTTP_TOKEN: token } })).toMatchObject({ code: 0, stdout: 'v\n' });
      const stream = startRoster(['watch', 'kv_prefix', 'auth/', '--json'], { agent: secured.url, env: { ROSTER_HTTP_TOKEN: token } });
      await stream.waitFor(/end_of_snapshot/);
      stream.proc.kill('SIGINT');
      expect((await stream.exited).code).toBe(0);
      const refused = await roster(['watch', 'kv_prefix', 'auth/'], { agent: secured.url });
      expect(refused.code).toBe(1);
      expect(refused.stderr).toContain('roster: the agent refused the stream');
      expect((await call(secured.url, 'GET', '/v1/kv/auth/k?raw', undefined, { authorization: `Bearer ${token}` })).text).toBe('v');
    } finally {
      await secured.stop();
      secured.cleanup();
    }
  }, 60_000);

  test('roster token follows the agent\'s auth settings: it mints for the configured audience and refuses a --ttl past max_token_lifetime', async () => {
    const dir = tempDataDir();
    const configFile = join(dir, 'agent.json');
    writeFileSync(configFile, JSON.stringify({ auth: { jwt_secret: secret, audience: 'roster-cli-test', max_token_lifetime: '1h' } }));
    const secured = await startAgent({ args: ['--config-file', configFile] });
    try {
      const rules = '[{"resource":"key","prefix":"","access":"write"}]';
      const tooLong = await roster(['token', '--subject', 'ops', '--rules', rules, '--ttl', '2h', '-config-file', configFile]);
      expect(tooLong.code).toBe(2);
      expect(tooLong.stderr).toContain('max_token_lifetime');
      const minted = await roster(['token', '--subject', 'ops', '--rules', rules, '--ttl', '30m', '-config-file', configFile]);
      expect(minted.code).toBe(0);
      const token = minted.stdout.trim();
      expect(JSON.parse(Buffer.from(token.split('.')[1]!, 'base64url').toString()).aud).toBe('roster-cli-test');
      expect((await roster(['kv', 'put', '--token', token, 'aud/k', 'v'], { agent: secured.url })).code).toBe(0);
    } finally {
      await secured.stop();
      secured.cleanup();
    }
  }, 60_000);

  test('roster token without a secret or subject exits 2', async () => {
    const none = await roster(['token', '--subject', 'x'], { env: { ROSTER_AUTH_SECRET: undefined } });
    expect(none).toMatchObject({ code: 2, stdout: '' });
    expect(none.stderr).toContain('no secret');
    expect((await roster(['token'], { env: { ROSTER_AUTH_SECRET: secret } })).code).toBe(2);
    const ok = await roster(['token', '--subject', 'x'], { env: { ROSTER_AUTH_SECRET: secret } });
    expect(ok.code).toBe(0);
  });
});

/** A loopback TCP proxy to the agent whose connections the test can cut (the client sees them drop). */
async function tcpProxy(targetPort: string): Promise<{ port: number; cut(): void; close(): void; connections(): number }> {
  const sockets = new Set<Socket>();
  let count = 0;
  const server = createServer((inbound) => {
    count += 1;
    const outbound = connect(Number(targetPort), '127.0.0.1');
    for (const s of [inbound, outbound]) { sockets.add(s); s.on('close', () => sockets.delete(s)); s.on('error', () => {}); }
    inbound.pipe(outbound).pipe(inbound);
  });
  await new Promise<void>((r) => server.listen(0, '127.0.0.1', r));
  return {
    port: (server.address() as AddressInfo).port,
    cut: () => { for (const s of sockets) s.destroy(); },
    close: () => { for (const s of sockets) s.destroy(); server.close(); },
    connections: () => count,
  };
}

/** Runs a roster command line on a pseudo-terminal (util-linux `script`), as a person at a terminal would. */
function onTerminal(args: string, env: Record<string, string | undefined>): Promise<{ code: number; output: string }> {
  const vars: Record<string, string | undefined> = { ...process.env, NO_COLOR: undefined, ...env };
  for (const k of Object.keys(vars)) if (vars[k] === undefined) delete vars[k];
  return new Promise((resolve) => {
    execFile('script', ['-qec', `${process.execPath} ${rosterBin} ${args}`, '/dev/null'], { env: vars as NodeJS.ProcessEnv, timeout: 20_000 }, (err, stdout) => {
      resolve({ code: err ? Number((err as { code?: number }).code ?? 1) : 0, output: stdout });
    });
  });
}

describe('on a terminal', () => {
  test('colours on a TTY, none with NO_COLOR (a pipe never gets them: see kv.test.ts)', async () => {
    const colored = await onTerminal('members', { ROSTER_HTTP_ADDR: agent.url });
    expect(colored.code).toBe(0);
    expect(colored.output).toContain('\u001b[32malive\u001b[39m');
    const plain = await onTerminal('members', { ROSTER_HTTP_ADDR: agent.url, NO_COLOR: '1' });
    expect(plain.output).toMatch(/node1 .* alive/);
    expect(plain.output).not.toContain('\u001b[');
    const failed = await onTerminal('kv get nothing/here', { ROSTER_HTTP_ADDR: agent.url });
    expect(failed.code).toBe(1);
    expect(failed.output).toContain('\u001b[31mroster:\u001b[39m key "nothing/here" not found');
  });

  test('a long wait for a lock shows a spinner with the elapsed time, cleared afterwards', async () => {
    const holder = await http.session({ Name: 'spin-holder' });
    expect((await http.put(`/v1/kv/spin/.lock?acquire=${holder}`)).text).toBe('true');
    const r = await onTerminal('lock --timeout 1500ms spin -- true', { ROSTER_HTTP_ADDR: agent.url });
    expect(r.code).toBe(1);
    expect(r.output).toMatch(/waiting for lock spin\/\.lock \ds/);
    expect(r.output).toContain('\r\u001b[2K');
    expect(r.output).toContain('did not acquire lock "spin/.lock" within 1500ms');
  });
});

describe('roster agent', () => {
  test('--dev starts a serving agent named dev on a temporary data dir, removed when it stops', async () => {
    const dev = startRoster(['agent', '-dev', '--http-port', '0', '--grpc-port', '0'], { timeoutMs: 40_000, node: agentNode });
    await dev.waitFor(/roster listening http=(\S+) grpc=/, 30_000);
    const url = /roster listening http=(http:\/\/[^\s"]+)/.exec(dev.stdout() + dev.stderr())![1]!;
    const dataDir = /dev mode: data in (\S+) /.exec(dev.stderr())![1]!;
    expect(existsSync(dataDir)).toBe(true);
    const self = await call(url, 'GET', '/v1/agent/self');
    expect(self.json().Config.NodeName).toBe('dev');
    // The agent serves the client commands.
    expect((await roster(['kv', 'put', 'dev/k', 'v'], { agent: url })).code).toBe(0);
    expect((await roster(['kv', 'get', 'dev/k'], { agent: url })).stdout).toBe('v\n');
    dev.proc.kill('SIGTERM');
    expect((await dev.exited).code).toBe(0);
    expect(existsSync(dataDir)).toBe(false);
  }, 60_000);

  test('agent flags and the config file are the agent\'s own; bad ones exit 2; --help lists --dev', async () => {
    const help = await roster(['agent', '--help']);
    expect(help.code).toBe(0);
    expect(help.stdout).toContain('--http-port');
    expect(help.stdout).toContain('--dev');
    const bad = await roster(['agent', '--http-port', 'nope']);
    expect(bad.code).toBe(2);
    expect(bad.stderr).toContain('roster: --http-port: "nope" is not a port number');
    const unknown = await roster(['agent', '-no-such-flag']);
    expect(unknown.code).toBe(2);
    const missing = await roster(['agent', '-config-file=/nonexistent/agent.json']);
    expect(missing.code).toBe(2);
    expect(missing.stderr).toContain('roster: --config-file: cannot read /nonexistent/agent.json');
  });
});
