// Goal: a full disk makes writes fail as "unavailable" and nothing else. While the data dir's disk is
// full, writes answer 503 with Retry-After and a message without paths (seed and consul dialects), the
// gRPC health of "" is NOT_SERVING and /v1/status/leader is "" (no node can commit); snapshots failing
// do not stop the agent. Once space is freed, writes succeed again without a restart, every write that
// was acknowledged is still there after a restart, and SIGTERM while the disk is full exits 0 without
// damaging the data dir. The disk is a small tmpfs filled and freed with test/support/disk.ts.
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, test } from 'vitest';
import { call, expectError, startAgent, type Agent } from '../support/agent.ts';
import { mountSmallDisk, type SmallDisk } from '../support/disk.ts';
import { processHealth } from '../support/grpc-health.ts';
import { until } from '../support/until.ts';

const mounted = mountSmallDisk(24 * 1024);
const disk: SmallDisk | undefined = typeof mounted === 'string' ? undefined : mounted;
if (typeof mounted === 'string') console.warn(`disk-full tests skipped: ${mounted}`);


/** A value of about 100 KB that names its key and round, so a lost or mixed-up write shows. */
const valueOf = (key: string) => `${key}:`.padEnd(100_000, key.slice(-1));

/** Every write each agent acknowledged (by its data dir): it must read back after the restart. */
const ackedBy = new Map<string, Map<string, string>>();
const ackedOf = (agent: Agent) => ackedBy.get(agent.dataDir) ?? ackedBy.set(agent.dataDir, new Map()).get(agent.dataDir)!;

/** Writes 100 KB values until one is refused (at most `max`); returns the refusal. */
async function writeUntilRefused(agent: Agent, prefix: string, max = 60) {
  const acked = ackedOf(agent);
  for (let k = 0; k < max; k++) {
    const key = `${prefix}/${k}`;
    const r = await call(agent.url, 'PUT', `/v1/kv/${key}`, valueOf(key));
    if (r.status === 200) acked.set(key, valueOf(key));
    else return r;
  }
  throw new Error(`${max} writes of 100 KB all succeeded on a full disk`);
}

async function expectAllAcked(agent: Agent, dataDir: string): Promise<void> {
  const acked = ackedBy.get(dataDir)!;
  expect(acked.size).toBeGreaterThan(8);
  for (const [key, value] of acked) {
    const r = await call(agent.url, 'GET', `/v1/kv/${key}?raw`);
    expect(r.status, key).toBe(200);
    expect(r.text === value, `${key} reads back whole`).toBe(true);
  }
}

const leader = async (agent: Agent) => (await call(agent.url, 'GET', '/v1/status/leader')).json<string>();

describe.skipIf(disk === undefined)('disk full', () => {
  const agents: Agent[] = [];
  let seed: Agent;
  let consul: Agent;
  const args = ['--snapshot-every', '3'];

  beforeAll(async () => {
    seed = await startAgent({ dataDir: join(disk!.dir, 'seed'), args });
    consul = await startAgent({ dataDir: join(disk!.dir, 'consul'), args: [...args, '--dialect', 'consul'] });
    agents.push(seed, consul);
  });
  afterAll(async () => {
    disk?.free();
    for (const a of agents) await a.stop();
    disk?.unmount();
  });

  test('writes answer 503 + Retry-After without paths, health is NOT_SERVING, the leader is ""', async () => {
    for (const agent of [seed, consul]) {
      for (let k = 0; k < 3; k++) {
        const key = `before/${agent === seed ? 's' : 'c'}${k}`;
        expect((await call(agent.url, 'PUT', `/v1/kv/${key}`, valueOf(key))).status).toBe(200);
        ackedOf(agent).set(key, valueOf(key));
      }
    }
    expect(disk!.fill()).toBeGreaterThan(0);

    const refused = await writeUntilRefused(seed, 'full-s');
    const body = expectError(refused, 503, 1016);
    expect(refused.headers.get('retry-after')).toBe('1');
    expect(body.message).toMatch(/no space left/);
    expect(refused.text).not.toContain(disk!.dir);
    expect(refused.text).not.toMatch(/\/(tmp|wal|snap)\b/);

    const plain = await writeUntilRefused(consul, 'full-c');
    expect(plain.status).toBe(503);
    expect(plain.headers.get('retry-after')).toBe('1');
    expect(plain.headers.get('content-type')).toMatch(/^text\/plain/);
    expect(plain.text).toMatch(/no space left/);
    expect(plain.text).not.toContain(disk!.dir);

    for (const agent of [seed, consul]) {
      expect(await processHealth(agent)).toBe('NOT_SERVING');
      expect(await leader(agent)).toBe('');
      // Still refused (not a single failure), reads still answer.
      expect((await call(agent.url, 'PUT', '/v1/kv/still', 'x')).status).toBe(503);
      expect((await call(agent.url, 'GET', '/v1/kv/before/?recurse&keys')).status).toBe(200);
      expect(agent.proc.exitCode).toBeNull();
    }
  });

  test('once space is freed, writes succeed again unaided and the agent is SERVING', async () => {
    disk!.free();
    for (const agent of [seed, consul]) {
      const key = `after/${agent === seed ? 's' : 'c'}`;
      await until('a write to succeed after space was freed', async () =>
        (await call(agent.url, 'PUT', `/v1/kv/${key}`, valueOf(key))).status === 200 ? true : undefined, 15_000);
      ackedOf(agent).set(key, valueOf(key));
      expect(await processHealth(agent)).toBe('SERVING');
      expect(await leader(agent)).toBe(agent.url.replace('http://', ''));
      for (let k = 0; k < 3; k++) {
        const more = `${key}${k}`;
        expect((await call(agent.url, 'PUT', `/v1/kv/${more}`, valueOf(more))).status).toBe(200);
        ackedOf(agent).set(more, valueOf(more));
      }
    }
  });

  test('SIGTERM while the disk is full exits 0; a restart on the full disk serves every acknowledged write and heals once space is freed', async () => {
    disk!.fill();
    await writeUntilRefused(seed, 'again-s');
    await writeUntilRefused(consul, 'again-c');
    expect(await seed.stop()).toBe(0);
    expect(await consul.stop()).toBe(0);
    // The shutdown snapshot could not be written: said, not fatal.
    expect(seed.output()).toMatch(/shutdown snapshot failed; the next start replays the log instead/);
    // Still full: the agent starts, reads everything it acknowledged, and refuses writes.
    const restarted = await startAgent({ dataDir: seed.dataDir, args });
    agents.push(restarted);
    await expectAllAcked(restarted, seed.dataDir);
    expect(await processHealth(restarted)).toBe('NOT_SERVING');
    expect((await call(restarted.url, 'PUT', '/v1/kv/still', 'x')).status).toBe(503);
    disk!.free();
    await until('a write to succeed after space was freed', async () =>
      (await call(restarted.url, 'PUT', '/v1/kv/end', 'x')).status === 200 ? true : undefined, 15_000);
    expect(await processHealth(restarted)).toBe('SERVING');
    expect(await restarted.stop()).toBe(0);
    for (const dataDir of [seed.dataDir, consul.dataDir]) {
      const again = await startAgent({ dataDir, args });
      agents.push(again);
      await expectAllAcked(again, dataDir);
    }
  });
});
