// Goal: blocking queries on one service — /v1/health/service/<name>, /v1/catalog/service/<name>,
// /v1/health/checks/<name> — report and wait on that service's own index, as Consul's do, through the HTTP API
// of a started agent: another service's change neither wakes them nor moves their X-Consul-Index; a change of
// the service's checks, of its node's checks, or its last instance's removal does; a missing service wakes
// when it is registered. The index survives a restart from the shutdown snapshot and a replay after SIGKILL
// unchanged, and stays per service afterwards.
import { afterAll, beforeAll, describe, expect, test } from 'vitest';
import { client, startAgent, tempDataDir, type Agent } from '../support/agent.ts';

type Client = ReturnType<typeof client>;
const reads = ['/v1/health/service/bi-web', '/v1/catalog/service/bi-web', '/v1/health/checks/bi-web'];

const indexOf = async (c: Client, path: string): Promise<number> => {
  const r = await c.get(path);
  expect(r.status, `${path}: ${r.text}`).toBe(200);
  return Number(r.headers.get('x-consul-index'));
};

async function put(c: Client, path: string, body?: unknown): Promise<void> {
  const r = await c.put(path, body);
  expect(r.status, `${path}: ${r.text}`).toBe(200);
}

/** Blocks on `path` from its current index while `change` runs; the answer's index and how long it took. */
async function blockAcross(c: Client, path: string, wait: string, change: () => Promise<void>): Promise<{ before: number; after: number; ms: number }> {
  const before = await indexOf(c, path);
  const started = Date.now();
  const pending = c.get(`${path}${path.includes('?') ? '&' : '?'}index=${before}&wait=${wait}`);
  setTimeout(() => void change(), 200);
  const r = await pending;
  expect(r.status, r.text).toBe(200);
  return { before, after: Number(r.headers.get('x-consul-index')), ms: Date.now() - started };
}

describe('one service\'s blocking reads', () => {
  const dataDir = tempDataDir();
  let agent: Agent;
  let c: Client;
  let other = 0;
  const unrelated = () => put(c, '/v1/agent/service/register', { ID: `bi-other-${other += 1}`, Name: 'bi-other', Check: { TTL: '10m', Status: 'passing' } });

  beforeAll(async () => {
    agent = await startAgent({ dataDir, args: ['--dialect', 'consul'] });
    c = client(agent);
    await put(c, '/v1/agent/service/register', { ID: 'bi-web-1', Name: 'bi-web', Check: { CheckID: 'bi-web-ttl', TTL: '10m', Status: 'passing' } });
  });
  afterAll(async () => { await agent?.stop(); agent?.cleanup(); });

  test('another service\'s registration wakes none of them: each answers at its wait with its index unchanged', async () => {
    const results = await Promise.all(reads.map((path, i) => blockAcross(c, path, '1500ms', i === 0 ? unrelated : async () => {})));
    for (const [i, r] of results.entries()) {
      expect(r.ms, reads[i]).toBeGreaterThanOrEqual(1400);
      expect(r.after, reads[i]).toBe(r.before);
    }
    // The catalog's own reads still move with it.
    expect(await indexOf(c, '/v1/catalog/services')).toBeGreaterThan(results[0]!.before);
  });

  test('a change of the service\'s check wakes them at once with a higher index', async () => {
    for (const [path, verb] of [[reads[0]!, 'warn'], [reads[1]!, 'pass'], [reads[2]!, 'fail']] as const) {
      const r = await blockAcross(c, path, '20s', () => put(c, `/v1/agent/check/${verb}/bi-web-ttl`));
      expect(r.ms, path).toBeLessThan(10_000);
      expect(r.after, path).toBeGreaterThan(r.before);
    }
  });

  test('a change of a check of its node wakes them too (the node\'s health is the instance\'s)', async () => {
    await put(c, '/v1/agent/check/register', { ID: 'bi-node-ttl', Name: 'node', TTL: '10m', Status: 'passing' });
    const r = await blockAcross(c, reads[0]!, '20s', () => put(c, '/v1/agent/check/fail/bi-node-ttl'));
    expect(r.ms).toBeLessThan(10_000);
    expect(r.after).toBeGreaterThan(r.before);
    await put(c, '/v1/agent/check/deregister/bi-node-ttl');
  });

  test('the index survives a restart from the snapshot and a replay after SIGKILL, and stays per service', async () => {
    await put(c, '/v1/agent/check/pass/bi-web-ttl');
    const before = await Promise.all(reads.map((p) => indexOf(c, p)));
    await unrelated();
    expect(await Promise.all(reads.map((p) => indexOf(c, p)))).toEqual(before);
    await agent.stop();
    agent = await startAgent({ dataDir, args: ['--dialect', 'consul'] });
    c = client(agent);
    expect(await Promise.all(reads.map((p) => indexOf(c, p)))).toEqual(before);
    await unrelated();
    await agent.kill9();
    agent = await startAgent({ dataDir, args: ['--dialect', 'consul'] });
    c = client(agent);
    expect(await Promise.all(reads.map((p) => indexOf(c, p)))).toEqual(before);
    const r = await blockAcross(c, reads[0]!, '1500ms', unrelated);
    expect([r.after, r.ms >= 1400]).toEqual([r.before, true]);
  });

  test('its last instance\'s removal wakes them; a missing service wakes when it is registered', async () => {
    const gone = await blockAcross(c, reads[0]!, '20s', () => put(c, '/v1/agent/service/deregister/bi-web-1'));
    expect(gone.ms).toBeLessThan(10_000);
    expect(gone.after).toBeGreaterThan(gone.before);
    // A missing service reads the catalog's index, so it never goes back from what its readers saw.
    expect(await indexOf(c, reads[0]!)).toBe(await indexOf(c, '/v1/catalog/services'));
    const back = await blockAcross(c, reads[1]!, '20s', () => put(c, '/v1/agent/service/register', { ID: 'bi-web-2', Name: 'bi-web' }));
    expect(back.ms).toBeLessThan(10_000);
    expect(back.after).toBeGreaterThan(back.before);
  });
});
