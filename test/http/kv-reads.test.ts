// Goal: every KV read mode of consul-compat §1.2 and KV DELETE, over HTTP.
import { describe, expect, test } from 'vitest';
import { client, expectError, withAgent } from '../support/in-process.ts';
import { type Client, type Entry, entryKeys, lockedEntryKeys, uniq, read, ok } from '../support/kv.ts';

let c: Client;

withAgent((a) => { c = client(a); });

// ------------------------------------------------------------------------------------------------
describe('KV GET modes', () => {
  test('GET single key: exact entry JSON, key order, Session omitted when unlocked, index headers', async () => {
    const key = uniq('single');
    await ok(c.put(`/v1/kv/${key}`, 'world'));
    const r = await c.get(`/v1/kv/${key}`);
    expect(r.status).toBe(200);
    expect(r.headers.get('content-type')).toMatch(/^application\/json/);
    expect(r.text).toMatch(new RegExp(
      `^\\[\\{"LockIndex":0,"Key":"${key}","Flags":0,"Value":"d29ybGQ=","CreateIndex":(\\d+),"ModifyIndex":(\\d+)\\}\\]$`));
    const [e] = r.json<Entry[]>();
    expect(Object.keys(e!)).toEqual(entryKeys);
    expect(e!.CreateIndex).toBe(e!.ModifyIndex);
    expect(r.headers.get('x-consul-index')).toBe(String(e!.ModifyIndex));
    expect(r.headers.get('x-consul-knownleader')).toBe('true');
    expect(r.headers.get('x-consul-lastcontact')).toBe('0');
  });

  test('GET single key when locked: Session appears between Value and CreateIndex', async () => {
    const key = uniq('single-locked');
    const s = await c.session();
    await ok(c.put(`/v1/kv/${key}?acquire=${s}`, 'x'));
    const r = await c.get(`/v1/kv/${key}`);
    expect(Object.keys(r.json<Entry[]>()[0]!)).toEqual(lockedEntryKeys);
    expect(r.text).toContain(`"Value":"eA==","Session":"${s}","CreateIndex":`);
  });

  test('empty body is stored as Value null', async () => {
    const key = uniq('null');
    await ok(c.put(`/v1/kv/${key}`));
    const r = await c.get(`/v1/kv/${key}`);
    expect(r.text).toContain('"Value":null,');
    const raw = await c.get(`/v1/kv/${key}?raw`);
    expect(raw.status).toBe(200);
    expect(raw.body.length).toBe(0);
  });

  test('?raw returns the bytes with Content-Type text/plain; binary values round-trip byte-exactly', async () => {
    const key = uniq('raw');
    await ok(c.put(`/v1/kv/${key}`, '{"json":"not parsed"}', { 'content-type': 'application/json' }));
    let r = await c.get(`/v1/kv/${key}?raw`);
    expect(r.status).toBe(200);
    expect(r.headers.get('content-type')).toMatch(/^text\/plain/);
    expect(r.text).toBe('{"json":"not parsed"}');

    const bin = Buffer.alloc(256);
    for (let i = 0; i < 256; i++) bin[i] = i;
    const bkey = uniq('raw-bin');
    await ok(c.put(`/v1/kv/${bkey}`, Buffer.concat([bin, Buffer.from([0xff, 0xfe, 0x00, 0x80])]), { 'content-type': 'application/octet-stream' }));
    r = await c.get(`/v1/kv/${bkey}?raw`);
    expect(r.status).toBe(200);
    expect(r.headers.get('content-type')).toMatch(/^text\/plain/);
    expect(r.body.equals(Buffer.concat([bin, Buffer.from([0xff, 0xfe, 0x00, 0x80])]))).toBe(true);
    expect((await read(c, bkey)).Value).toBe(Buffer.concat([bin, Buffer.from([0xff, 0xfe, 0x00, 0x80])]).toString('base64'));
  });

  test('?recurse: string-prefix semantics, sorted by key, index = max ModifyIndex under the prefix', async () => {
    const p = uniq('rec');
    await ok(c.put(`/v1/kv/${p}/b`, '2'));
    await ok(c.put(`/v1/kv/${p}/a`, '1'));
    await ok(c.put(`/v1/kv/${p}bar`, '3'));
    await ok(c.put(`/v1/kv/${p}/a/deep`, '4'));
    await ok(c.put(`/v1/kv/${p.slice(0, -1)}`, 'not under')); // shorter key, not matched
    const r = await c.get(`/v1/kv/${p}?recurse`);
    expect(r.status).toBe(200);
    const list = r.json<Entry[]>();
    expect(list.map((e) => e.Key)).toEqual([`${p}/a`, `${p}/a/deep`, `${p}/b`, `${p}bar`]);
    for (const e of list) expect(Object.keys(e)).toEqual(entryKeys);
    expect(r.headers.get('x-consul-index')).toBe(String(Math.max(...list.map((e) => e.ModifyIndex))));
    const slash = await c.get(`/v1/kv/${p}/?recurse`);
    expect(slash.json<Entry[]>().map((e) => e.Key)).toEqual([`${p}/a`, `${p}/a/deep`, `${p}/b`]);
  });

  test('?recurse with no match → 404 with index headers', async () => {
    const r = await c.get(`/v1/kv/${uniq('rec-none')}/?recurse`);
    expect(r.status).toBe(404);
    expect(Number(r.headers.get('x-consul-index'))).toBeGreaterThan(0);
  });

  test('?keys without separator lists all keys under the prefix, sorted', async () => {
    const p = uniq('keys');
    for (const k of ['c/d/e', 'b', 'a/y', 'a/x']) await ok(c.put(`/v1/kv/${p}/${k}`, k));
    const r = await c.get(`/v1/kv/${p}/?keys`);
    expect(r.status).toBe(200);
    expect(r.json()).toEqual([`${p}/a/x`, `${p}/a/y`, `${p}/b`, `${p}/c/d/e`]);
    expect(Number(r.headers.get('x-consul-index'))).toBeGreaterThan(0);
  });

  test('?keys&separator=/ cuts after the first separator past the prefix and deduplicates', async () => {
    const p = uniq('sep');
    for (const k of ['c/d/e', 'b', 'a/y', 'a/x', 'a/x/z']) await ok(c.put(`/v1/kv/${p}/${k}`, k));
    let r = await c.get(`/v1/kv/${p}/?keys&separator=/`);
    expect(r.status).toBe(200);
    expect(r.json()).toEqual([`${p}/a/`, `${p}/b`, `${p}/c/`]);
    r = await c.get(`/v1/kv/${p}/a/?keys&separator=/`);
    expect(r.json()).toEqual([`${p}/a/x`, `${p}/a/x/`, `${p}/a/y`]);
    // Prefix without the trailing slash: the first separator past the prefix is the one right after it.
    r = await c.get(`/v1/kv/${p}?keys&separator=/`);
    expect(r.json()).toEqual([`${p}/`]);
  });

  test('?keys with no match under a non-empty prefix → 404', async () => {
    const r = await c.get(`/v1/kv/${uniq('keys-none')}/?keys`);
    expect(r.status).toBe(404);
    expect(Number(r.headers.get('x-consul-index'))).toBeGreaterThan(0);
  });

  test('empty prefix lists every key (?keys and ?recurse on /v1/kv/)', async () => {
    const k1 = uniq('all');
    await ok(c.put(`/v1/kv/${k1}`, 'x'));
    const keys = await c.get('/v1/kv/?keys');
    expect(keys.status).toBe(200);
    const list = keys.json<string[]>();
    expect(list).toContain(k1);
    expect([...list].sort()).toEqual(list);
    const rec = await c.get('/v1/kv/?recurse');
    expect(rec.status).toBe(200);
    expect(rec.json<Entry[]>().map((e) => e.Key)).toEqual(list);
  });

  test('missing key → 404 with X-Consul-Index, KnownLeader and LastContact headers', async () => {
    const r = await c.get(`/v1/kv/${uniq('missing')}`);
    expect(r.status).toBe(404);
    expect(r.json().code).toBe(1006);
    expect(Number(r.headers.get('x-consul-index'))).toBeGreaterThan(0);
    expect(r.headers.get('x-consul-knownleader')).toBe('true');
    expect(r.headers.get('x-consul-lastcontact')).toBe('0');
    const raw = await c.get(`/v1/kv/${uniq('missing')}?raw`);
    expect(raw.status).toBe(404);
    expect(raw.headers.get('x-consul-index')).not.toBeNull();
  });

  test('deleted key → 404 whose X-Consul-Index is newer than the entry was', async () => {
    const key = uniq('tomb');
    await ok(c.put(`/v1/kv/${key}`, 'x'));
    const e = await read(c, key);
    await ok(c.del(`/v1/kv/${key}`));
    const r = await c.get(`/v1/kv/${key}`);
    expect(r.status).toBe(404);
    expect(Number(r.headers.get('x-consul-index'))).toBeGreaterThan(e.ModifyIndex);
  });
});

// ------------------------------------------------------------------------------------------------
describe('KV DELETE', () => {
  test('plain DELETE returns true and removes the key; true also for a missing key', async () => {
    const key = uniq('del');
    await ok(c.put(`/v1/kv/${key}`, 'x'));
    await ok(c.del(`/v1/kv/${key}`));
    expect((await c.get(`/v1/kv/${key}`)).status).toBe(404);
    await ok(c.del(`/v1/kv/${key}`));
    await ok(c.del(`/v1/kv/${uniq('del-never')}`));
  });

  test('DELETE ?recurse deletes by string prefix (foo deletes foo/a and foobar, not fo)', async () => {
    const p = uniq('drec');
    const foo = `${p}/foo`;
    for (const k of [`${foo}/a`, `${foo}/b/c`, `${foo}bar`, foo, `${p}/fo`, `${p}/other`]) await ok(c.put(`/v1/kv/${k}`, 'x'));
    await ok(c.del(`/v1/kv/${foo}?recurse`));
    const r = await c.get(`/v1/kv/${p}/?keys`);
    expect(r.json()).toEqual([`${p}/fo`, `${p}/other`]);
  });

  test('DELETE ?recurse with a trailing slash keeps siblings that only share the string prefix', async () => {
    const p = uniq('drec2');
    for (const k of [`${p}/a`, `${p}/b`, `${p}x`]) await ok(c.put(`/v1/kv/${k}`, 'x'));
    await ok(c.del(`/v1/kv/${p}/?recurse`));
    expect((await c.get(`/v1/kv/${p}/?recurse`)).status).toBe(404);
    expect((await read(c, `${p}x`)).Key).toBe(`${p}x`);
  });

  test('DELETE ?cas=N deletes on match; mismatch → 409 1025 and the key stays; missing key → true', async () => {
    const key = uniq('dcas');
    await ok(c.put(`/v1/kv/${key}`, 'x'));
    const e = await read(c, key);
    expectError(await c.del(`/v1/kv/${key}?cas=${e.ModifyIndex + 1000}`), 409, 1025);
    expect(await read(c, key)).toEqual(e);
    await ok(c.del(`/v1/kv/${key}?cas=${e.ModifyIndex}`));
    expect((await c.get(`/v1/kv/${key}`)).status).toBe(404);
    await ok(c.del(`/v1/kv/${uniq('dcas-missing')}?cas=5`));
  });

  test('plain DELETE on a locked key is allowed', async () => {
    const key = uniq('del-locked');
    const s = await c.session();
    await ok(c.put(`/v1/kv/${key}?acquire=${s}`, 'held'));
    await ok(c.del(`/v1/kv/${key}`));
    expect((await c.get(`/v1/kv/${key}`)).status).toBe(404);
  });
});
