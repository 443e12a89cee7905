// Goal: a session's TTL text is kept as the client sent it (consul-compat.md §1.1), a zero duration included:
// "0" and "0s" mean no TTL and read back as "0" and "0s", as in Consul, in both dialects, on started agents;
// a snapshot holding such a session restores.
import { afterAll, beforeAll, describe, expect, test } from 'vitest';
import { client, startAgent, type Agent } from '../support/agent.ts';

let seed: Agent;
let consul: Agent;
beforeAll(async () => { [seed, consul] = await Promise.all([startAgent(), startAgent({ args: ['--dialect', 'consul'] })]); });
afterAll(async () => { for (const a of [seed, consul]) { await a?.stop(); a?.cleanup(); } });

interface Session { ID: string; TTL: string }

async function ttlOf(agent: Agent, id: string): Promise<string> {
  const r = await client(agent).get(`/v1/session/info/${id}`);
  expect(r.status, r.text).toBe(200);
  return r.json<Session[]>()[0]!.TTL;
}

describe.each([['seed', () => seed], ['consul', () => consul]] as const)('%s dialect', (_dialect, agentOf) => {
  test.each(['', '0', '0s', '-0', '0ms', '0h0m', '15s', '1m', '1h0m'])('TTL %j reads back as sent', async (ttl) => {
    const agent = agentOf();
    const id = await client(agent).session({ TTL: ttl });
    expect(await ttlOf(agent, id)).toBe(ttl);
  });

  test('a session with TTL "0s" is one without a TTL: it holds a lock, and a renewal answers it unchanged', async () => {
    const agent = agentOf();
    const id = await client(agent).session({ TTL: '0s', LockDelay: '0s' });
    expect((await client(agent).put(`/v1/kv/ttl-zero/${_dialect}?acquire=${id}`, 'x')).text).toBe('true');
    const renewed = await client(agent).put(`/v1/session/renew/${id}`);
    expect(renewed.status, renewed.text).toBe(200);
    expect(renewed.json<Session[]>()[0]!.TTL).toBe('0s');
    const entry = (await client(agent).get(`/v1/kv/ttl-zero/${_dialect}`)).json<Array<{ Session?: string }>>();
    expect(entry[0]!.Session).toBe(id);
  });
});

test('a snapshot holding sessions with TTL "0" and "0s" restores, the texts as they were', async () => {
  const c = client(seed);
  const zero = await c.session({ Name: 'zero', TTL: '0' });
  const zeroS = await c.session({ Name: 'zero-s', TTL: '0s' });
  const saved = await c.get('/v1/snapshot');
  expect(saved.status).toBe(200);
  const restored = await c.put('/v1/snapshot', saved.body);
  expect(restored.status, restored.text).toBe(200);
  expect([await ttlOf(seed, zero), await ttlOf(seed, zeroS)]).toEqual(['0', '0s']);
});
