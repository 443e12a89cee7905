// Goal: a snapshot file whose checksum holds but whose records the agent could not have written (edited or
// generated, then re-signed) is refused by PUT /v1/snapshot with a 400 naming the record and the field, and
// changes nothing; the agent's own snapshot of a state with every kind of record restores. A file that
// brings a script check is refused unless the agent takes script checks from remote calls, and the command
// never runs; where it is taken, the check runs only while the agent allows script checks (a reload that
// turns them off makes it critical, not run).
import { existsSync, mkdtempSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, test } from 'vitest';
import { client, expectError, sleep, startAgent, type Agent } from '../support/agent.ts';
import { resignedSnapshot } from '../support/snapshot.ts';

type Data = Record<string, any>;

const dir = mkdtempSync(join(tmpdir(), 'roster-snapshot-records-'));
let agent: Agent;
let file: Buffer;

beforeAll(async () => {
  agent = await startAgent();
  const c = client(agent);
  const holder = await c.session({ Name: 'holder', TTL: '60s', LockDelay: '5s', Behavior: 'delete' });
  expect((await c.put(`/v1/kv/lock/a?acquire=${holder}&flags=18446744073709551615`, 'held')).text).toBe('true');
  const gone = await c.session({ Name: 'gone' });
  expect((await c.put(`/v1/kv/lock/b?acquire=${gone}`, 'b')).text).toBe('true');
  expect((await c.put(`/v1/session/destroy/${gone}`)).status).toBe(200); // a lock delay on lock/b
  expect((await c.put('/v1/kv/empty')).status).toBe(200);
  expect((await c.put('/v1/kv/deleted', 'x')).status).toBe(200);
  expect((await c.del('/v1/kv/deleted')).status).toBe(200); // a tombstone
  const service = {
    ID: 'web1', Name: 'web', Tags: ['v1'], Port: 8080, Meta: { team: 'a' }, Weights: { Passing: 65535, Warning: 0 },
    TaggedAddresses: { lan: { Address: '10.0.0.1', Port: 80 } },
    Checks: [
      { CheckID: 'web-ttl', TTL: '60s' },
      { CheckID: 'web-http', HTTP: 'http://127.0.0.1:1/health', Interval: '30s', Header: { 'X-A': ['b'] }, Method: 'HEAD' },
      { CheckID: 'web-tcp', TCP: '127.0.0.1:1', Interval: '30s' },
    ],
  };
  expect((await c.put('/v1/agent/service/register', service)).status).toBe(200);
  expect((await c.put('/v1/agent/check/register', { CheckID: 'web-alias', Name: 'alias', AliasService: 'web1' })).status).toBe(200);
  const ext = {
    Node: 'ext', Address: '10.0.0.9', NodeMeta: { rack: 'r1' }, Check: { CheckID: 'ext-up', Name: 'ext', Status: 'warning' },
  };
  const registered = await c.put('/v1/catalog/register', ext);
  expect(registered.status, registered.text).toBe(200);
  await c.session({ Node: 'ext', NodeChecks: [], Name: 'on ext' });
  const saved = await c.get('/v1/snapshot');
  expect(saved.status, saved.text).toBe(200);
  file = saved.body;
}, 60_000);

afterAll(async () => {
  await agent?.stop();
  agent?.cleanup();
  rmSync(dir, { recursive: true, force: true });
});

/**
 * What a restore would change: every key and session with its indexes, the registry's index, and which
 * checks there are (not their outputs, which the agent's own probes of the http and tcp checks change
 * whenever their first run comes).
 */
async function observed(a: Agent): Promise<unknown> {
  const c = client(a);
  const kv = await c.get('/v1/kv/?recurse');
  const checks = ((await c.get('/v1/health/state/any')).json() as Data[]).map((x) => `${x.Node}/${x.CheckID}/${x.Status}/${x.CreateIndex}`);
  return { kv: kv.text, index: kv.headers.get('x-consul-index'), sessions: (await c.get('/v1/session/list')).text, checks };
}

describe('records a file may not bring', () => {
  const held = (d: Data) => d.kv.find((e: Data) => e.key === 'lock/a');
  const check = (d: Data, id: string) => d.checks.find((x: Data) => x.checkId === id);
  const cases: [string, (d: Data) => void, RegExp][] = [
    ['a key that is a number', (d) => { d.kv[0].key = 42; }, /^kv\[0\]\.key: must be string$/],
    ['a value that is not base64', (d) => { held(d).value = 'not base64!'; }, /^kv\[\d+\] \(key "lock\/a"\)\.value: must be base64 text/],
    ['flags past 2^64 - 1', (d) => { held(d).flags = '18446744073709551616'; }, /\(key "lock\/a"\)\.flags: must be at most 2\^64 - 1$/],
    ['flags that are not a number', (d) => { held(d).flags = '-1'; }, /\(key "lock\/a"\)\.flags: must be an unsigned 64-bit integer/],
    ['a lock of a session the file lacks', (d) => { held(d).session = 'nope'; }, /\(key "lock\/a"\)\.session: the lock's session "nope" is not in the snapshot$/],
    ['a key twice', (d) => { d.kv.push({ ...held(d) }); }, /^kv\[\d+\]: key "lock\/a" appears twice$/],
    ['a record that is null', (d) => { d.kv.push(null); }, /^kv\[\d+\]: must be object$/],
    ['a session behaviour', (d) => { d.sessions[0].behavior = 'explode'; }, /^sessions\[0\] \(session "[^"]+"\)\.behavior: must be one of "release", "delete"$/],
    ['a session on a node the file lacks', (d) => { d.sessions[0].node = 'ghost'; }, /\.node: node "ghost" is not in the snapshot$/],
    ['a session TTL text at odds with its value', (d) => { d.sessions.find((x: Data) => x.ttl === '60s').ttlMs = 0; }, /\.ttl: "60s" does not match ttlMs 0$/],
    ['a lock delay past 60 s', (d) => { d.sessions[0].lockDelayNs = 61e9; }, /\.lockDelayNs: must be <= 60000000000$/],
    ['a service port', (d) => { d.services[0].port = 70000; }, /^services\[0\] \(service "[^"]+" of node "[^"]+"\)\.port: must be <= 65535$/],
    ['a service meta value that is a number', (d) => { d.services.find((x: Data) => x.id === 'web1').meta.team = 7; }, /\(service "web1" of node "node1"\)\.meta\.team: must be string$/],
    ['a check status', (d) => { check(d, 'web-ttl').status = 'on fire'; }, /\(check "web-ttl" of node "node1"\)\.status: must be one of "passing", "warning", "critical"$/],
    ['an HTTP check without its URL', (d) => { delete check(d, 'web-http').definition.http; }, /\(check "web-http" of node "node1"\)\.definition: must have required property 'http'$/],
    ['a TTL check without a TTL', (d) => { check(d, 'web-ttl').definition.ttlMs = 0; }, /\(check "web-ttl" of node "node1"\)\.definition\.ttlMs: must be >= 1$/],
    ['a check of a service the file lacks', (d) => { check(d, 'web-tcp').serviceId = 'gone'; }, /\(check "web-tcp" of node "node1"\)\.serviceId: service "gone" is not on that node in the snapshot$/],
    ['a lock delay keyed by a number', (d) => { d.lockDelays[0][0] = 1; }, /^lockDelays\[0\]\[0\]: must be string$/],
    ['a negative index', (d) => { d.kvIndex = -1; }, /^kvIndex: must be >= 0$/],
  ];

  test('each is refused with 400 1022 naming the record and field, and nothing changes', async () => {
    const c = client(agent);
    const before = await observed(agent);
    for (const [what, edit, message] of cases) {
      const body = expectError(await c.put('/v1/snapshot', resignedSnapshot(file, edit)), 400, 1022);
      expect(body.message.replace(/^snapshot refused, nothing changed: /, ''), what).toMatch(message);
    }
    expect(await observed(agent)).toEqual(before);
  });

  test('the agent\'s own snapshot of every kind of record restores, re-signed as it is', async () => {
    const c = client(agent);
    const r = await c.put('/v1/snapshot', resignedSnapshot(file, () => undefined));
    expect(r.status, r.text).toBe(200);
    const lock = (await c.get('/v1/kv/lock/a')).json()[0];
    expect(lock.Flags).toBe(18446744073709551615);
    expect(lock.Session).toBeTruthy();
  });
});

describe('script checks in a file', () => {
  const marker = join(dir, 'ran');
  const withScript = () => resignedSnapshot(file, (d) => {
    const ttl = d.checks.find((x: Data) => x.checkId === 'web-ttl');
    d.checks.push({
      ...ttl, checkId: 'from-file', name: 'from file', serviceId: '', serviceName: '', serviceTags: [], type: 'script', generation: d.index,
      definition: { ...ttl.definition, ttlMs: 0, intervalMs: 1000, interval: '1s', args: ['sh', '-c', `echo ran >> ${marker}`] },
    });
  });

  test('an agent without enable_script_checks refuses the file, and the command never runs', async () => {
    const body = expectError(await client(agent).put('/v1/snapshot', withScript()), 400, 1022);
    expect(body.message).toMatch(/check "from-file" of node "node1" is a script check, and this agent takes script and container checks from remote calls only with enable_script_checks/);
    await sleep(2500);
    expect(existsSync(marker)).toBe(false);
  });

  test('an agent with it runs the check while it allows scripts; a reload that turns them off makes it critical, not run', async () => {
    const config = join(dir, 'scripts.json');
    writeFileSync(config, JSON.stringify({ enable_script_checks: true }));
    const scripts = await startAgent({ args: ['--config-file', config] });
    try {
      const c = client(scripts);
      const r = await c.put('/v1/snapshot', withScript());
      expect(r.status, r.text).toBe(200);
      const ran = async () => (existsSync(marker) ? readFileSync(marker, 'utf8').split('\n').length - 1 : 0);
      for (let i = 0; i < 50 && (await ran()) < 2; i++) await sleep(200);
      expect(await ran()).toBeGreaterThanOrEqual(2);
      writeFileSync(config, JSON.stringify({}));
      expect((await c.put('/v1/agent/reload')).status).toBe(200);
      let status: Data = {};
      for (let i = 0; i < 50 && status.Output?.includes('disabled') !== true; i++) {
        await sleep(200);
        status = (await c.get('/v1/agent/checks')).json()['from-file'] ?? {};
      }
      expect(status.Status).toBe('critical');
      expect(status.Output).toMatch(/not run: script and container checks are disabled on this agent/);
      const count = await ran();
      await sleep(2500);
      expect(await ran()).toBe(count);
    } finally {
      await scripts.stop();
      scripts.cleanup();
    }
  }, 60_000);
});
