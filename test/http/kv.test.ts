// Goal: the "Lock on a key" table (registry.md, consul-compat §3.2) through a really started process, one test
// per row.
import { describe, expect, test } from 'vitest';
import { client, expectError, withAgent } from '../support/agent.ts';
import { type Client, type Entry, entryKeys, uniq, read, ok, b64 } from '../support/kv.ts';

let c: Client;

withAgent((a) => { c = client(a); });

// ------------------------------------------------------------------------------------------------
describe('Lock on a key (registry.md table, one test per row)', () => {
  test('row 1: unlocked + acquire with a session, no current holder → locked; LockIndex increases, Session set', async () => {
    const key = uniq('row1');
    const s = await c.session();
    await ok(c.put(`/v1/kv/${key}`, 'v0'));
    const before = await read(c, key);
    expect(before.LockIndex).toBe(0);
    expect(before.Session).toBeUndefined();

    await ok(c.put(`/v1/kv/${key}?acquire=${s}`, 'v1'));
    const after = await read(c, key);
    expect(after.LockIndex).toBe(before.LockIndex + 1);
    expect(after.Session).toBe(s);
    expect(after.Value).toBe(b64('v1'));
    expect(after.ModifyIndex).toBeGreaterThan(before.ModifyIndex);

    // Released then re-acquired: LockIndex increases again.
    await ok(c.put(`/v1/kv/${key}?release=${s}`, 'v1'));
    await ok(c.put(`/v1/kv/${key}?acquire=${s}`, 'v2'));
    expect((await read(c, key)).LockIndex).toBe(before.LockIndex + 2);
  });

  test('row 2: locked + acquire with the holding session → locked; Value updated, LockIndex unchanged', async () => {
    const key = uniq('row2');
    const s = await c.session();
    await ok(c.put(`/v1/kv/${key}?acquire=${s}`, 'first'));
    const before = await read(c, key);
    await ok(c.put(`/v1/kv/${key}?acquire=${s}`, 'second'));
    const after = await read(c, key);
    expect(after.Value).toBe(b64('second'));
    expect(after.LockIndex).toBe(before.LockIndex);
    expect(after.Session).toBe(s);
  });

  test('row 3: locked + acquire with another session → fails (409 1025 held-by-other), nothing changes', async () => {
    const key = uniq('row3');
    const s = await c.session();
    const t = await c.session();
    await ok(c.put(`/v1/kv/${key}?acquire=${s}`, 'mine'));
    const before = await read(c, key);
    const r = await c.put(`/v1/kv/${key}?acquire=${t}`, 'theirs');
    const body = expectError(r, 409, 1025);
    expect(body.message).toBe('did not acquire lock');
    expect(body.details?.reason).toBe('held-by-other');
    expect(await read(c, key)).toEqual(before);
  });

  test('row 4: locked + release with the holding session → unlocked; LockIndex unchanged, Session cleared, ModifyIndex increases', async () => {
    const key = uniq('row4');
    const s = await c.session();
    await ok(c.put(`/v1/kv/${key}?acquire=${s}`, 'held'));
    const before = await read(c, key);
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
    const before = await read(c, key);
    const r = await c.put(`/v1/kv/${key}?release=${t}`, 'x');
    const body = expectError(r, 409, 1025);
    expect(body.message).toBe('did not release lock');
    expect(body.details?.reason).toBe('not-holder');
    expect(await read(c, key)).toEqual(before);
  });

  test('release of an unlocked key fails (409 1025 not-locked) and changes nothing', async () => {
    const key = uniq('rel-unlocked');
    const s = await c.session();
    await ok(c.put(`/v1/kv/${key}`, 'v'));
    const before = await read(c, key);
    const body = expectError(await c.put(`/v1/kv/${key}?release=${s}`, 'w'), 409, 1025);
    expect(body.message).toBe('did not release lock');
    expect(body.details?.reason).toBe('not-locked');
    expect(await read(c, key)).toEqual(before);
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
    const e = await read(c, key);
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
    expect((await read(c, key)).ModifyIndex).toBe(token1);
    await ok(c.put(`/v1/kv/${key}?release=${s}`));
    const second = await ok(c.put(`/v1/kv/${key}?acquire=${t}`, 'b'));
    const token2 = Number(second.headers.get('x-consul-index'));
    expect(token2).toBeGreaterThan(token1);
    expect((await read(c, key)).ModifyIndex).toBe(token2);
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
    expect((await read(c, key)).Flags).toBe(42);
    await ok(c.put(`/v1/kv/${key}?acquire=${s}`, 'v'));
    expect((await read(c, key)).Flags).toBe(0);
    await ok(c.put(`/v1/kv/${key}?release=${s}&flags=18446744073709551615`, 'v'));
    r = await c.get(`/v1/kv/${key}`);
    expect(r.text).toContain('"Flags":18446744073709551615,');
  });
});
