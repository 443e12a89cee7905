// Goal: `GET /v1/kv/<prefix>?keys` takes the list parameters as every list answer does (docs/reference.md):
// paged with page/perPage or start/limit, counted, pretty, and a bad value refused 400/1009 — through a
// started agent. Without list parameters it stays the plain array of keys Consul clients read.
import { beforeAll, describe, expect, test } from 'vitest';
import { client, expectError, withAgent } from '../support/agent.ts';

let c: ReturnType<typeof client>;
withAgent((a) => { c = client(a); });

const keys = ['pg/a', 'pg/b', 'pg/c', 'pg/d', 'pg/e'];

beforeAll(async () => {
  for (const k of keys) expect((await c.put(`/v1/kv/${k}`, 'v')).text).toBe('true');
});

describe.concurrent('?keys with list parameters', () => {
  test('without them: the plain array of keys', async () => {
    const r = await c.get('/v1/kv/pg/?keys');
    expect(r.status, r.text).toBe(200);
    expect(r.text).toBe(JSON.stringify(keys));
  });

  test('page and perPage: the paged envelope', async () => {
    const r = await c.get('/v1/kv/pg/?keys&page=2&perPage=2');
    expect(r.status, r.text).toBe(200);
    expect(r.json()).toEqual({ records: ['pg/c', 'pg/d'], page: 2, pageSize: 2, totalRecords: 5, totalPages: 3, nextPage: 3, prevPage: 1 });
  });

  test('start and limit, count and pretty', async () => {
    const r = await c.get('/v1/kv/pg/?keys&start=5&limit=2&count=true&pretty');
    expect(r.status, r.text).toBe(200);
    expect(r.headers.get('total-count')).toBe('5');
    expect(r.json<{ records: string[] }>().records).toEqual(['pg/e']);
    expect(r.text).toContain('\n  "records": [');
  });

  test('a bad page or perPage is 400/1009, as on ?recurse', async () => {
    for (const query of ['page=0', 'perPage=0', 'perPage=101', 'page=x']) {
      const body = expectError(await c.get(`/v1/kv/pg/?keys&${query}`), 400, 1009);
      expect(Object.keys(body.details), query).toEqual([query.split('=')[0]]);
      expectError(await c.get(`/v1/kv/pg/?recurse&${query}`), 400, 1009);
    }
  });
});
