// Goal: KV PUT, keys, flags and parameters (consul-compat §1.2), and the seed-dialect error bodies and common
// response headers, over HTTP.
import { describe, expect, test } from 'vitest';
import { client, onFreshAgent, startAgent, expectError, withAgent } from '../support/in-process.ts';
import { type Client, type Entry, uniq, read, ok, b64 } from '../support/kv.ts';

let c: Client;

withAgent((a) => { c = client(a); });

// ------------------------------------------------------------------------------------------------
describe('KV PUT', () => {
  test('plain PUT returns true; flags default to 0; CreateIndex kept and ModifyIndex increases on change', async () => {
    const key = uniq('put');
    const r = await ok(c.put(`/v1/kv/${key}`, 'a'));
    expect(r.headers.get('content-type')).toMatch(/^application\/json/);
    const first = await read(c, key);
    expect(first.Flags).toBe(0);
    await ok(c.put(`/v1/kv/${key}`, 'b'));
    const second = await read(c, key);
    expect(second.Value).toBe(b64('b'));
    expect(second.CreateIndex).toBe(first.CreateIndex);
    expect(second.ModifyIndex).toBeGreaterThan(first.ModifyIndex);
  });

  test('PUT without flags resets Flags to 0', async () => {
    const key = uniq('flags-reset');
    await ok(c.put(`/v1/kv/${key}?flags=9`, 'a'));
    expect((await read(c, key)).Flags).toBe(9);
    await ok(c.put(`/v1/kv/${key}`, 'a'));
    expect((await read(c, key)).Flags).toBe(0);
  });

  test('identical write keeps ModifyIndex', async () => {
    const key = uniq('same');
    await ok(c.put(`/v1/kv/${key}?flags=5`, 'same'));
    const before = await read(c, key);
    await ok(c.put(`/v1/kv/${key}?flags=5`, 'same'));
    expect(await read(c, key)).toEqual(before);
  });

  test('flags are uint64 and round-trip exactly (3304740253564472344, 18446744073709551615)', async () => {
    for (const flags of ['3304740253564472344', '18446744073709551615', '16210313421097356768']) {
      const key = uniq('u64');
      await ok(c.put(`/v1/kv/${key}?flags=${flags}`, 'v'));
      const r = await c.get(`/v1/kv/${key}`);
      expect(r.text).toContain(`"Flags":${flags},`);
      const rec = await c.get(`/v1/kv/${key}?recurse`);
      expect(rec.text).toContain(`"Flags":${flags},`);
    }
  });

  test('?cas=0 only creates: first write true, second 409 1025 and value unchanged', async () => {
    const key = uniq('cas0');
    await ok(c.put(`/v1/kv/${key}?cas=0`, 'first'));
    const body = expectError(await c.put(`/v1/kv/${key}?cas=0`, 'second'), 409, 1025);
    expect(body.message).toBeTruthy();
    expect((await read(c, key)).Value).toBe(b64('first'));
  });

  test('?cas=N writes only when ModifyIndex == N (mismatch → 409 1025)', async () => {
    const key = uniq('casN');
    await ok(c.put(`/v1/kv/${key}`, 'v1'));
    const e = await read(c, key);
    expectError(await c.put(`/v1/kv/${key}?cas=${e.ModifyIndex + 1000}`, 'wrong'), 409, 1025);
    expect(await read(c, key)).toEqual(e);
    await ok(c.put(`/v1/kv/${key}?cas=${e.ModifyIndex}`, 'v2'));
    const after = await read(c, key);
    expect(after.Value).toBe(b64('v2'));
    // The old index no longer matches.
    expectError(await c.put(`/v1/kv/${key}?cas=${e.ModifyIndex}`, 'v3'), 409, 1025);
    // cas=N on a missing key fails.
    expectError(await c.put(`/v1/kv/${uniq('casN-missing')}?cas=${after.ModifyIndex}`, 'x'), 409, 1025);
  });

  test('plain PUT on a locked key is allowed and keeps Session and LockIndex', async () => {
    const key = uniq('put-locked');
    const s = await c.session();
    await ok(c.put(`/v1/kv/${key}?acquire=${s}`, 'held'));
    const before = await read(c, key);
    await ok(c.put(`/v1/kv/${key}?flags=3`, 'overwritten'));
    const after = await read(c, key);
    expect(after.Value).toBe(b64('overwritten'));
    expect(after.Flags).toBe(3);
    expect(after.Session).toBe(s);
    expect(after.LockIndex).toBe(before.LockIndex);
    expect(after.ModifyIndex).toBeGreaterThan(before.ModifyIndex);
  });

  test('PUT body of exactly 524288 bytes is accepted and stored intact', async () => {
    const key = uniq('big');
    const body = Buffer.alloc(524_288, 0x61);
    await ok(c.put(`/v1/kv/${key}`, body));
    const r = await c.get(`/v1/kv/${key}?raw`);
    expect(r.body.length).toBe(524_288);
    expect(r.body.equals(body)).toBe(true);
  });
});

// ------------------------------------------------------------------------------------------------
describe('KV keys, flags and parameters', () => {
  test('"/" in a key is part of the key and %2F decodes to "/"', async () => {
    const p = uniq('slash');
    await ok(c.put(`/v1/kv/${p}/a%2Fb`, 'encoded'));
    const e = await read(c, `${p}/a/b`);
    expect(e.Key).toBe(`${p}/a/b`);
    expect(e.Value).toBe(b64('encoded'));
    expect((await read(c, `${p}%2Fa%2Fb`)).Key).toBe(`${p}/a/b`);
    await ok(c.put(`/v1/kv/${p}/x//y/`, 'slashes'));
    expect((await read(c, `${p}/x//y/`)).Key).toBe(`${p}/x//y/`);
  });

  test('%3A decodes to ":" and the path is decoded only once (%252F stays %2F)', async () => {
    const p = uniq('colon');
    await ok(c.put(`/v1/kv/${p}/service%3Aweb`, 'c'));
    expect((await read(c, `${p}/service:web`)).Key).toBe(`${p}/service:web`);
    await ok(c.put(`/v1/kv/${p}/a%252Fb`, 'twice'));
    const r = await c.get(`/v1/kv/${p}/?keys`);
    expect(r.json()).toEqual([`${p}/a%2Fb`, `${p}/service:web`]);
  });

  test('keys with spaces and unicode round-trip', async () => {
    const p = uniq('uni');
    const name = `${p}/héllo wörld/日本語 ✓`;
    const path = name.split('/').map(encodeURIComponent).join('/');
    await ok(c.put(`/v1/kv/${path}`, 'unicode'));
    const r = await c.get(`/v1/kv/${path}`);
    expect(r.status, r.text).toBe(200);
    expect(r.json<Entry[]>()[0]!.Key).toBe(name);
    const keys = await c.get(`/v1/kv/${p}/?keys`);
    expect(keys.json()).toEqual([name]);
    await ok(c.del(`/v1/kv/${encodeURIComponent(name)}`));
    expect((await c.get(`/v1/kv/${path}`)).status).toBe(404);
  });

  test('flags are presence-tested: ?recurse=false still recurses, ?keys=0 lists keys, ?raw=false is raw', async () => {
    const p = uniq('presence');
    await ok(c.put(`/v1/kv/${p}/a`, 'A'));
    await ok(c.put(`/v1/kv/${p}/b`, 'B'));
    const rec = await c.get(`/v1/kv/${p}/?recurse=false`);
    expect(rec.status).toBe(200);
    expect(rec.json<Entry[]>().map((e) => e.Key)).toEqual([`${p}/a`, `${p}/b`]);
    const keys = await c.get(`/v1/kv/${p}/?keys=0`);
    expect(keys.json()).toEqual([`${p}/a`, `${p}/b`]);
    const raw = await c.get(`/v1/kv/${p}/a?raw=false`);
    expect(raw.text).toBe('A');
    expect(raw.headers.get('content-type')).toMatch(/^text\/plain/);
    await ok(c.put(`/v1/kv/${p}/c`, 'C'));
    await ok(c.del(`/v1/kv/${p}/?recurse=false`));
    expect((await c.get(`/v1/kv/${p}/?recurse`)).status).toBe(404);
  });

  test('repeated query parameter: the first occurrence wins', async () => {
    const key = uniq('repeat');
    await ok(c.put(`/v1/kv/${key}?flags=5&flags=6`, 'x'));
    expect((await read(c, key)).Flags).toBe(5);
    const p = uniq('repeat-sep');
    for (const k of ['a/x', 'a-y']) await ok(c.put(`/v1/kv/${p}/${k}`, 'x'));
    const r = await c.get(`/v1/kv/${p}/?keys&separator=/&separator=-`);
    expect(r.json()).toEqual([`${p}/a-y`, `${p}/a/`]);
  });

  test('on a fresh store the empty prefix lists [] for ?keys, 404 for ?recurse; DELETE "" ?recurse clears everything', async () => {
    await onFreshAgent(startAgent, async (f) => {
      const empty = await f.get('/v1/kv/?keys');
      expect(empty.status).toBe(200);
      expect(empty.json()).toEqual([]);
      expect(Number(empty.headers.get('x-consul-index'))).toBeGreaterThan(0);
      expect((await f.get('/v1/kv/?recurse')).status).toBe(404);
      await ok(f.put('/v1/kv/b', '2'));
      await ok(f.put('/v1/kv/a/x', '1'));
      expect((await f.get('/v1/kv/?keys')).json()).toEqual(['a/x', 'b']);
      expect((await f.get('/v1/kv/?keys&separator=/')).json()).toEqual(['a/', 'b']);
      expect((await f.get('/v1/kv/?recurse')).json<Entry[]>().map((e) => e.Key)).toEqual(['a/x', 'b']);
      await ok(f.del('/v1/kv/?recurse'));
      expect((await f.get('/v1/kv/?keys')).json()).toEqual([]);
    });
  });
});

// ------------------------------------------------------------------------------------------------
describe('errors', () => {
  test('acquire or release with an empty session id → 400 1008', async () => {
    const key = uniq('empty-session');
    expectError(await c.put(`/v1/kv/${key}?acquire=`, 'x'), 400, 1008);
    expectError(await c.put(`/v1/kv/${key}?acquire`, 'x'), 400, 1008);
    expectError(await c.put(`/v1/kv/${key}?release=`, 'x'), 400, 1008);
    expect((await c.get(`/v1/kv/${key}`)).status).toBe(404);
  });

  test('more than one of cas/acquire/release → 400 1009', async () => {
    const key = uniq('conflict');
    const s = await c.session();
    expectError(await c.put(`/v1/kv/${key}?cas=0&acquire=${s}`, 'x'), 400, 1009);
    expectError(await c.put(`/v1/kv/${key}?acquire=${s}&release=${s}`, 'x'), 400, 1009);
    expectError(await c.put(`/v1/kv/${key}?cas=0&release=${s}`, 'x'), 400, 1009);
    expect((await c.get(`/v1/kv/${key}`)).status).toBe(404);
  });

  test('?flags=abc and ?cas=abc → 400 1009', async () => {
    const key = uniq('badflags');
    expectError(await c.put(`/v1/kv/${key}?flags=abc`, 'x'), 400, 1009);
    expectError(await c.put(`/v1/kv/${key}?flags=-1`, 'x'), 400, 1009);
    expectError(await c.put(`/v1/kv/${key}?flags=18446744073709551616`, 'x'), 400, 1009);
    expectError(await c.put(`/v1/kv/${key}?cas=abc`, 'x'), 400, 1009);
    expect((await c.get(`/v1/kv/${key}`)).status).toBe(404);
  });

  test('empty key on GET, PUT and DELETE (without recurse) → 400 1008', async () => {
    expectError(await c.get('/v1/kv/'), 400, 1008);
    expectError(await c.put('/v1/kv/', 'x'), 400, 1008);
    expectError(await c.del('/v1/kv/'), 400, 1008);
  });

  test('unknown route → 404 1006 (under /v1 and outside it)', async () => {
    expectError(await c.get('/v1/nope'), 404, 1006);
    expectError(await c.get('/nope'), 404, 1006);
    expectError(await c.put('/v1/nope/deeper', 'x'), 404, 1006);
  });

  test('wrong method → 405 with Allow listing GET, PUT, DELETE and body code 1022', async () => {
    const r = await c.req('POST', `/v1/kv/${uniq('post')}`, 'x');
    expectError(r, 405, 1022);
    const allow = (r.headers.get('allow') ?? '').split(',').map((m) => m.trim());
    expect(allow).toEqual(expect.arrayContaining(['OPTIONS', 'GET', 'PUT', 'DELETE']));
    expect(allow).not.toContain('POST');
  });

  test('OPTIONS → 200 with Allow', async () => {
    const r = await c.req('OPTIONS', `/v1/kv/${uniq('options')}`);
    expect(r.status).toBe(200);
    const allow = (r.headers.get('allow') ?? '').split(',').map((m) => m.trim());
    expect(allow).toEqual(expect.arrayContaining(['OPTIONS', 'GET', 'PUT', 'DELETE']));
  });

  test('PUT body over 524288 bytes → 413 1011 and nothing stored', async () => {
    const key = uniq('toobig');
    const r = await c.put(`/v1/kv/${key}`, Buffer.alloc(524_289, 0x62));
    expectError(r, 413, 1011);
    expect((await c.get(`/v1/kv/${key}`)).status).toBe(404);
  });

  test('bad JSON on session create → 400 1024', async () => {
    const r = await c.put('/v1/session/create', '{"Name": ', { 'content-type': 'application/json' });
    expectError(r, 400, 1024);
  });

  test('every response carries x-request-id (unique), x-response-time (number) and x-server-time (ISO 8601 with offset)', async () => {
    const key = uniq('headers');
    const s = await c.session();
    const responses = [
      await c.put(`/v1/kv/${key}`, 'x'),
      await c.get(`/v1/kv/${key}`),
      await c.get(`/v1/kv/${key}?raw`),
      await c.get(`/v1/kv/${uniq('headers-missing')}`),
      await c.put(`/v1/kv/${key}?acquire=${s}`, 'x'),
      await c.put(`/v1/kv/${key}?acquire=${await c.session()}`, 'x'),
      await c.del(`/v1/kv/${key}`),
      await c.get('/v1/nope'),
      await c.req('POST', `/v1/kv/${key}`),
      await c.req('OPTIONS', `/v1/kv/${key}`),
      await c.put('/v1/session/create', '{', { 'content-type': 'application/json' }),
      await c.put(`/v1/kv/${key}`, Buffer.alloc(524_289)),
      await c.get('/v1/status/leader'),
    ];
    expect(new Set(responses.map((r) => r.status)).size).toBeGreaterThan(4);
    const ids = new Set<string>();
    for (const r of responses) {
      const id = r.headers.get('x-request-id');
      expect(id, `x-request-id on ${r.status}`).toBeTruthy();
      ids.add(id!);
      const rt = r.headers.get('x-response-time');
      expect(rt, `x-response-time on ${r.status}`).not.toBeNull();
      expect(rt!).toMatch(/^\d+(\.\d+)?(ms)?$/);
      expect(Number.isFinite(parseFloat(rt!))).toBe(true);
      const st = r.headers.get('x-server-time');
      expect(st, `x-server-time on ${r.status}`).toMatch(/^\d{4}-\d{2}-\d{2}T\d{2}:\d{2}:\d{2}(\.\d+)?[+-]\d{2}:\d{2}$/);
      const t = Date.parse(st!);
      expect(Number.isNaN(t)).toBe(false);
      expect(Math.abs(t - Date.now())).toBeLessThan(60_000);
    }
    expect(ids.size).toBe(responses.length);
  });
});
