// Goal: alias checks that alias each other — a cycle, or a chain through another alias — settle on a started
// agent: each follows the checks that are not aliases behind it, names the one that failed (never a growing
// chain of aliases), stops writing once settled, and goes back to passing when the real check does (a
// cycle cannot keep itself critical).
import { afterAll, beforeAll, describe, expect, test } from 'vitest';
import { call, sleep, startAgent, type Agent } from '../support/agent.ts';

interface Check { CheckID: string; Status: string; Output: string }

let agent: Agent;
beforeAll(async () => { agent = await startAgent(); });
afterAll(async () => { await agent?.stop(); agent?.cleanup(); });

const put = async (path: string, body?: unknown) => {
  const r = await call(agent.url, 'PUT', path, body);
  expect(r.status, `${path}: ${r.text}`).toBe(200);
};
const checks = async () => (await call(agent.url, 'GET', '/v1/agent/checks')).json<Record<string, Check>>();
const index = async () => Number((await call(agent.url, 'GET', '/v1/health/state/any')).headers.get('x-consul-index'));

/** Polls until every named check has the wanted status and output (10 s at most); returns them. */
async function until(want: Record<string, [string, string]>): Promise<Record<string, Check>> {
  let seen: Record<string, Check> = {};
  for (const deadline = Date.now() + 10_000; Date.now() < deadline; await sleep(100)) {
    seen = await checks();
    if (Object.entries(want).every(([id, [status, output]]) => seen[id]?.Status === status && seen[id]?.Output === output)) return seen;
  }
  const got = Object.fromEntries(Object.keys(want).map((id) => [id, [seen[id]?.Status, seen[id]?.Output.slice(0, 200), seen[id]?.Output.length]]));
  throw new Error(`checks did not settle: ${JSON.stringify(got)}`);
}

/** The registry index does not move for 1.5 s: nothing is being written. */
async function expectQuiet(): Promise<void> {
  const before = await index();
  await sleep(1500);
  expect(await index()).toBe(before);
}

describe('alias checks aliasing alias checks', () => {
  test('a cycle of two aliases settles, follows the real check both ways, and stays quiet', async () => {
    await put('/v1/agent/service/register', { Name: 'cyc-a', Checks: [
      { CheckID: 'a-ttl', Name: 'a ttl', TTL: '10m', Status: 'passing' },
      { CheckID: 'a-alias', Name: 'a alias', AliasService: 'cyc-b' },
    ] });
    await put('/v1/agent/service/register', { Name: 'cyc-b', Check: { CheckID: 'b-alias', Name: 'b alias', AliasService: 'cyc-a' } });
    const passing: [string, string] = ['passing', 'All checks passing.'];
    await until({ 'a-alias': passing, 'b-alias': passing });
    await expectQuiet();

    await put('/v1/agent/check/fail/a-ttl?note=down');
    const failing: [string, string] = ['critical', 'Aliased check "a ttl" failing: down'];
    await until({ 'a-alias': failing, 'b-alias': failing });
    await expectQuiet();

    await put('/v1/agent/check/pass/a-ttl');
    await until({ 'a-alias': passing, 'b-alias': passing });
    await expectQuiet();
  });

  test('a chain through an alias of a missing service names that alias', async () => {
    await put('/v1/agent/service/register', { Name: 'chain-mid', Check: { CheckID: 'mid-alias', Name: 'mid alias', AliasService: 'chain-missing' } });
    await put('/v1/agent/service/register', { Name: 'chain-top', Check: { CheckID: 'top-alias', Name: 'top alias', AliasService: 'chain-mid' } });
    const missing = 'Service chain-missing could not be found on node node1';
    await until({ 'mid-alias': ['critical', missing], 'top-alias': ['critical', `Aliased check "mid alias" failing: ${missing}`] });
    await expectQuiet();
  });
});
