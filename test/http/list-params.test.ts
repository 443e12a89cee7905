// Goal: the conventions' list parameters on real list endpoints of a started agent — paging envelopes
// whose pages concatenate to the full list, sort, fields, equality filters, q, Total-Count, pretty —
// while lists without them stay plain arrays.
import { describe, expect, test } from 'vitest';
import { client, expectError, withAgent, type Agent } from '../support/in-process.ts';

let agent: Agent;
withAgent(async (a) => {
  agent = a;
  const c = client(a);
  for (let i = 0; i < 23; i++) await c.put(`/v1/kv/lp/k${String(i).padStart(2, '0')}?flags=${i % 3 === 0 ? '18446744073709551615' : i}`, `v${i}`);
  for (let i = 0; i < 7; i++) await c.session({ Name: `s${i}`, Behavior: i % 2 ? 'delete' : 'release' });
});

describe('list parameters', () => {
  test('without list parameters a list is a plain array', async () => {
    const r = await client(agent).get('/v1/kv/lp/?recurse');
    expect(Array.isArray(r.json())).toBe(true);
    expect(r.text).toContain('"Flags":18446744073709551615');
  });

  test('page/perPage: an envelope; the pages concatenate to the full list', async () => {
    const c = client(agent);
    const full = (await c.get('/v1/kv/lp/?recurse')).json<{ Key: string }[]>();
    const seen: string[] = [];
    for (let page = 1; page <= 3; page++) {
      const body = (await c.get(`/v1/kv/lp/?recurse&page=${page}&perPage=10`)).json();
      expect(body).toMatchObject({ page, pageSize: 10, totalRecords: 23, totalPages: 3, prevPage: page === 1 ? null : page - 1, nextPage: page === 3 ? null : page + 1 });
      seen.push(...body.records.map((r: { Key: string }) => r.Key));
    }
    expect(seen).toEqual(full.map((e) => e.Key));
  });

  test('start/limit, sort, fields, equality, q and count', async () => {
    const c = client(agent);
    const byStart = (await c.get('/v1/kv/lp/?recurse&start=11&limit=5')).json();
    expect(byStart.records.map((r: { Key: string }) => r.Key)).toEqual(['lp/k10', 'lp/k11', 'lp/k12', 'lp/k13', 'lp/k14']);
    const sorted = (await c.get('/v1/session/list?sort=-Name&fields=Name,Behavior')).json();
    expect(sorted).toEqual(['s6', 's5', 's4', 's3', 's2', 's1', 's0'].map((n, i) => ({ Name: n, Behavior: (6 - i) % 2 ? 'delete' : 'release' })));
    const deletes = (await c.get('/v1/session/list?Behavior=delete&fields=Name&sort=Name')).json();
    expect(deletes).toEqual([{ Name: 's1' }, { Name: 's3' }, { Name: 's5' }]);
    const q = await c.get('/v1/kv/lp/?recurse&q=Key:lp/k1*+-LockIndex:1&count=true&fields=Key');
    expect(q.headers.get('total-count')).toBe('10');
    expect(q.json<{ Key: string }[]>().map((r) => r.Key)).toEqual(Array.from({ length: 10 }, (_, i) => `lp/k1${i}`));
    const pretty = await c.get('/v1/session/list?pretty&fields=Name&sort=Name');
    expect(pretty.text).toContain('\n  {');
  });

  test('bad list parameters are 400 1009 naming the parameter', async () => {
    const c = client(agent);
    expect(expectError(await c.get('/v1/session/list?sort=Nope'), 400, 1009).details.sort).toBeDefined();
    expect(expectError(await c.get('/v1/session/list?perPage=101&page=1'), 400, 1009).details.perPage).toBeDefined();
    expectError(await c.get('/v1/session/list?q=Name:"open'), 400, 1009);
  });

  test('an empty list pages to an empty envelope', async () => {
    const body = (await client(agent).get('/v1/session/node/nobody?page=1&perPage=5&sort=Name')).json();
    expect(body).toMatchObject({ records: [], totalRecords: 0, totalPages: 0, nextPage: null, prevPage: null });
  });
});
