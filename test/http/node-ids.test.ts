// Goal: a catalog registration's node ID is a UUID, as Consul's catalog register requires, on started
// agents in both dialects: one that is not is refused with the UUID parser's reason (seed: 400/1009 on
// `ID`; consul: Consul's 500 `Bad node ID: …`) and registers nothing; a UUID, in either case of its
// hexadecimal digits, is taken as given.
import { afterAll, beforeAll, describe, expect, test } from 'vitest';
import { call, startAgent, type Agent } from '../support/agent.ts';

let seed: Agent;
let consul: Agent;
beforeAll(async () => { [seed, consul] = await Promise.all([startAgent(), startAgent({ args: ['--dialect', 'consul'] })]); });
afterAll(async () => { for (const a of [seed, consul]) { await a?.stop(); a?.cleanup(); } });

const register = (agent: Agent, node: string, id: string) =>
  call(agent.url, 'PUT', '/v1/catalog/register', JSON.stringify({ Node: node, ID: id, Address: '10.0.0.7' }), { 'content-type': 'application/json' });
const nodeNames = async (agent: Agent) => (await call(agent.url, 'GET', '/v1/catalog/nodes')).json<{ Node: string; ID: string }[]>();

const refused: Array<[string, string, string]> = [
  ['a word', 'web-7', 'uuid string is wrong length'],
  ['36 characters without its dashes in place', 'a'.repeat(36), 'uuid is improperly formatted'],
  ['a letter past f', '0123456g-89ab-cdef-0123-456789abcdef', "encoding/hex: invalid byte: U+0067 'g'"],
];

describe('catalog register: the node ID', () => {
  test.each(refused)('%s is refused in both dialects, and nothing is registered', async (_what, id, why) => {
    const s = await register(seed, 'refused', id);
    expect(s.status, s.text).toBe(400);
    expect(s.json()).toMatchObject({ code: 1009, details: { ID: [`Format:must be a UUID: ${why}`] } });
    const c = await register(consul, 'refused', id);
    expect([c.status, c.text]).toEqual([500, `Bad node ID: ${why}`]);
    for (const agent of [seed, consul]) expect((await nodeNames(agent)).map((n) => n.Node)).not.toContain('refused');
  });

  test('a UUID is taken as given, lower or upper case', async () => {
    for (const [agent, id] of [[seed, '0123abcd-89ab-cdef-0123-456789abcdef'], [consul, '0123ABCD-89AB-CDEF-0123-456789ABCDEF']] as const) {
      const r = await register(agent, 'taken', id);
      expect([r.status, r.text]).toEqual([200, 'true']);
      expect((await nodeNames(agent)).find((n) => n.Node === 'taken')?.ID).toBe(id);
    }
  });
});
