// Goal: the conventions' error codes tell a request that lacks something from one that carries something
// wrong (http-conventions.md "Error codes": 1008 parameters incomplete, 1009 illegal parameter), the same way
// for a body field, a query parameter and a path part: a missing required one alone is 400/1008, any value
// given that breaks a rule is 400/1009, whose details name the missing fields too. On a started seed agent;
// the consul dialect keeps Consul's texts.
import { afterAll, beforeAll, describe, expect, test } from 'vitest';
import { call, expectError, startAgent, type Agent } from '../support/agent.ts';

let seed: Agent;
let consul: Agent;
beforeAll(async () => { [seed, consul] = await Promise.all([startAgent(), startAgent({ args: ['--dialect', 'consul'] })]); });
afterAll(async () => { for (const a of [seed, consul]) { await a?.stop(); a?.cleanup(); } });

const put = (agent: Agent, path: string, body?: unknown) => call(agent.url, 'PUT', path, body);

describe('a missing required parameter alone is 400/1008', () => {
  test.each([
    ['a check without Name', '/v1/agent/check/register', { TTL: '10s' }, 'missing Name: a check needs a name', { Name: ['Required:a check needs a name'] }],
    ['a check with an empty Name', '/v1/agent/check/register', { Name: '', TTL: '10s' }, 'missing Name: a check needs a name', { Name: ['Required:a check needs a name'] }],
    ['a service without Name', '/v1/agent/service/register', { Port: 80 }, 'missing Name: a service needs a name', { Name: ['Required:a service needs a name'] }],
    ['a node without Node and Address', '/v1/catalog/register', { NodeMeta: { rack: 'r1' } }, 'missing fields: Node, Address',
      { Node: ['Required:must not be empty'], Address: ['Required:must not be empty'] }],
    ['a catalog deregistration without Node', '/v1/catalog/deregister', { CheckID: 'x' }, 'Node is required', { Node: ['Required:must not be empty'] }],
    ['an acquire with an empty session id', '/v1/kv/missing/k?acquire=', 'v', 'acquire requires a session id', { acquire: ['Required:a session id is required'] }],
    ['a maintenance switch without enable', '/v1/agent/maintenance', undefined, 'enable is required: true or false', { enable: ['Required:must be true or false'] }],
  ])('%s', async (_what, path, body, message, details) => {
    const r = await put(seed, path, body);
    const refused = expectError(r, 400, 1008);
    expect(refused.message).toBe(message);
    expect(refused.details).toEqual(details);
  });

  test('a path without its id', async () => {
    expectError(await put(seed, '/v1/session/destroy/'), 400, 1008);
  });
});

describe('a value that breaks a rule is 400/1009, its details naming the missing fields too', () => {
  test.each([
    ['a service without Name, with a port past 65535', '/v1/agent/service/register', { Port: 70000 },
      { Name: ['Required:a service needs a name'], Port: ['Range:must be at most 65535'] }],
    ['a check without Name, with an unknown status', '/v1/agent/check/register', { TTL: '10s', Status: 'fine' },
      { Name: ['Required:a check needs a name'], Status: ['Enum:must be passing, warning or critical'] }],
    ['a check with a name and a bad TTL', '/v1/agent/check/register', { Name: 'c', TTL: '20' }, {
      TTL: ['Format:must be a duration such as 10s, at most 2562047h47m16.854775807s', 'Invalid:TTL must be > 0 for TTL checks'],
    }],
  ])('%s', async (_what, path, body, details) => {
    expect(expectError(await put(seed, path, body), 400, 1009).details).toEqual(details);
  });
});

test('the consul dialect answers Consul\'s texts, as before', async () => {
  const texts = await Promise.all([
    put(consul, '/v1/agent/check/register', { TTL: '10s' }), put(consul, '/v1/agent/service/register', { Port: 80 }),
    put(consul, '/v1/catalog/register', {}),
  ]);
  expect(texts.map((r) => [r.status, r.text])).toEqual([[400, 'Missing check name'], [400, 'Missing service name'], [400, 'Missing node name']]);
});
