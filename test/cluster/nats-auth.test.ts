// Goal: a node reaches nats-servers that require authentication — a user and password (`nats_auth` in the
// config file, or the --nats URL's userinfo) or a token (ROSTER_NATS_TOKEN) — and takes writes over them;
// the secret appears in none of its output nor in /v1/agent/self. Wrong or missing credentials stop the
// start saying which setting to look at; contradictory settings exit 2 without quoting the secret.
import { spawn } from 'node:child_process';
import { mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, test } from 'vitest';
import { freePort, natsServerBinary } from '../../cluster/dev/nats-launcher.ts';
import { client, repoRoot, startAgent, tempDataDir, tsxLoader, type Agent } from '../support/agent.ts';

const password = 'pw-7f3a9c1e-never-printed';
const token = 'tk-51b0d2aa-never-printed';
const dir = mkdtempSync(join(tmpdir(), 'roster-nats-auth-'));
const servers: { proc: ReturnType<typeof spawn>; url: string }[] = [];
let userUrl = '';
let tokenUrl = '';

/** A JetStream nats-server with `authorization` as given, ready for clients. */
async function natsServer(name: string, authorization: string): Promise<string> {
  const port = await freePort();
  const conf = join(dir, `${name}.conf`);
  writeFileSync(conf, `listen: "127.0.0.1:${port}"\njetstream { store_dir: ${JSON.stringify(join(dir, name))} }\nauthorization { ${authorization} }\n`);
  const proc = spawn(natsServerBinary(), ['-c', conf], { stdio: ['ignore', 'pipe', 'pipe'] });
  let out = '';
  await new Promise<void>((resolve, reject) => {
    const timer = setTimeout(() => reject(new Error(`nats-server not ready:\n${out}`)), 15_000);
    const seen = (d: Buffer) => {
      out += d.toString();
      if (out.includes('Server is ready')) { clearTimeout(timer); resolve(); }
    };
    proc.stdout!.on('data', seen);
    proc.stderr!.on('data', seen);
  });
  servers.push({ proc, url: `nats://127.0.0.1:${port}` });
  return `nats://127.0.0.1:${port}`;
}

/** A one-node cluster on `nats`, with a config file holding `config` (when given). */
async function node(nats: string, config?: object, env: Record<string, string> = {}): Promise<Agent> {
  const extra: string[] = [];
  if (config !== undefined) {
    const file = join(dir, `config-${servers.length}-${Date.now()}.json`);
    writeFileSync(file, JSON.stringify(config));
    extra.push('--config-file', file);
  }
  return startAgent({
    args: ['--nats', nats, '--replicas', '1', '--gossip-listen', `127.0.0.1:${await freePort()}`, ...extra], env, readyTimeoutMs: 60_000,
  });
}

/** Runs an agent that is expected to stop by itself; resolves with its exit code and output. */
function runToExit(args: string[], env: Record<string, string> = {}): Promise<{ code: number | null; out: string }> {
  const dataDir = tempDataDir();
  const proc = spawn(process.execPath, ['--import', tsxLoader, join(repoRoot, 'src/main.ts'), '--http-port', '0', '--grpc-port', '0',
    '--data-dir', dataDir, '--node-name', 'refused', '--replicas', '1', ...args], { cwd: repoRoot, env: { ...process.env, ...env }, stdio: ['ignore', 'pipe', 'pipe'] });
  let out = '';
  proc.stdout.on('data', (d: Buffer) => { out += d.toString(); });
  proc.stderr.on('data', (d: Buffer) => { out += d.toString(); });
  const timer = setTimeout(() => proc.kill('SIGKILL'), 60_000);
  return new Promise((resolve) => proc.once('exit', (code) => {
    clearTimeout(timer);
    rmSync(dataDir, { recursive: true, force: true });
    resolve({ code, out });
  }));
}

beforeAll(async () => {
  userUrl = await natsServer('users', `user: roster, password: "${password}"`);
  tokenUrl = await natsServer('token', `token: "${token}"`);
}, 30_000);

afterAll(async () => {
  for (const s of servers) {
    s.proc.kill('SIGTERM');
    await new Promise((r) => (s.proc.exitCode !== null ? r(undefined) : s.proc.once('exit', r)));
  }
  rmSync(dir, { recursive: true, force: true });
});

/** The node takes a write and reads it back, and its output and /v1/agent/self never show `secret`; then it stops. */
async function servesWithoutShowing(started: Promise<Agent>, secret: string): Promise<void> {
  const agent = await started;
  try {
    const c = client(agent);
    expect((await c.put('/v1/kv/auth/key', 'v')).text).toBe('true');
    expect((await c.get('/v1/kv/auth/key?raw')).text).toBe('v');
    const self = await c.get('/v1/agent/self');
    expect(self.status).toBe(200);
    expect(self.text).not.toContain(secret);
    expect(agent.output()).not.toContain(secret);
    expect(agent.output()).toMatch(/"cluster":true/);
  } finally {
    await agent.stop();
    agent.cleanup();
  }
}

describe('credentials that the nats-servers take', () => {
  test('a user and password in nats_auth', async () => {
    await servesWithoutShowing(node(userUrl, { nats_auth: { user: 'roster', password } }), password);
  }, 90_000);

  test('a user and password in the --nats URL, and a token from ROSTER_NATS_TOKEN', async () => {
    await servesWithoutShowing(node(userUrl.replace('nats://', `nats://roster:${encodeURIComponent(password)}@`)), password);
    await servesWithoutShowing(node(tokenUrl, undefined, { ROSTER_NATS_TOKEN: token }), token);
  }, 90_000);
});

describe('credentials that do not do', () => {
  test('a wrong password, or none, stops the start naming the setting', async () => {
    const wrong = await runToExit(['--nats', userUrl.replace('nats://', 'nats://roster:not-it@'), '--gossip-listen', `127.0.0.1:${await freePort()}`]);
    expect(wrong.code).toBe(1);
    expect(wrong.out).toMatch(/roster: JetStreamLog.open: connecting to the nats-servers nats:\/\/127.0.0.1:\d+: the nats-servers refused this node's credentials \(.*\): set nats_auth in the config file, or the user and password in the --nats URLs/);
    expect(wrong.out).not.toContain('not-it');
    const none = await runToExit(['--nats', userUrl, '--gossip-listen', `127.0.0.1:${await freePort()}`]);
    expect(none.code).toBe(1);
    expect(none.out).toMatch(/roster: JetStreamLog.open: connecting to the nats-servers nats:\/\/127.0.0.1:\d+: the nats-servers refused a connection without credentials/);
  }, 90_000);

  test('contradictory settings exit 2 without quoting the secret', async () => {
    const config = join(dir, 'both.json');
    writeFileSync(config, JSON.stringify({ nats_auth: { user: 'roster', password, token } }));
    const both = await runToExit(['--nats', userUrl, '--config-file', config]);
    expect([both.code, both.out]).toEqual([2, expect.stringMatching(/nats_auth: give a user and password, or a token, not both/)]);
    const twice = await runToExit(['--nats', `nats://a:${password}@127.0.0.1:1,nats://b:${password}@127.0.0.1:2`]);
    expect([twice.code, twice.out]).toEqual([2, expect.stringMatching(/--nats: the URLs carry different credentials; give them once, in nats_auth/)]);
    writeFileSync(config, JSON.stringify({ nats_auth: { user: 'roster', pasword: password } }));
    const typo = await runToExit(['--nats', userUrl, '--config-file', config]);
    expect([typo.code, typo.out]).toEqual([2, expect.stringMatching(/unknown setting "nats_auth.pasword"/)]);
    for (const r of [both, twice, typo]) expect(r.out).not.toContain(password);
    // A server URL that does not parse is a setting to fix, refused at once (not waited for as a server not up yet).
    const malformed = await runToExit(['--nats', 'nats://[::1']);
    expect([malformed.code, malformed.out]).toEqual([2, expect.stringMatching(/--nats: "nats:\/\/\[::1" is not a server URL such as nats:\/\/host:4222/)]);
  }, 60_000);
});
