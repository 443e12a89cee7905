// Goal: the KV HTTP API through a real process — the "Lock on a key" table (registry.md, consul-compat §3.2),
// every KV mode of consul-compat §1.2, and the seed-dialect error bodies and common response headers.
import { describe, expect, test } from 'vitest';
import { client, startAgent, type HttpResult, expectError, withAgent } from '../support/agent.ts';

type Client = ReturnType<typeof client>;

interface Entry {
  LockIndex: number;
  Key: string;
  Flags: number;
  Value: string | null;
  Session?: string;
  CreateIndex: number;
  ModifyIndex: number;
}

const entryKeys = ['LockIndex', 'Key', 'Flags', 'Value', 'CreateIndex', 'ModifyIndex'];
const lockedEntryKeys = ['LockIndex', 'Key', 'Flags', 'Value', 'Session', 'CreateIndex', 'ModifyIndex'];

let c: Client;
let seq = 0;
/** A key no other test uses. */
const uniq = (name: string) => `kvt/${name}-${++seq}`;

withAgent((a) => { c = client(a); });

async function read(key: string): Promise<Entry> {
  const r = await c.get(`/v1/kv/${key}`);
  expect(r.status, r.text).toBe(200);
  const list = r.json<Entry[]>();
  expect(list).toHaveLength(1);
  return list[0]!;
}

async function ok(p: Promise<HttpResult>): Promise<HttpResult> {
  const r = await p;
  expect(r.status, r.text).toBe(200);
  expect(r.text).toBe('true');
  return r;
}


const b64 = (s: string | Buffer) => Buffer.from(s).toString('base64');

// ------------------------------------------------------------------------------------------------
describe('Lock on a key (registry.md table, one test per row)', () => {
  test('row 1: unlocked + acquire with a session, no current holder → locked; LockIndex increases, Session set', async () => {
    const key = uniq('row1');
    const s = await c.session();
    await ok(c.put(`/v1/kv/${key}`, 'v0'));
    const before = await read(key);
    expect(before.LockIndex).toBe(0);
    expect(before.Session).toBeUndefined();

    await ok(c.put(`/v1/kv/${key}?acquire=${s}`, 'v1'));
    const after = await read(key);
    expect(after.LockIndex).toBe(before.LockIndex + 1);
    expect(after.Session).toBe(s);
    expect(after.Value).toBe(b64('v1'));
    expect(after.ModifyIndex).toBeGreaterThan(before.ModifyIndex);

    // Released then re-acquired: LockIndex increases again.
    await ok(c.put(`/v1/kv/${key}?release=${s}`, 'v1'));
    await ok(c.put(`/v1/kv/${key}?acquire=${s}`, 'v2'));
    expect((await read(key)).LockIndex).toBe(before.LockIndex + 2);
  });

  test('row 2: locked + acquire with the holding session → locked; Value updated, LockIndex unchanged', async () => {
    const key = uniq('row2');
    const s = await c.session();
    await ok(c.put(`/v1/kv/${key}?acquire=${s}`, 'first'));
    const before = await read(key);
    await ok(c.put(`/v1/kv/${key}?acquire=${s}`, 'second'));
    const after = await read(key);
    expect(after.Value).toBe(b64('second'));
    expect(after.LockIndex).toBe(before.LockIndex);
    expect(after.Session).toBe(s);
  });

  test('row 3: locked + acquire with another session → fails (409 1025 held-by-other), nothing changes', async () => {
    const key = uniq('row3');
    const s = await c.session();
    const t = await c.session();
    await ok(c.put(`/v1/kv/${key}?acquire=${s}`, 'mine'));
    const before = await read(key);
    const r = await c.put(`/v1/kv/${key}?acquire=${t}`, 'theirs');
    const body = expectError(r, 409, 1025);
    expect(body.message).toBe('did not acquire lock');
    expect(body.details?.reason).toBe('held-by-other');
    expect(await read(key)).toEqual(before);
  });

  test('row 4: locked + release with the holding session → unlocked; LockIndex unchanged, Session cleared, ModifyIndex increases', async () => {
    const key = uniq('row4');
    const s = await c.session();
    await ok(c.put(`/v1/kv/${key}?acquire=${s}`, 'held'));
    const before = await read(key);
    await ok(c.put(`/v1/kv/${key}?release=${s}`, 'released'));
    const r = await c.get(`/v1/kv/${key}`);
    const after = r.json<Entry[]>()[0]!;
    expect(after.LockIndex).toBe(before.LockIndex);
    expect(after.Session).toBeUndefined();
    expect(Object.keys(after)).toEqual(entryKeys);
    expect(after.ModifyIndex).toBeGreaterThan(before.ModifyIndex);
    // consul-compat §3.2: release replaces Value with the request body.
    expect(after.Value).toBe(b64('released'));
    // Explicit release arms no lock-delay: another session can acquire at once.
    const t = await c.session();
    await ok(c.put(`/v1/kv/${key}?acquire=${t}`, 'next'));
  });

  test('row 5: locked + release with a session that is not the holder → fails (409 1025 not-holder), nothing changes', async () => {
    const key = uniq('row5');
    const s = await c.session();
    const t = await c.session();
    await ok(c.put(`/v1/kv/${key}?acquire=${s}`, 'held'));
    const before = await read(key);
    const r = await c.put(`/v1/kv/${key}?release=${t}`, 'x');
    const body = expectError(r, 409, 1025);
    expect(body.message).toBe('did not release lock');
    expect(body.details?.reason).toBe('not-holder');
    expect(await read(key)).toEqual(before);
  });

  test('release of an unlocked key fails (409 1025 not-locked) and changes nothing', async () => {
    const key = uniq('rel-unlocked');
    const s = await c.session();
    await ok(c.put(`/v1/kv/${key}`, 'v'));
    const before = await read(key);
    const body = expectError(await c.put(`/v1/kv/${key}?release=${s}`, 'w'), 409, 1025);
    expect(body.message).toBe('did not release lock');
    expect(body.details?.reason).toBe('not-locked');
    expect(await read(key)).toEqual(before);
  });

  test('release of a missing key fails (409 1025 not-locked) and does not create it', async () => {
    const key = uniq('rel-missing');
    const s = await c.session();
    const body = expectError(await c.put(`/v1/kv/${key}?release=${s}`, 'w'), 409, 1025);
    expect(body.message).toBe('did not release lock');
    expect(body.details?.reason).toBe('not-locked');
    expect((await c.get(`/v1/kv/${key}`)).status).toBe(404);
  });

  test('acquire on a missing key creates it with LockIndex 1, Session set and the body as Value', async () => {
    const key = uniq('acq-missing');
    const s = await c.session();
    await ok(c.put(`/v1/kv/${key}?acquire=${s}`, 'created'));
    const e = await read(key);
    expect(e.LockIndex).toBe(1);
    expect(e.Session).toBe(s);
    expect(e.Value).toBe(b64('created'));
    expect(e.CreateIndex).toBe(e.ModifyIndex);
  });

  test('a successful write answers X-Consul-Index: the index of its entry, a fencing token that grows with each acquisition', async () => {
    const key = uniq('fence');
    const s = await c.session();
    const t = await c.session();
    const first = await ok(c.put(`/v1/kv/${key}?acquire=${s}`, 'a'));
    const token1 = Number(first.headers.get('x-consul-index'));
    // The acquire's entry is the key's latest change: its ModifyIndex is the token.
    expect((await read(key)).ModifyIndex).toBe(token1);
    await ok(c.put(`/v1/kv/${key}?release=${s}`));
    const second = await ok(c.put(`/v1/kv/${key}?acquire=${t}`, 'b'));
    const token2 = Number(second.headers.get('x-consul-index'));
    expect(token2).toBeGreaterThan(token1);
    expect((await read(key)).ModifyIndex).toBe(token2);
    // A refused acquire carries no token; a plain PUT and a CAS carry their entry's index too.
    const refused = await c.put(`/v1/kv/${key}?acquire=${s}`, 'c');
    expect(refused.status).toBe(409);
    expect(refused.headers.get('x-consul-index')).toBeNull();
    const plain = await ok(c.put(`/v1/kv/${key}-plain`, 'v'));
    expect(Number(plain.headers.get('x-consul-index'))).toBeGreaterThan(token2);
  });

  test('acquire with a session that does not exist → 400 1007 invalid session, key not created', async () => {
    const key = uniq('acq-nosession');
    const ghost = '11111111-2222-3333-4444-555555555555';
    const body = expectError(await c.put(`/v1/kv/${key}?acquire=${ghost}`, 'x'), 400, 1007);
    expect(body.message).toBe(`invalid session "${ghost}"`);
    expect((await c.get(`/v1/kv/${key}`)).status).toBe(404);
  });

  test('flags on acquire and release replace the stored Flags (absent flags → 0)', async () => {
    const key = uniq('lock-flags');
    const s = await c.session();
    await ok(c.put(`/v1/kv/${key}?acquire=${s}&flags=3304740253564472344`, 'v'));
    let r = await c.get(`/v1/kv/${key}`);
    expect(r.text).toContain('"Flags":3304740253564472344,');
    await ok(c.put(`/v1/kv/${key}?release=${s}&flags=42`, 'v'));
    expect((await read(key)).Flags).toBe(42);
    await ok(c.put(`/v1/kv/${key}?acquire=${s}`, 'v'));
    expect((await read(key)).Flags).toBe(0);
    await ok(c.put(`/v1/kv/${key}?release=${s}&flags=18446744073709551615`, 'v'));
    r = await c.get(`/v1/kv/${key}`);
    expect(r.text).toContain('"Flags":18446744073709551615,');
  });
});

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
    expect((await read(bkey)).Value).toBe(Buffer.concat([bin, Buffer.from([0xff, 0xfe, 0x00, 0x80])]).toString('base64'));
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
    const e = await read(key);
    await ok(c.del(`/v1/kv/${key}`));
    const r = await c.get(`/v1/kv/${key}`);
    expect(r.status).toBe(404);
    expect(Number(r.headers.get('x-consul-index'))).toBeGreaterThan(e.ModifyIndex);
  });
});

// ------------------------------------------------------------------------------------------------
describe('KV PUT', () => {
  test('plain PUT returns true; flags default to 0; CreateIndex kept and ModifyIndex increases on change', async () => {
    const key = uniq('put');
    const r = await ok(c.put(`/v1/kv/${key}`, 'a'));
    expect(r.headers.get('content-type')).toMatch(/^application\/json/);
    const first = await read(key);
    expect(first.Flags).toBe(0);
    await ok(c.put(`/v1/kv/${key}`, 'b'));
    const second = await read(key);
    expect(second.Value).toBe(b64('b'));
    expect(second.CreateIndex).toBe(first.CreateIndex);
    expect(second.ModifyIndex).toBeGreaterThan(first.ModifyIndex);
  });

  test('PUT without flags resets Flags to 0', async () => {
    const key = uniq('flags-reset');
    await ok(c.put(`/v1/kv/${key}?flags=9`, 'a'));
    expect((await read(key)).Flags).toBe(9);
    await ok(c.put(`/v1/kv/${key}`, 'a'));
    expect((await read(key)).Flags).toBe(0);
  });

  test('identical write keeps ModifyIndex', async () => {
    const key = uniq('same');
    await ok(c.put(`/v1/kv/${key}?flags=5`, 'same'));
    const before = await read(key);
    await ok(c.put(`/v1/kv/${key}?flags=5`, 'same'));
    expect(await read(key)).toEqual(before);
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
    expect((await read(key)).Value).toBe(b64('first'));
  });

  test('?cas=N writes only when ModifyIndex == N (mismatch → 409 1025)', async () => {
    const key = uniq('casN');
    await ok(c.put(`/v1/kv/${key}`, 'v1'));
    const e = await read(key);
    expectError(await c.put(`/v1/kv/${key}?cas=${e.ModifyIndex + 1000}`, 'wrong'), 409, 1025);
    expect(await read(key)).toEqual(e);
    await ok(c.put(`/v1/kv/${key}?cas=${e.ModifyIndex}`, 'v2'));
    const after = await read(key);
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
    const before = await read(key);
    await ok(c.put(`/v1/kv/${key}?flags=3`, 'overwritten'));
    const after = await read(key);
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
    expect((await read(`${p}x`)).Key).toBe(`${p}x`);
  });

  test('DELETE ?cas=N deletes on match; mismatch → 409 1025 and the key stays; missing key → true', async () => {
    const key = uniq('dcas');
    await ok(c.put(`/v1/kv/${key}`, 'x'));
    const e = await read(key);
    expectError(await c.del(`/v1/kv/${key}?cas=${e.ModifyIndex + 1000}`), 409, 1025);
    expect(await read(key)).toEqual(e);
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

// ------------------------------------------------------------------------------------------------
describe('KV keys, flags and parameters', () => {
  test('"/" in a key is part of the key and %2F decodes to "/"', async () => {
    const p = uniq('slash');
    await ok(c.put(`/v1/kv/${p}/a%2Fb`, 'encoded'));
    const e = await read(`${p}/a/b`);
    expect(e.Key).toBe(`${p}/a/b`);
    expect(e.Value).toBe(b64('encoded'));
    expect((await read(`${p}%2Fa%2Fb`)).Key).toBe(`${p}/a/b`);
    await ok(c.put(`/v1/kv/${p}/x//y/`, 'slashes'));
    expect((await read(`${p}/x//y/`)).Key).toBe(`${p}/x//y/`);
  });

  test('%3A decodes to ":" and the path is decoded only once (%252F stays %2F)', async () => {
    const p = uniq('colon');
    await ok(c.put(`/v1/kv/${p}/service%3Aweb`, 'c'));
    expect((await read(`${p}/service:web`)).Key).toBe(`${p}/service:web`);
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
    expect((await read(key)).Flags).toBe(5);
    const p = uniq('repeat-sep');
    for (const k of ['a/x', 'a-y']) await ok(c.put(`/v1/kv/${p}/${k}`, 'x'));
    const r = await c.get(`/v1/kv/${p}/?keys&separator=/&separator=-`);
    expect(r.json()).toEqual([`${p}/a-y`, `${p}/a/`]);
  });

  test('on a fresh store the empty prefix lists [] for ?keys, 404 for ?recurse; DELETE "" ?recurse clears everything', async () => {
    const fresh = await startAgent();
    try {
      const f = client(fresh);
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
    } finally {
      await fresh.stop();
      fresh.cleanup();
    }
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
