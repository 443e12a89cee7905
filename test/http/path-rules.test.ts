// Goal: http-conventions "Path rules" 3 on prefix routes, through started agents. In the seed dialect a path
// with and without a final `/` names the same session, node, check or service (a destroy with the slash
// destroys the session and frees its lock), while a KV key or a queue's key keeps its final `/`, and a name
// that ends in `/` is reached with the slash encoded. The consul dialect keeps Consul's rule: everything
// after the prefix is the parameter, so `/v1/session/destroy/<id>/` names another, unknown session.
// The seed tests run one after another: one registers checks that another's node answers show.
import { describe, expect, test } from 'vitest';
import { client, withAgent } from '../support/agent.ts';

type Client = ReturnType<typeof client>;
let seed: Client;
let consul: Client;

withAgent((a) => { seed = client(a); });
withAgent((a) => { consul = client(a); }, { args: ['--dialect', 'consul'] });

async function heldBy(c: Client, key: string): Promise<string | undefined> {
  const r = await c.get(`/v1/kv/${key}`);
  expect(r.status, r.text).toBe(200);
  return r.json<{ Session?: string }[]>()[0]!.Session;
}

describe('a final slash after a name (seed)', () => {
  test('session info, node, renew and destroy with a final slash name the session itself', async () => {
    const id = await seed.session({ Name: 'slash' });
    expect((await seed.put(`/v1/kv/slash-lock?acquire=${id}`, 'held')).text).toBe('true');
    const got = await seed.get(`/v1/session/info/${id}/`);
    expect(got.status, got.text).toBe(200);
    expect(got.json<{ ID: string }[]>().map((s) => s.ID)).toEqual([id]);
    expect((await seed.get('/v1/session/node/node1/')).json<{ ID: string }[]>().map((s) => s.ID)).toContain(id);
    const renewed = await seed.put(`/v1/session/renew/${id}/`);
    expect(renewed.status, renewed.text).toBe(200);
    expect(renewed.json<{ ID: string }[]>()[0]!.ID).toBe(id);

    const destroyed = await seed.put(`/v1/session/destroy/${id}/`);
    expect(destroyed.status, destroyed.text).toBe(200);
    expect(destroyed.text).toBe('true');
    expect((await seed.get(`/v1/session/info/${id}`)).json()).toEqual([]);
    expect(await heldBy(seed, 'slash-lock')).toBeUndefined();
  });

  test('health and catalog reads by node or service name, with and without the slash, answer alike', async () => {
    const reg = await seed.put('/v1/agent/service/register', { Name: 'slashweb', ID: 'slashweb-1', Port: 80 });
    expect(reg.status, reg.text).toBe(200);
    for (const path of ['/v1/health/node/node1', '/v1/catalog/node/node1', '/v1/health/service/slashweb', '/v1/catalog/service/slashweb', '/v1/agent/service/slashweb-1']) {
      const bare = await seed.get(path);
      const slashed = await seed.get(`${path}/`);
      expect(bare.status, `${path}: ${bare.text}`).toBe(200);
      expect(slashed.status, `${path}/: ${slashed.text}`).toBe(200);
      expect(slashed.text, path).toBe(bare.text);
    }
    expect((await seed.get('/v1/health/node/node1/')).json<unknown[]>().length).toBeGreaterThan(0);
  });

  test('a TTL check passed with a final slash is the check itself; an id ending in / is reached as %2F', async () => {
    for (const id of ['slash-ttl', 'ends-with/']) {
      const reg = await seed.put('/v1/agent/check/register', { CheckID: id, Name: id, TTL: '60s' });
      expect(reg.status, reg.text).toBe(200);
    }
    const passed = await seed.put('/v1/agent/check/pass/slash-ttl/');
    expect(passed.status, passed.text).toBe(200);
    const encoded = await seed.put('/v1/agent/check/pass/ends-with%2F');
    expect(encoded.status, encoded.text).toBe(200);
    const checks = (await seed.get('/v1/agent/checks')).json<Record<string, { Status: string }>>();
    expect(checks['slash-ttl']!.Status).toBe('passing');
    expect(checks['ends-with/']!.Status).toBe('passing');
  });

  test('a KV key keeps its final slash: dir/ and dir are two keys', async () => {
    expect((await seed.put('/v1/kv/slashdir/', 'folder')).text).toBe('true');
    expect((await seed.get('/v1/kv/slashdir')).status).toBe(404);
    const folder = await seed.get('/v1/kv/slashdir/');
    expect(folder.json<{ Key: string }[]>()[0]!.Key).toBe('slashdir/');
    const queue = await seed.get('/v1/lock/queue/slashdir/');
    expect(queue.status, queue.text).toBe(200);
    expect(queue.json<{ Key: string }>().Key).toBe('slashdir/');
  });
});

describe.concurrent('a final slash after a name (consul dialect, as Consul)', () => {
  test('the slash is part of the id: info finds nothing, destroy answers true and the session stays', async () => {
    const id = await consul.session({ Name: 'slash' });
    expect((await consul.put(`/v1/kv/slash-lock?acquire=${id}`, 'held')).text).toBe('true');
    expect((await consul.get(`/v1/session/info/${id}/`)).json()).toEqual([]);
    const destroyed = await consul.put(`/v1/session/destroy/${id}/`);
    expect(destroyed.status, destroyed.text).toBe(200);
    expect(destroyed.text).toBe('true');
    expect((await consul.get(`/v1/session/info/${id}`)).json<{ ID: string }[]>().map((s) => s.ID)).toEqual([id]);
    expect(await heldBy(consul, 'slash-lock')).toBe(id);
  });
});
