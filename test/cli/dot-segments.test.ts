// Goal: a key with `.` or `..` segments names that key, whatever the command: `roster kv put`, `kv get`,
// `kv delete --recurse` and `lock` send it to the agent as written (a URL parser would fold `tmp/../victim`
// into `victim` and `scratch/..` into the root), so no other key is written, deleted or locked.
import { writeFileSync } from 'node:fs';
import { request } from 'node:http';
import { describe, expect, test } from 'vitest';
import { roster, startRoster, until, useAgentAndScratch } from './support.ts';

const cli = useAgentAndScratch('roster-cli-dots-');
const run = (args: string[]) => roster(args, { agent: cli.agent.url });

/** Every key the agent holds (the listing's own path has no dot segment). */
async function keys(): Promise<string[]> {
  const r = await cli.http.get('/v1/kv/?keys');
  return r.status === 404 ? [] : r.json<string[]>();
}

/** Writes each key with its path sent as it is (fetch would fold the dot segments). */
async function putAll(pairs: Record<string, string>): Promise<void> {
  for (const [k, v] of Object.entries(pairs)) {
    const status = await new Promise<number | undefined>((resolve, reject) => {
      const req = request(`${cli.agent.url}/v1/kv`, { method: 'PUT', path: `/v1/kv/${k}` }, (res) => { res.resume(); resolve(res.statusCode); });
      req.once('error', reject);
      req.end(v);
    });
    expect(status).toBe(200);
  }
}

describe('keys with dot segments', () => {
  test('kv put and get of tmp/../victim and a/./b touch those keys, not victim or a/b', async () => {
    await putAll({ victim: 'keep', 'a/b': 'keep' });
    expect((await run(['kv', 'put', 'tmp/../victim', 'CLOBBERED'])).code).toBe(0);
    expect((await run(['kv', 'put', 'a/./b', 'dot'])).code).toBe(0);
    expect((await run(['kv', 'get', 'victim'])).stdout).toBe('keep\n');
    expect((await run(['kv', 'get', 'a/b'])).stdout).toBe('keep\n');
    expect((await run(['kv', 'get', 'tmp/../victim'])).stdout).toBe('CLOBBERED\n');
    expect((await run(['kv', 'get', 'a/./b'])).stdout).toBe('dot\n');
    expect(await keys()).toEqual(expect.arrayContaining(['victim', 'a/b', 'tmp/../victim', 'a/./b']));
    for (const k of ['..', '.', '%2E%2E']) expect((await run(['kv', 'put', k, k])).code).toBe(0);
    expect(await keys()).toEqual(expect.arrayContaining(['..', '.', '%2E%2E']));
    expect((await run(['kv', 'get', '%2E%2E'])).stdout).toBe('%2E%2E\n');
  });

  test('kv delete --recurse scratch/.. deletes the keys under that prefix only', async () => {
    await putAll({ 'app/a': '1', x: '1', 'scratch/../x': '2', 'scratch/..y': '3' });
    expect(await keys()).toEqual(expect.arrayContaining(['x', 'scratch/../x', 'scratch/..y']));
    const r = await run(['kv', 'delete', '--recurse', 'scratch/..']);
    expect([r.code, r.stderr]).toEqual([0, '']);
    const left = await keys();
    expect(left).toEqual(expect.arrayContaining(['app/a', 'victim', 'x']));
    expect(left.filter((k) => k.startsWith('scratch/..'))).toEqual([]);
  });

  test('lock jobs/.. holds jobs/../.lock, not .lock', async () => {
    const go = cli.file('go');
    const run = startRoster(['lock', 'jobs/..', '--', `while [ ! -e ${go} ]; do sleep 0.05; done`], { agent: cli.agent.url });
    await until('the lock key', async () => (await keys()).includes('jobs/../.lock'));
    expect(await keys()).not.toContain('.lock');
    writeFileSync(go, '');
    expect((await run.exited).code).toBe(0);
  });
});
