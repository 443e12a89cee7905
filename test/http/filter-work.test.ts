// Goal: no `?filter=` can hold the agent's event loop. A filter holds at most 128 match clauses: more is a bad
// expression, refused before anything is read (seed 400/1009, consul Consul's 500 text), naming the limit. An
// allowed filter is tried on a long list in slices, the agent answering other clients between them: with
// 2,000 instances of 20 tags each, a few requests with a 128-clause filter each took the loop for the whole
// of their evaluation, and a woken blocking query with such a filter did the same. The tests assert the order
// of answers (another client's GET /v1/status/leader is answered before any filtered request), never a time.
import { afterAll, beforeAll, describe, expect, test } from 'vitest';
import { encodeSnapshotFile, readSnapshotFile } from '../../src/state/snapshot-file.ts';
import { client, expectError, sleep, startAgent, withAgent, type Agent } from '../support/agent.ts';

type Client = ReturnType<typeof client>;

/** `n` clauses `"zz<i>" in ServiceTags` joined by `or`: tags no instance has. */
const noTags = (n: number) => Array.from({ length: n }, (_, i) => `"zz${i}" in ServiceTags`).join(' or ');
const q = (expression: string) => `filter=${encodeURIComponent(expression)}`;
/** Instance i's 20 tags: t-i to t-(i+19), modulo 40. */
const tagsOf = (i: number) => Array.from({ length: 20 }, (_, t) => `t-${(i + t) % 40}`);

describe('a filter of more than 128 match clauses', () => {
  let seed: Client;
  let consul: Client;
  withAgent((a) => { seed = client(a); });
  withAgent((a) => { consul = client(a); }, { args: ['--dialect', 'consul'] });

  const paths = ['/v1/catalog/services', '/v1/catalog/service/web', '/v1/health/service/web', '/v1/agent/services', '/v1/health/state/any'];

  test('seed: 400/1009 naming the limit and where the 129th clause begins; 128 clauses are taken; nothing changes', async () => {
    expect((await seed.put('/v1/agent/service/register', { ID: 'web-1', Name: 'web', Tags: ['zz3'] })).status).toBe(200);
    const before = await seed.get('/v1/catalog/services');
    for (const path of paths) {
      const body = expectError(await seed.get(`${path}?${q(noTags(129))}`), 400, 1009);
      expect(body.message, path).toBe('Failed to create boolean expression evaluator: 1:3219 (3218): expression too large: a filter may hold at most 128 match clauses');
      expect(body.details, path).toEqual({ filter: [`Syntax:${body.message}`] });
    }
    // Far more, as a long URL: the same answer (parsing stops at the 129th clause).
    expectError(await seed.get(`/v1/catalog/services?${q(noTags(2000))}`), 400, 1009);
    const allowed = await seed.get(`/v1/catalog/services?${q(noTags(128))}`);
    expect(allowed.status, allowed.text).toBe(200);
    expect(allowed.json()).toEqual({ web: ['zz3'] });
    const after = await seed.get('/v1/catalog/services');
    expect(after.headers.get('x-consul-index')).toBe(before.headers.get('x-consul-index'));
    expect(after.json()).toEqual(before.json());
  });

  test('consul: 500 with the evaluator\'s text naming the limit; a blocking query is refused before it waits', async () => {
    for (const path of paths) {
      const r = await consul.get(`${path}?${q(noTags(129))}`);
      expect(r.status, path).toBe(500);
      expect(r.text, path).toBe('Failed to create boolean expression evaluator: 1:3219 (3218): expression too large: a filter may hold at most 128 match clauses');
    }
    const index = (await consul.get('/v1/catalog/services')).headers.get('x-consul-index');
    const blocking = await consul.get(`/v1/catalog/services?index=${index}&wait=30s&${q(noTags(129))}`);
    expect(blocking.status).toBe(500);
    expect((await consul.get(`/v1/catalog/services?${q(noTags(128))}`)).status).toBe(200);
  });
});

describe('an allowed filter over 2,000 instances of 20 tags', { timeout: 60_000 }, () => {
  const instances = 2000;
  /** The longest filter allowed, keeping the instances tagged "t-7": 127 clauses that match nothing, then that one. */
  const heavy = q(`${noTags(127)} or "t-7" in ServiceTags`);
  let agent: Agent;
  let c: Client;

  /** Seeded through a snapshot restore (one write): an instance registered as a template, cloned 2,000 times. */
  beforeAll(async () => {
    agent = await startAgent();
    c = client(agent);
    expect((await c.put('/v1/agent/service/register', { ID: 'template', Name: 'template', Port: 1 })).status).toBe(200);
    const saved = await c.get('/v1/snapshot');
    expect(saved.status, saved.text).toBe(200);
    const { data } = readSnapshotFile(saved.body);
    const template = data.services.find((s) => s.id === 'template')!;
    data.services = Array.from({ length: instances }, (_, i) => ({
      ...template, id: `svc-${i}`, service: `svc-${i % 50}`, port: 1000 + i, tags: tagsOf(i),
    }));
    data.serviceIndexes = [];
    const { file } = await encodeSnapshotFile(data, 'node1', Date.now());
    const restored = await c.put('/v1/snapshot', file);
    expect(restored.status, restored.text).toBe(200);
    expect(Object.keys((await c.get('/v1/catalog/services')).json())).toHaveLength(50);
  });

  afterAll(async () => {
    // A stalled agent ignores SIGTERM (its event loop never runs the handler): then it is killed.
    const stopped = await Promise.race([agent?.stop().then(() => true), sleep(10_000).then(() => false)]);
    if (!stopped) await agent?.kill9();
    agent?.cleanup();
  });

  /** What the filter keeps: services whose instances have tag t-7. */
  function expected(): Record<string, string[]> {
    const out: Record<string, Set<string>> = {};
    for (let i = 0; i < instances; i++) {
      const tags = tagsOf(i);
      if (!tags.includes('t-7')) continue;
      for (const t of tags) (out[`svc-${i % 50}`] ??= new Set()).add(t);
    }
    return Object.fromEntries(Object.keys(out).sort().map((name) => [name, [...out[name]!].sort()]));
  }

  test('another client\'s GET /v1/status/leader is answered before any of 4 filtered lists sent before it', async () => {
    const order: string[] = [];
    const filtered = Array.from({ length: 4 }, () => c.get(`/v1/catalog/services?${heavy}`).then((r) => {
      order.push('filter');
      return r;
    }));
    await sleep(100);
    const leader = await c.get('/v1/status/leader');
    order.push('leader');
    const answers = await Promise.all(filtered);
    expect(leader.status).toBe(200);
    expect(order[0]).toBe('leader');
    for (const r of answers) {
      expect(r.status, r.text).toBe(200);
      expect(r.json()).toEqual(expected());
    }
  });

  test('blocking queries with the filter, woken by a registration: GET /v1/status/leader is answered before them', async () => {
    const index = (await c.get('/v1/catalog/services')).headers.get('x-consul-index');
    const order: string[] = [];
    const woken = Array.from({ length: 4 }, () => c.get(`/v1/catalog/services?index=${index}&wait=30s&${heavy}`).then((r) => {
      order.push('woken');
      return r;
    }));
    // Parked: the first read before the wait only validates the path, and answers nothing.
    await sleep(1000);
    expect(order).toEqual([]);
    const write = await c.put('/v1/agent/service/register', { ID: 'wake', Name: 'wake', Tags: ['t-7'] });
    expect(write.status).toBe(200);
    const leader = await c.get('/v1/status/leader');
    order.push('leader');
    const answers = await Promise.all(woken);
    expect(leader.status).toBe(200);
    expect(order[0]).toBe('leader');
    for (const r of answers) {
      expect(r.status, r.text).toBe(200);
      expect(r.json()).toEqual({ ...expected(), wake: ['t-7'] });
    }
  });
});
