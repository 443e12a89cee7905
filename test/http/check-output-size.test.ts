// Goal: a check's OutputMaxSize only lowers the agent's output cap (4096 bytes), as in Consul: 0 keeps the cap,
// a larger value is taken and held to the cap, a smaller one lowers it, and only a negative one is refused
// (seed 400/1009 on the field; consul 400 with Consul's text), for a check and for one inside a service, in
// both dialects, on started agents. What a TTL update keeps shows the cap each check got.
import { afterAll, beforeAll, describe, expect, test } from 'vitest';
import { call, startAgent, type Agent } from '../support/agent.ts';

let seed: Agent;
let consul: Agent;
beforeAll(async () => { [seed, consul] = await Promise.all([startAgent(), startAgent({ args: ['--dialect', 'consul'] })]); });
afterAll(async () => { for (const a of [seed, consul]) { await a?.stop(); a?.cleanup(); } });

const put = (agent: Agent, path: string, body: unknown) => call(agent.url, 'PUT', path, body);
const note = 'n'.repeat(5000);

/** The Output a TTL check keeps of a 5000-byte note. */
async function keptOutput(agent: Agent, checkId: string): Promise<string> {
  const passed = await put(agent, `/v1/agent/check/update/${checkId}`, { Status: 'passing', Output: note });
  expect(passed.status, passed.text).toBe(200);
  const checks = (await call(agent.url, 'GET', '/v1/agent/checks')).json<Record<string, { Output: string }>>();
  return checks[checkId]!.Output;
}

const capped = (bytes: number) => `${'n'.repeat(bytes)} ... (captured ${bytes} of 5000 bytes)`;

const accepted: Array<[string, number | null, number]> = [
  ['0 keeps the cap', 0, 4096],
  ['null keeps the cap', null, 4096],
  ['8192 is held to the cap', 8192, 4096],
  ['2^53 - 1 is held to the cap', Number.MAX_SAFE_INTEGER, 4096],
  ['100 lowers it', 100, 100],
];

describe.each([['seed', () => seed], ['consul', () => consul]] as const)('%s dialect', (_dialect, agentOf) => {
  test.each(accepted)('OutputMaxSize %s: a check and a service check are registered with that cap', async (what, size, cap) => {
    const agent = agentOf();
    const id = `o-${what.split(' ')[0]}`;
    const r = await put(agent, '/v1/agent/check/register', { ID: id, Name: 'o', TTL: '60s', OutputMaxSize: size });
    expect(r.status, r.text).toBe(200);
    expect(await keptOutput(agent, id)).toBe(capped(cap));
    const s = await put(agent, '/v1/agent/service/register', { Name: `s${id}`, Check: { CheckID: `s${id}`, TTL: '60s', OutputMaxSize: size } });
    expect(s.status, s.text).toBe(200);
    expect(await keptOutput(agent, `s${id}`)).toBe(capped(cap));
  });
});

describe('a negative OutputMaxSize', () => {
  const bodies: Array<[string, string, Record<string, unknown>]> = [
    ['a check', '/v1/agent/check/register', { ID: 'neg', Name: 'neg', TTL: '60s', OutputMaxSize: -1 }],
    ['a service check', '/v1/agent/service/register', { Name: 'neg', Check: { TTL: '60s', OutputMaxSize: -1 } }],
  ];

  test.each(bodies)('in %s is refused in both dialects, and nothing is registered', async (_what, path, body) => {
    const s = await put(seed, path, body);
    expect(s.status, s.text).toBe(400);
    expect(s.json()).toMatchObject({ code: 1009, details: { OutputMaxSize: ["Range:must not be negative (0 keeps the agent's cap)"] } });
    const c = await put(consul, path, body);
    expect([c.status, c.text]).toEqual([400, 'Invalid check: MaxOutputMaxSize must be positive']);
    for (const agent of [seed, consul]) {
      expect((await call(agent.url, 'GET', '/v1/agent/checks')).json()).not.toHaveProperty('neg');
      expect((await call(agent.url, 'GET', '/v1/agent/services')).json()).not.toHaveProperty('neg');
    }
  });

  test('Consul answers first for the probe kind\'s own rules', async () => {
    const c = await put(consul, '/v1/agent/check/register', { Name: 'neg', OutputMaxSize: -1 });
    expect([c.status, c.text]).toEqual([400, 'Invalid check: TTL must be > 0 for TTL checks']);
  });
});
