// Goal: a snapshot save while the data dir's disk is full tells the operator how to get the state out. Its
// barrier is a write, so `GET /v1/snapshot` answers the 503 writes get (Retry-After, no paths) and says
// that `?stale` saves without that write, in both dialects; `?stale` then answers the snapshot file.
import { gunzipSync } from 'node:zlib';
import { join } from 'node:path';
import { afterAll, describe, expect, test } from 'vitest';
import { call, expectError, startAgent, type Agent } from '../support/agent.ts';
import { mountSmallDisk, type SmallDisk } from '../support/disk.ts';

const mounted = mountSmallDisk(16 * 1024);
const disk: SmallDisk | undefined = typeof mounted === 'string' ? undefined : mounted;
if (typeof mounted === 'string') console.warn(`snapshot-disk-full tests skipped: ${mounted}`);

const agents: Agent[] = [];
afterAll(async () => {
  disk?.free();
  for (const a of agents) await a.kill9();
  disk?.unmount();
});

/** Writes 100 KB values until one is refused; fails the test if none is within `max`. */
async function writeUntilRefused(agent: Agent, max = 60): Promise<void> {
  for (let k = 0; k < max; k++) if ((await call(agent.url, 'PUT', `/v1/kv/fill/${k}`, 'x'.repeat(100_000))).status === 503) return;
  throw new Error(`${max} writes of 100 KB all succeeded on a full disk`);
}

describe.skipIf(disk === undefined)('a snapshot save while the disk is full', () => {
  test('answers 503 advising ?stale, which saves the snapshot (seed and consul dialects)', async () => {
    const seed = await startAgent({ dataDir: join(disk!.dir, 'seed') });
    const consul = await startAgent({ dataDir: join(disk!.dir, 'consul'), args: ['--dialect', 'consul'] });
    agents.push(seed, consul);
    for (const agent of agents) expect((await call(agent.url, 'PUT', '/v1/kv/kept', 'v')).status).toBe(200);
    disk!.fill();
    for (const agent of agents) await writeUntilRefused(agent);

    const refused = await call(seed.url, 'GET', '/v1/snapshot');
    const body = expectError(refused, 503, 1016);
    expect(body.message).toMatch(/^the agent cannot store writes now: no space left on its disk; retry later, or save the snapshot without .* with \?stale \(roster snapshot save --stale\)/);
    expect(body.details).toMatchObject({ retryAfterSeconds: 1 });
    expect(refused.headers.get('retry-after')).toBe('1');
    expect(refused.text).not.toContain(disk!.dir);

    const plain = await call(consul.url, 'GET', '/v1/snapshot');
    expect(plain.status).toBe(503);
    expect(plain.headers.get('retry-after')).toBe('1');
    expect(plain.text).toMatch(/^cannot store writes now: no space left on disk; use \?stale to save a snapshot without its barrier write/);

    for (const agent of agents) {
      const stale = await call(agent.url, 'GET', '/v1/snapshot?stale');
      expect(stale.status).toBe(200);
      expect(gunzipSync(stale.body).toString()).toContain('"kept"');
    }
  }, 60_000);
});
