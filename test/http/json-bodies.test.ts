// Goal: JSON request bodies. One whose bytes are not UTF-8 is refused by the seed dialect (400, 1024) and
// changes nothing, on every route that reads a JSON body (a service, a check, a session, a transaction):
// decoded, each such byte would become U+FFFD, and two different names one. The consul dialect decodes them
// as Go's encoding/json does, and names in its refusal of a body that is not an object the Go type Consul
// decodes that route's body into.
import { describe, expect, test } from 'vitest';
import { client, startAgent, type Agent } from '../support/in-process.ts';
import { forSuite } from '../support/agent.ts';

const json = { 'content-type': 'application/json' };
/** `{"ID":"u8-<byte>", …}` with one byte that is not UTF-8 in the name. */
const withByte = (text: string, byte: number) => {
  const [before, after] = text.split('#');
  return Buffer.concat([Buffer.from(before!), Buffer.from([byte]), Buffer.from(after!)]);
};

describe('the seed dialect', () => {
  let agent: Agent;
  forSuite(() => startAgent(), (a) => { agent = a; });

  test.each([
    ['a service', '/v1/agent/service/register', '{"ID":"u8-#","Name":"u8","Port":1}'],
    ['a check', '/v1/agent/check/register', '{"ID":"u8-#","Name":"u8","TTL":"30s"}'],
    ['a session', '/v1/session/create', '{"Name":"u8-#"}'],
    ['a transaction', '/v1/txn', '[{"KV":{"Verb":"set","Key":"u8/#","Value":"eA=="}}]'],
  ])('refuses %s whose body is not UTF-8, and changes nothing', async (_what, path, text) => {
    const c = client(agent);
    const before = (await c.get('/v1/kv/?recurse')).headers.get('x-consul-index');
    for (const byte of [0xff, 0xfe, 0xc3]) {
      const r = await c.put(path, withByte(text, byte), json);
      expect(r.status).toBe(400);
      expect(r.json()).toMatchObject({ code: 1024, message: 'request body is not valid JSON: the body is not valid UTF-8' });
    }
    expect((await c.get('/v1/kv/?recurse')).headers.get('x-consul-index')).toBe(before);
    expect((await c.get('/v1/agent/services')).json()).toEqual({});
    expect(Object.keys((await c.get('/v1/agent/checks')).json())).toEqual([]);
    expect((await c.get('/v1/session/list')).json()).toEqual([]);
  });

  test('UTF-8 names beyond ASCII are taken as they are', async () => {
    const c = client(agent);
    const r = await c.put('/v1/agent/service/register', Buffer.from('{"ID":"u8-é","Name":"u8","Port":1}'), json);
    expect(r.status).toBe(200);
    expect(Object.keys((await c.get('/v1/agent/services')).json())).toEqual(['u8-é']);
    expect((await c.put('/v1/agent/service/deregister/u8-%C3%A9')).status).toBe(200);
  });
});

describe('the consul dialect', () => {
  let agent: Agent;
  forSuite(() => startAgent({ args: ['--dialect', 'consul'] }), (a) => { agent = a; });

  test('decodes a byte that is not UTF-8 into U+FFFD, as Go\'s encoding/json', async () => {
    const c = client(agent);
    const r = await c.put('/v1/agent/service/register', withByte('{"ID":"u8-#","Name":"u8","Port":1}', 0xff), json);
    expect(r.status).toBe(200);
    expect(Object.keys((await c.get('/v1/agent/services')).json())).toEqual(['u8-\uFFFD']);
  });

  test.each([
    ['/v1/catalog/register', 'structs.RegisterRequest'],
    ['/v1/catalog/deregister', 'structs.DeregisterRequest'],
    ['/v1/session/create', 'structs.Session'],
    ['/v1/agent/check/update/nope', 'agent.checkUpdate'],
  ])('a body that is not an object on %s: the text names %s', async (path, goType) => {
    const r = await client(agent).put(path, [1]);
    expect(r.status).toBe(400);
    expect(r.text).toBe(`Request decode failed: json: cannot unmarshal array into Go value of type ${goType}`);
  });
});
