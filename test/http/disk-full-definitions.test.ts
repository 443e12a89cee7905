// Goal: an agent whose config file defines services and checks starts on a disk full to the last byte as
// one without them does: it takes its data-dir lock, serves reads and answers writes 503 meanwhile, and
// registers the definitions by itself once space is freed (no restart). The disk is a small tmpfs filled and freed with test/support/disk.ts.
import { mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, describe, expect, test } from 'vitest';
import { call, startAgent, type Agent } from '../support/agent.ts';
import { mountSmallDisk, type SmallDisk } from '../support/disk.ts';
import { until } from '../support/until.ts';

const mounted = mountSmallDisk(8 * 1024);
const disk: SmallDisk | undefined = typeof mounted === 'string' ? undefined : mounted;
if (typeof mounted === 'string') console.warn(`disk-full definition tests skipped: ${mounted}`);

interface HealthEntry { Service: { ID: string }; Checks: { CheckID: string; Status: string }[] }

describe.skipIf(disk === undefined)('config-file definitions on a full disk', () => {
  const agents: Agent[] = [];
  const configDir = mkdtempSync(join(tmpdir(), 'roster-disk-config-'));
  afterAll(async () => {
    disk?.free();
    for (const a of agents) await a.stop();
    disk?.unmount();
    rmSync(configDir, { recursive: true, force: true });
  });

  test('the agent starts, serves reads and refuses writes; once space is freed the service and its TTL check appear', async () => {
    const dataDir = join(disk!.dir, 'data');
    // A first agent makes the data dir while there is space, then the disk fills while it runs: the space
    // its log reserved ahead is used up until a write is refused. It stops; the disk stays full.
    const first = await startAgent({ dataDir });
    agents.push(first);
    expect((await call(first.url, 'PUT', '/v1/kv/before', 'x')).status).toBe(200);
    expect(disk!.fill()).toBeGreaterThan(0);
    let refusedFirst = 0;
    for (let k = 0; k < 60 && refusedFirst === 0; k++) {
      const status = (await call(first.url, 'PUT', `/v1/kv/fill/${k}`, 'x'.repeat(100_000))).status;
      if (status !== 200) refusedFirst = status;
    }
    expect(refusedFirst).toBe(503);
    expect(await first.stop()).toBe(0);
    const configFile = join(configDir, 'services.json');
    writeFileSync(configFile, JSON.stringify({ service: { name: 'web', id: 'web-1', port: 8080, check: { id: 'web-ttl', ttl: '10m', status: 'passing' } } }));
    disk!.fill(); // to the last byte again, should stopping have freed any
    const agent = await startAgent({ dataDir, args: ['--config-file', configFile] });
    agents.push(agent);

    expect(agent.proc.exitCode).toBeNull();
    expect((await call(agent.url, 'GET', '/v1/kv/before?raw')).text).toBe('x');
    expect((await call(agent.url, 'GET', '/v1/agent/services')).json()).toEqual({});
    const refused = await call(agent.url, 'PUT', '/v1/kv/full', 'x');
    expect(refused.status).toBe(503);
    expect(refused.headers.get('retry-after')).toBe('1');

    disk!.free();
    const services = await until('the config file\'s service to be registered', async () => {
      const r = (await call(agent.url, 'GET', '/v1/agent/services')).json<Record<string, { Service: string }>>();
      return r['web-1'] === undefined ? undefined : r;
    }, 15_000);
    expect(services['web-1']).toMatchObject({ Service: 'web' });
    const health = (await call(agent.url, 'GET', '/v1/health/service/web')).json<HealthEntry[]>();
    expect(health.map((e) => e.Service.ID)).toEqual(['web-1']);
    expect(health[0]!.Checks.find((c) => c.CheckID === 'web-ttl')).toMatchObject({ Status: 'passing' });
    expect((await call(agent.url, 'PUT', '/v1/kv/after', 'x')).status).toBe(200);
    expect(agent.proc.exitCode).toBeNull();
  }, 60_000);
});
