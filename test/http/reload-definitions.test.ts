// Goal: the config file's services and checks against a really started agent, at reload and at start. A file
// whose definitions the registry would refuse (a check naming a service that is neither in the file nor
// registered) fails the reload before anything changes: limits, log level and services stay as they were.
// The agent remembers which definitions came from the file across restarts, so a service the file drops
// while the agent is stopped is deregistered at the next start. The state quota judges the file's new
// definitions at start as on a reload (a start they would pass it stops, exit 2, naming them), and a
// reload judges them under the quota the file itself sets.
import { mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, test } from 'vitest';
import { client, startAgent, tempDataDir, type Agent } from '../support/agent.ts';
import { roster } from '../cli/support.ts';

let dir: string;
let file: string;
const write = (config: unknown) => writeFileSync(file, JSON.stringify(config));
const services = async (agent: Agent) => Object.keys((await client(agent).get('/v1/agent/services')).json()).sort();

beforeAll(() => {
  dir = mkdtempSync(join(tmpdir(), 'roster-reload-defs-'));
  file = join(dir, 'config.json');
});
afterAll(() => rmSync(dir, { recursive: true, force: true }));

describe('a reload whose definitions the registry would refuse', () => {
  const dataDir = tempDataDir();
  let agent: Agent;
  beforeAll(async () => {
    write({ log_level: 'debug', services: [{ Name: 'a', ID: 'a' }] });
    agent = await startAgent({ dataDir, args: ['--config-file', file] });
  }, 30_000);
  afterAll(async () => {
    await agent?.stop();
    rmSync(dataDir, { recursive: true, force: true });
  });

  test('changes nothing: limits, log level and services stay; a later good reload and a restart keep the record true', async () => {
    const c = client(agent);
    write({
      log_level: 'error', limits: { kv_max_value_size: 100 }, services: [{ Name: 'b', ID: 'b' }],
      checks: [{ CheckID: 'x', Name: 'x', TTL: '10s', ServiceID: 'typo-in-service-id' }],
    });
    const r = await roster(['reload'], { agent: agent.url });
    expect(r.code).toBe(1);
    expect((await c.put('/v1/kv/k', 'v'.repeat(200))).status).toBe(200);
    expect(await services(agent)).toEqual(['a']);
    expect(r.stderr).toMatch(/check "x": its ServiceID "typo-in-service-id" names no service of the file nor one that stays registered on this node/);
    // Still at debug: a request is logged at level 20.
    const before = agent.output().length;
    await c.get('/v1/kv/nothing');
    await expect.poll(() => agent.output().slice(before)).toMatch(/"level":20/);

    // A file check may name a service registered through the API; a reload that removes the service a check names is refused.
    expect((await c.put('/v1/agent/service/register', { ID: 'api-1', Name: 'api' })).status).toBe(200);
    write({
      services: [{ Name: 'b', ID: 'b' }],
      checks: [{ CheckID: 'x', Name: 'x', TTL: '10s', ServiceID: 'api-1' }, { CheckID: 'y', Name: 'y', TTL: '10s', ServiceID: 'b' }],
    });
    expect((await c.put('/v1/agent/reload')).status).toBe(200);
    expect(await services(agent)).toEqual(['api-1', 'b']);
    write({ checks: [{ CheckID: 'y', Name: 'y', TTL: '10s', ServiceID: 'b' }] });
    expect((await c.put('/v1/agent/reload')).json().message).toMatch(/check "y": its ServiceID "b" names no service of the file/);
    expect(await services(agent)).toEqual(['api-1', 'b']);
    expect(Object.keys((await c.get('/v1/agent/checks')).json()).sort()).toEqual(['x', 'y']);

    write({});
    expect((await roster(['reload'], { agent: agent.url })).code).toBe(0);
    expect(await services(agent)).toEqual(['api-1']);
    expect(await agent.stop()).toBe(0);
    agent = await startAgent({ dataDir, args: ['--config-file', file] });
    expect(await services(agent)).toEqual(['api-1']);
  }, 60_000);
});

describe('a reload of an unchanged file', () => {
  const dataDir = tempDataDir();
  let agent: Agent;
  const checks = async () => Object.keys((await client(agent).get('/v1/agent/checks')).json()).sort();
  beforeAll(async () => {
    write({
      services: [{ Name: 'web', ID: 'web', Check: { CheckID: 'web-ttl', TTL: '30s' } }, { Name: 'db', ID: 'db' }],
      checks: [{ CheckID: 'disk', Name: 'disk', TTL: '30s' }],
    });
    agent = await startAgent({ dataDir, args: ['--config-file', file] });
  }, 30_000);
  afterAll(async () => {
    await agent?.stop();
    rmSync(dataDir, { recursive: true, force: true });
  });

  test('registers again what was deregistered through the API, as Consul\'s reload does; what stayed is not written', async () => {
    const c = client(agent);
    expect((await c.put('/v1/agent/service/deregister/db')).status).toBe(200);
    expect((await c.put('/v1/agent/check/deregister/disk')).status).toBe(200);
    expect((await c.put('/v1/agent/check/deregister/web-ttl')).status).toBe(200);
    expect((await c.put('/v1/agent/check/pass/web-ttl')).status).toBe(404);
    expect(await services(agent)).toEqual(['web']);
    expect(await checks()).toEqual([]);
    const before = (await c.get('/v1/catalog/services')).headers.get('x-consul-index');
    expect((await c.put('/v1/agent/reload')).status).toBe(200);
    expect(await services(agent)).toEqual(['db', 'web']);
    expect(await checks()).toEqual(['disk', 'web-ttl']);
    expect((await c.put('/v1/agent/check/pass/web-ttl')).status).toBe(200);
    const index = (await c.get('/v1/catalog/services')).headers.get('x-consul-index');
    expect(Number(index)).toBeGreaterThan(Number(before));
    // Nothing missing: a reload writes nothing.
    expect((await c.put('/v1/agent/reload')).status).toBe(200);
    expect((await c.get('/v1/catalog/services')).headers.get('x-consul-index')).toBe(index);
  }, 60_000);

  test('one ID defined twice in the file fails the reload, naming it, and changes nothing', async () => {
    const c = client(agent);
    for (const config of [
      { services: [{ Name: 'web', ID: 'web' }, { Name: 'other', ID: 'web' }] },
      { services: [{ Name: 'web', ID: 'web' }], checks: [{ CheckID: 'disk', Name: 'a', TTL: '9s' }, { CheckID: 'disk', Name: 'b', TTL: '9s' }] },
      { services: [{ Name: 'web', ID: 'web', Check: { CheckID: 'disk', TTL: '9s' } }], checks: [{ CheckID: 'disk', Name: 'disk', TTL: '9s' }] },
    ]) {
      write(config);
      const r = await c.put('/v1/agent/reload');
      expect(r.status).toBe(500);
      expect(r.json().message).toMatch(/(service|check) ID "(web|disk)" is defined more than once in the file/);
      expect(await services(agent)).toEqual(['db', 'web']);
      const validate = await roster(['validate', file]);
      expect(validate.code).not.toBe(0);
      expect(validate.stderr + validate.stdout).toMatch(/is defined more than once in the file/);
    }
  }, 60_000);
});

describe('a start', () => {
  test('deregisters the services and checks an earlier run registered from the file that it no longer defines', async () => {
    const dataDir = tempDataDir();
    try {
      write({ services: [{ Name: 'b', ID: 'b' }, { Name: 'kept', ID: 'kept' }], checks: [{ CheckID: 'disk', Name: 'disk', TTL: '30s' }] });
      let agent = await startAgent({ dataDir, args: ['--config-file', file] });
      expect((await client(agent).put('/v1/agent/service/register', { ID: 'api-1', Name: 'api' })).status).toBe(200);
      expect(await services(agent)).toEqual(['api-1', 'b', 'kept']);
      expect(await agent.stop()).toBe(0);
      write({ services: [{ Name: 'kept', ID: 'kept' }] });
      agent = await startAgent({ dataDir, args: ['--config-file', file] });
      expect(await services(agent)).toEqual(['api-1', 'kept']);
      expect(Object.keys((await client(agent).get('/v1/agent/checks')).json())).toEqual([]);
      expect(await agent.stop()).toBe(0);
    } finally {
      rmSync(dataDir, { recursive: true, force: true });
    }
  }, 60_000);

  test('past the state quota: the file\'s new definitions stop it (exit 2, named); those already registered do not', async () => {
    const dataDir = tempDataDir();
    try {
      write({ services: [{ Name: 'old', ID: 'old' }] });
      let agent = await startAgent({ dataDir, args: ['--config-file', file] });
      expect((await client(agent).put('/v1/kv/a', 'x'.repeat(3000))).status).toBe(200);
      expect(await agent.stop()).toBe(0);
      write({ limits: { state_bytes_max: 1000 }, services: [{ Name: 'old', ID: 'old' }, { Name: 'new', ID: 'new' }] });
      const refused = await startAgent({ dataDir, args: ['--config-file', file] }).then(() => 'started', (err: Error) => err.message);
      expect(refused).toMatch(/agent exited \(2\) before ready/);
      expect(refused).toMatch(/service "new" would not be registered: the registry is full/);
      write({ limits: { state_bytes_max: 1000 }, services: [{ Name: 'old', ID: 'old' }] });
      agent = await startAgent({ dataDir, args: ['--config-file', file] });
      expect(await services(agent)).toEqual(['old']);
      // A reload judges new definitions under the quota the file sets: raised, it takes one.
      write({ limits: { state_bytes_max: 1_000_000 }, services: [{ Name: 'old', ID: 'old' }, { Name: 'new', ID: 'new' }] });
      expect((await client(agent).put('/v1/agent/reload')).status).toBe(200);
      expect(await services(agent)).toEqual(['new', 'old']);
      write({ limits: { state_bytes_max: 1000 }, services: [{ Name: 'other', ID: 'other' }] });
      expect((await client(agent).put('/v1/agent/reload')).json().message).toMatch(/service "other" would not be registered: the registry is full/);
      expect(await services(agent)).toEqual(['new', 'old']);
      expect((await client(agent).put('/v1/kv/b', 'y'.repeat(3000))).status).toBe(200);
      expect(await agent.stop()).toBe(0);
    } finally {
      rmSync(dataDir, { recursive: true, force: true });
    }
  }, 60_000);
});
