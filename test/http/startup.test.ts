// Goal: the agent starts as the README says — defaults (port 8500, ./data), ROSTER_* environment and
// flags (flags win), the consul dialect switch, the ready line at any log level, and clear failures for bad
// flags, empty settings, config values of the wrong type or past their bounds, a data dir that cannot be
// one, or a missing binding.
import { spawnSync } from 'node:child_process';
import { randomBytes } from 'node:crypto';
import { existsSync, mkdirSync, mkdtempSync, readdirSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, describe, expect, test } from 'vitest';
import { client, repoRoot, startAgent, tsxLoader, type Agent, type HttpResult } from '../support/agent.ts';

const started: Agent[] = [];
const dirs: string[] = [];
afterAll(async () => {
  for (const a of started) { await a.stop(); a.cleanup(); }
  for (const d of dirs) rmSync(d, { recursive: true, force: true });
});

function runToExit(args: string[], env: Record<string, string> = {}, cwd = repoRoot) {
  return spawnSync(process.execPath, ['--import', tsxLoader, join(repoRoot, 'src/main.ts'), ...args], {
    cwd, env: { ...process.env, ...env }, encoding: 'utf8', timeout: 20_000,
  });
}

describe('startup', () => {
  test('defaults: HTTP on 8500, gRPC on 8502 and data in ./data of the working directory', async () => {
    const cwd = mkdtempSync(join(tmpdir(), 'roster-cwd-'));
    dirs.push(cwd);
    const agent = await startAgent({ bare: true, cwd, env: { ROSTER_NODE_NAME: 'defaults' } });
    started.push(agent);
    expect(agent.url).toBe('http://127.0.0.1:8500');
    expect(agent.grpc).toBe('127.0.0.1:8502');
    expect(existsSync(join(cwd, 'data', 'wal'))).toBe(true);
    const r = await client(agent).put('/v1/session/create');
    expect(r.status).toBe(200);
    expect(r.json().ID).toMatch(/^[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}$/);
    await agent.stop();
  });

  test('ROSTER_* environment sets options and flags override it', async () => {
    const agent = await startAgent({
      env: { ROSTER_NODE_NAME: 'from-env', ROSTER_DATACENTER: 'east', ROSTER_DIALECT: 'consul' },
      args: ['--dialect', 'seed'],
      bare: false,
    });
    started.push(agent);
    const self = (await client(agent).get('/v1/agent/self')).json();
    // the leader is this node at the port it really listens on, even when --http-port 0 picked it
    expect((await client(agent).get('/v1/status/leader')).json()).toBe(agent.url.replace('http://', ''));
    // the harness passes --node-name node1, which beats ROSTER_NODE_NAME
    expect(self.Config.NodeName).toBe('node1');
    expect(self.Config.Datacenter).toBe('east');
    expect(self.DebugConfig.Dialect).toBe('seed');
  });

  test('the environment alone names the node', async () => {
    const agent = await startAgent({ bare: true, args: ['--http-port', '0', '--grpc-port', '0', '--data-dir', join(mkdtempSync(join(tmpdir(), 'roster-env-')), 'd')], env: { ROSTER_NODE_NAME: 'from-env' } });
    started.push(agent);
    expect((await client(agent).get('/v1/agent/self')).json().Config.NodeName).toBe('from-env');
  });

  test('--dialect consul answers like Consul: 200 false, empty 404, plain-text errors', async () => {
    const agent = await startAgent({ args: ['--dialect', 'consul'] });
    started.push(agent);
    const c = client(agent);
    const a = await c.session();
    const b = await c.session();
    expect((await c.put(`/v1/kv/dialect?acquire=${a}`, 'x')).text).toBe('true');
    const lost = await c.put(`/v1/kv/dialect?acquire=${b}`, 'y');
    expect([lost.status, lost.text]).toEqual([200, 'false']);
    const missing = await c.get('/v1/kv/nope');
    expect([missing.status, missing.text]).toEqual([404, '']);
    expect(missing.headers.get('x-consul-index')).toMatch(/^[1-9]\d*$/);
    const bad = await c.put('/v1/session/create', { Behavior: 'sometimes' });
    expect(bad.status).toBe(500);
    expect(bad.headers.get('content-type')).toMatch(/^text\/plain/);
    expect(bad.text).toBe("Invalid Behavior setting 'sometimes'");
    const noRoute = await c.get('/v1/nope');
    expect([noRoute.status, noRoute.text]).toEqual([404, 'Invalid URL path: not a recognized HTTP API endpoint\n']);
    for (const h of ['x-request-id', 'x-response-time', 'x-server-time']) expect(lost.headers.get(h)).toBeTruthy();
  });

  test('the dialect can come from the config file or the environment', async () => {
    const dir = mkdtempSync(join(tmpdir(), 'roster-cfg-'));
    dirs.push(dir);
    const file = join(dir, 'agent.json');
    writeFileSync(file, JSON.stringify({ dialect: 'consul' }));
    for (const agent of await Promise.all([
      startAgent({ args: ['--config-file', file] }),
      startAgent({ env: { ROSTER_DIALECT: 'consul' } }),
    ])) {
      started.push(agent);
      const c = client(agent);
      const [a, b] = [await c.session(), await c.session()];
      await c.put(`/v1/kv/dialect-src?acquire=${a}`, 'x');
      const lost = await c.put(`/v1/kv/dialect-src?acquire=${b}`, 'y');
      expect([lost.status, lost.text]).toEqual([200, 'false']);
    }
  });

  test('a config file saved with a UTF-8 byte order mark is read as without it', async () => {
    const dir = mkdtempSync(join(tmpdir(), 'roster-cfg-'));
    dirs.push(dir);
    const file = join(dir, 'agent.json');
    writeFileSync(file, `\uFEFF${JSON.stringify({ datacenter: 'bom-dc' })}`);
    const agent = await startAgent({ args: ['--config-file', file] });
    started.push(agent);
    expect((await client(agent).get('/v1/agent/self')).json<{ Config: { Datacenter: string } }>().Config.Datacenter).toBe('bom-dc');
  });

  test('cluster settings without --nats are said to be ignored', async () => {
    const agent = await startAgent({ args: ['--join', '127.0.0.1:8301'] });
    started.push(agent);
    const warned = agent.output().split('\n').filter((l) => l.includes('cluster settings given without --nats are ignored'));
    expect(warned).toHaveLength(1);
    expect(JSON.parse(warned[0]!).ignored).toEqual(['--join']);
  });

  test('the ready line is written at log level warn and error, which leave the other info lines out', async () => {
    for (const level of ['warn', 'error']) {
      const agent = await startAgent({ args: ['--log-level', level], readyTimeoutMs: 15_000 });
      started.push(agent);
      expect(agent.output()).toMatch(/"msg":"roster listening http=http:\/\/127\.0\.0\.1:\d+ grpc=/);
      expect(agent.output()).not.toContain('"msg":"state recovered"');
    }
  });

  test('an unknown flag or a bad value exits 2 with the reason and the usage', () => {
    const unknown = runToExit(['--no-such-flag']);
    expect(unknown.status).toBe(2);
    expect(unknown.stderr).toMatch(/roster: .*no-such-flag/);
    expect(unknown.stderr).toMatch(/usage: roster/);
    const badDialect = runToExit(['--dialect', 'grpc']);
    expect(badDialect.status).toBe(2);
    expect(badDialect.stderr).toMatch(/--dialect: "grpc" is not one of seed, consul/);
    const badLevel = runToExit(['--log-level', 'loud']);
    expect(badLevel.status).toBe(2);
    expect(badLevel.stderr).toMatch(/--log-level: "loud" is not one of trace, debug, info, warn, error, fatal, silent/);
    // A smallest session TTL above the largest would refuse every session with a TTL.
    const ttlMin = runToExit(['--session-ttl-min', '25h']);
    expect(ttlMin.status).toBe(2);
    expect(ttlMin.stderr).toMatch(/--session-ttl-min: "25h" is more than the largest session TTL \(24h\): no session with a TTL could be created/);
  });

  test('a node name or datacenter outside a host name\'s characters exits 2 naming it, and nothing is written; a datacenter is lowercased', async () => {
    const cwd = mkdtempSync(join(tmpdir(), 'roster-cwd-'));
    dirs.push(cwd);
    const base = ['--http-port', '0', '--grpc-port', '0', '--data-dir', join(cwd, 'd')];
    const cases: Array<[string[], RegExp]> = [
      [['--node-name', 'web/1'], /roster: --node-name: "web\/1" may hold only letters, digits/],
      [['--node-name', 'web 1'], /roster: --node-name: "web 1" may hold only/],
      [['--node-name', 'n'.repeat(129)], /roster: --node-name: "n+" may hold only .* at most 128/],
      [['--datacenter', 'a/b'], /roster: --datacenter: "a\/b" may hold only letters, digits, "-" and "_"/],
      [['--datacenter', 'east.1'], /roster: --datacenter: "east.1" may hold only/],
    ];
    for (const [args, reason] of cases) {
      const r = runToExit([...base, ...args], {}, cwd);
      expect([r.status, r.stderr], JSON.stringify(args)).toEqual([2, expect.stringMatching(reason)]);
    }
    expect(readdirSync(cwd)).toEqual([]);
    const agent = await startAgent({ bare: true, args: [...base, '--node-name', 'Web_1.example-host', '--datacenter', 'East_1'] });
    started.push(agent);
    const self = (await client(agent).get('/v1/agent/self')).json();
    expect([self.Config.NodeName, self.Config.Datacenter]).toEqual(['Web_1.example-host', 'east_1']);
    expect((await client(agent).get('/v1/catalog/nodes?dc=east_1')).status).toBe(200);
  });

  test('an empty setting — flag, environment variable or config file key, a list with no or an empty item — exits 2 naming it, and nothing is written', () => {
    const cwd = mkdtempSync(join(tmpdir(), 'roster-cwd-'));
    dirs.push(cwd);
    const ports = ['--http-port', '0', '--grpc-port', '0'];
    const fileWith = (o: object, name = 'agent.json') => { const f = join(cwd, name); writeFileSync(f, JSON.stringify(o)); return f; };
    const seeds = fileWith({ join: ['10.0.0.1:8301'] }, 'join.json');
    const d = ['--data-dir', join(cwd, 'd')];
    const cases: Array<[string[], Record<string, string>, RegExp]> = [
      // unset shell variables: the working directory as data dir, every interface, a dashboard of the
      // working directory's files, a node with a log of its own instead of the cluster's
      [ports, { ROSTER_DATA_DIR: '' }, /roster: ROSTER_DATA_DIR \(for --data-dir\) is empty/],
      [[...ports, '--data-dir', join(cwd, 'd')], { ROSTER_HTTP_HOST: '' }, /roster: ROSTER_HTTP_HOST \(for --http-host\) is empty/],
      [[...ports, '--data-dir', join(cwd, 'd')], { ROSTER_UI_DIR: '' }, /roster: ROSTER_UI_DIR \(for --ui-dir\) is empty/],
      [[...ports, '--data-dir', join(cwd, 'd')], { ROSTER_NATS: '' }, /roster: ROSTER_NATS \(for --nats\) is empty/],
      [[...ports, '--data-dir='], {}, /roster: --data-dir is empty/],
      [[...ports, '--data-dir', join(cwd, 'd'), '--config-file', fileWith({ client_addr: '' })], {}, /roster: the config file's client_addr \(for --http-host\) is empty/],
      // list settings: an empty ROSTER_JOIN must not replace the file's seeds with none
      [[...ports, ...d, '--config-file', seeds], { ROSTER_JOIN: '' }, /roster: ROSTER_JOIN \(for --join\) is empty/],
      [[...ports, ...d, '--join='], {}, /roster: --join is empty/],
      [[...ports, ...d, '--join', '10.0.0.1:8301', '--join='], {}, /roster: --join has an empty item in "10.0.0.1:8301,"/],
      [[...ports, ...d], { ROSTER_JOIN: '10.0.0.1:8301,' }, /roster: ROSTER_JOIN \(for --join\) has an empty item/],
      [[...ports, ...d, '--config-file', fileWith({ join: [] }, 'join-none.json')], {}, /roster: the config file's join \(for --join\) is empty/],
      [[...ports, ...d, '--config-file', fileWith({ nats: ['nats://127.0.0.1:4222', ''] }, 'nats.json')], {}, /roster: the config file's nats \(for --nats\) has an empty item/],
      [[...ports, ...d], { ROSTER_NATS: ' , ' }, /roster: ROSTER_NATS \(for --nats\) is empty/],
    ];
    for (const [args, env, reason] of cases) {
      const r = runToExit(args, env, cwd);
      expect([r.status, r.stderr], JSON.stringify({ args, env })).toEqual([2, expect.stringMatching(reason)]);
    }
    // the only files there are the test's own config files
    expect(readdirSync(cwd).sort()).toEqual(['agent.json', 'join-none.json', 'join.json', 'nats.json']);
  }, 120_000);

  test('a config value of the wrong type, a ports key Roster does not use, or a bound it cannot honour exits 2 naming the key, and nothing is written', () => {
    const cwd = mkdtempSync(join(tmpdir(), 'roster-cwd-'));
    dirs.push(cwd);
    const cases: Array<[object, string]> = [
      // with no --data-dir, String({}) was the data dir ./[object Object]
      [{ data_dir: {} }, '--config-file: data_dir must be a string, not an object'],
      [{ node_name: 123 }, '--config-file: node_name must be a string, not a number'],
      [{ limits: null }, '--config-file: limits must be an object, not null'],
      [{ ports: { http: 0, grpc: 0, https: 8501 } }, '--config-file: unknown setting "ports.https"'],
      // the start's own first write timed out: exit 1, not naming the setting
      [{ write_timeout: '1ms' }, 'the config file\'s write_timeout: "1ms" is less than 1s'],
      // accepted, then every PUT above 12 MiB was a 500 from the log's entry limit
      [{ limits: { kv_max_value_size: 99999999999 } }, 'the config file\'s limits.kv_max_value_size: 99999999999 is more than 12189696 bytes, the largest value one log entry can carry'],
    ];
    cases.forEach(([o, reason], i) => {
      const file = join(cwd, `agent-${i}.json`);
      writeFileSync(file, JSON.stringify(o));
      const r = runToExit(['--http-port', '0', '--grpc-port', '0', '--config-file', file], {}, cwd);
      expect([r.status, r.stderr], JSON.stringify(o)).toEqual([2, expect.stringContaining(`roster: ${reason}`)]);
    });
    expect(readdirSync(cwd).sort()).toEqual(cases.map((_, i) => `agent-${i}.json`).sort());
  }, 90_000);

  test('kv_max_value_size at its largest: a value of that size, under a long key, is stored whole', async () => {
    const dir = mkdtempSync(join(tmpdir(), 'roster-cfg-'));
    dirs.push(dir);
    const file = join(dir, 'agent.json');
    writeFileSync(file, JSON.stringify({ limits: { kv_max_value_size: 12189696 } }));
    const agent = await startAgent({ args: ['--config-file', file] });
    started.push(agent);
    // A control character's JSON escape (\u0001) is twice its percent-encoding (%01). The request line stays
    // under one loopback read (64 KiB); uWS answers 505 to a request line that arrives in two reads (reference,
    // "The HTTP edge"), which a loaded machine can make of even one loopback write: such an answer is sent again.
    const key = '%01'.repeat(18_000);
    const value = randomBytes(12189696);
    const untilWhole = async (send: () => Promise<HttpResult>) => {
      let r = await send();
      for (let tries = 1; r.status === 505 && tries < 5; tries++) r = await send();
      return r;
    };
    const put = await untilWhole(() => client(agent).put(`/v1/kv/${key}`, value));
    expect([put.status, put.text]).toEqual([200, 'true']);
    const got = await untilWhole(() => client(agent).get(`/v1/kv/${key}?raw`));
    expect([got.status, got.body.length]).toEqual([200, value.length]);
    expect(got.body.equals(value)).toBe(true);
  });

  test('HTTPS files that are not a certificate and its key exit 2 naming them', () => {
    const fixtures = join(repoRoot, 'test/probes/fixtures');
    const cases: [string, string, string][] = [
      ['localhost-cert.pem', 'localhost-key-2.pem', `--tls-key: the key in ${join(fixtures, 'localhost-key-2.pem')} does not belong to the certificate in ${join(fixtures, 'localhost-cert.pem')}`],
      ['localhost-key.pem', 'localhost-key.pem', `--tls-cert: ${join(fixtures, 'localhost-key.pem')} holds no PEM certificate`],
      ['localhost-cert.pem', 'localhost-cert.pem', `--tls-key: ${join(fixtures, 'localhost-cert.pem')} holds no PEM private key`],
      ['localhost-cert.pem', '.', `--tls-key: ${fixtures} is not a regular file`],
    ];
    for (const [cert, key, words] of cases) {
      const r = runToExit(['--http-port', '0', '--grpc-port', '0', '--data-dir', join(tmpdir(), 'roster-never-made'), '--tls-cert', join(fixtures, cert), '--tls-key', join(fixtures, key)]);
      expect(r.status).toBe(2);
      expect(r.stderr).toContain(`roster: ${words}`);
    }
  });

  test('a data dir whose lock the filesystem refuses exits 2 naming why: a directory where LOCK goes', () => {
    const dir = mkdtempSync(join(tmpdir(), 'roster-lockdir-'));
    dirs.push(dir);
    mkdirSync(join(dir, 'LOCK'));
    const r = runToExit(['--http-port', '0', '--grpc-port', '0', '--data-dir', dir]);
    expect(r.status).toBe(2);
    expect(r.stderr).toContain(`roster: --data-dir ${dir}: cannot take its lock ${join(dir, 'LOCK')}: LOCK is a directory: remove it`);
  });

  test('a data dir that is a file, or lies below one, exits 2 naming it', () => {
    for (const dir of [join(repoRoot, 'package.json'), join(repoRoot, 'package.json', 'data')]) {
      const r = runToExit(['--http-port', '0', '--grpc-port', '0', '--data-dir', dir]);
      expect(r.status).toBe(2);
      expect(r.stderr).toContain(`roster: --data-dir ${dir}: cannot be used as the data dir: it, or a directory above it, is a file`);
    }
  });

  test('a data dir on a filesystem that makes no directories (/proc) exits 2 naming it, rather than hang', () => {
    const dir = '/proc/roster-data';
    const r = runToExit(['--http-port', '0', '--grpc-port', '0', '--data-dir', dir]);
    expect(r.status).toBe(2);
    expect(r.stderr).toContain(`roster: --data-dir ${dir}: cannot be used as the data dir: ENOENT`);
  });

  test('a native binding that does not load stops the start with a clear message, exit 2', () => {
    const r = runToExit(['--http-port', '0', '--grpc-port', '0', '--data-dir', join(tmpdir(), 'roster-never')], { ROSTER_UWS_MODULE: '/nonexistent/uws.node' });
    expect(r.status).toBe(2);
    expect(r.stderr).toMatch(/uWebSockets\.js native binding did not load on node v20/);
    expect(r.stdout).not.toMatch(/roster listening/);
  });
});
