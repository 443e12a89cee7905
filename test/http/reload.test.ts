// Goal: reloading the config file of a started agent (SIGHUP, PUT /v1/agent/reload): the file's services and
// checks are brought in line with it, the log level changes, settings that need a restart are named in a
// warning, a broken file leaves the agent running as it was, and SIGHUP never stops it.
import { mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, test } from 'vitest';
import { client, sleep, startAgent, type Agent } from '../support/agent.ts';

const ttl = '60s';

/** Polls until `probe` holds (reloads apply asynchronously after SIGHUP). */
async function until(probe: () => Promise<boolean> | boolean, what: string, timeoutMs = 10_000): Promise<void> {
  const deadline = Date.now() + timeoutMs;
  while (Date.now() < deadline) {
    if (await probe()) return;
    await sleep(50);
  }
  throw new Error(`timed out waiting for ${what}`);
}

describe('reload', () => {
  let dir: string;
  let file: string;
  let agent: Agent;
  const write = (config: unknown) => writeFileSync(file, typeof config === 'string' ? config : JSON.stringify(config));
  const c = () => client(agent);
  const services = async () => Object.keys((await c().get('/v1/agent/services')).json()).sort();
  const checks = async () => Object.keys((await c().get('/v1/agent/checks')).json()).sort();

  beforeAll(async () => {
    dir = mkdtempSync(join(tmpdir(), 'roster-reload-'));
    file = join(dir, 'config.json');
    write({
      log_level: 'info',
      services: [{ id: 'web-1', name: 'web', port: 80 }, { id: 'db-1', name: 'db', port: 5432 }],
      checks: [{ id: 'disk', name: 'disk', ttl }],
    });
    agent = await startAgent({ args: ['--config-file', file] });
  }, 30_000);

  afterAll(async () => {
    await agent?.stop();
    agent?.cleanup();
    rmSync(dir, { recursive: true, force: true });
  });

  test('SIGHUP syncs the file\'s services and checks, leaves API registrations alone, changes the log level', async () => {
    expect(await services()).toEqual(['db-1', 'web-1']);
    expect((await c().put('/v1/agent/service/register', { ID: 'api-1', Name: 'api' })).status).toBe(200);
    expect((await c().put('/v1/kv/kept', 'value')).status).toBe(200);
    write({
      log_level: 'debug',
      services: [{ id: 'web-1', name: 'web', port: 8080 }, { id: 'cache-1', name: 'cache', port: 6379 }],
      checks: [{ id: 'mem', name: 'mem', ttl }],
    });
    agent.proc.kill('SIGHUP');
    await until(async () => (await services()).join() === 'api-1,cache-1,web-1', 'the services of the new file');
    expect(await checks()).toEqual(['mem']);
    expect((await c().get('/v1/agent/services')).json()['web-1'].Port).toBe(8080);
    // The log level is debug now (set once the definitions went through): a request is logged at debug level.
    await until(async () => {
      await c().get('/v1/status/leader');
      return /"level":20/.test(agent.output());
    }, 'a debug line');
    expect(agent.proc.exitCode).toBeNull();
    expect((await c().get('/v1/kv/kept?raw')).text).toBe('value');
  }, 30_000);

  test('PUT /v1/agent/reload answers 200 with an empty body; live limits change; a setting that needs a restart is named in a warning', async () => {
    expect((await c().put('/v1/kv/big', 'x'.repeat(200))).status).toBe(200);
    write({
      log_level: 'debug', datacenter: 'dc-other', session_ttl_min: '30s', limits: { kv_max_value_size: 100, stream_buffered_bytes_soft: 2097152 },
      services: [{ id: 'web-1', name: 'web', port: 8080 }, { id: 'cache-1', name: 'cache', port: 6379 }], checks: [{ id: 'mem', name: 'mem', ttl }],
    });
    const r = await c().put('/v1/agent/reload');
    expect(r.status).toBe(200);
    expect(r.text).toBe('');
    await until(() => /datacenter changed; it takes effect at the next restart/.test(agent.output()), 'the warning');
    await until(() => /limits.streamBufferedBytesSoft changed; it takes effect at the next restart/.test(agent.output()), 'the limit\'s warning');
    expect((await c().get('/v1/agent/self')).json().Config.Datacenter).toBe('dc1');
    // A limit that changes live: the body size.
    expect((await c().put('/v1/kv/big', 'x'.repeat(200))).status).toBe(413);
    expect((await c().put('/v1/kv/small', 'x'.repeat(50))).status).toBe(200);
    expect((await c().put('/v1/session/create', { TTL: '15s' })).status).toBe(400);
    expect((await c().put('/v1/session/create', { TTL: '30s' })).status).toBe(200);
  }, 30_000);

  test('a broken file: the agent keeps its configuration, /v1/agent/reload answers the reason, SIGHUP does not stop it', async () => {
    write('{ not json');
    const r = await c().put('/v1/agent/reload');
    expect(r.status).toBe(500);
    expect(r.json().message).toMatch(/reload failed: --config-file: .* is not valid JSON/);
    agent.proc.kill('SIGHUP');
    await until(() => /reload failed; the configuration in effect is unchanged/.test(agent.output()), 'the logged failure');
    write({ services: [{ id: 'bad', name: '' }] });
    expect((await c().put('/v1/agent/reload')).json().message).toMatch(/invalid service definition/);
    await sleep(200);
    expect(agent.proc.exitCode).toBeNull();
    expect(await services()).toEqual(['api-1', 'cache-1', 'web-1']);
    expect(await checks()).toEqual(['mem']);
  }, 30_000);
});
