// Goal: KV (consul-compat §1.2, §2) written once and run in both dialects — the consul dialect driven by the real
// npm `consul` 2.0.1 client, the seed dialect over raw HTTP.
import { describe, expect, test } from 'vitest';
import { expectError } from '../support/in-process.ts';
import { type Raw, type Entry, lockFlags, maxFlags, kvValueMaxBytes, entryFieldOrder, lockedEntryFieldOrder, unknownSession, textPlain, SeedHttpError, type Driver, rejection, expectText, expectJson, expectIndexHeaders, rawFlags, dialects, consulKvSuite } from '../support/consul-kv.ts';

describe.each(dialects)('%s dialect', (dialect) => {
  const isConsul = dialect === 'consul';
  let raw: Raw;
  let d: Driver;
  const { uniq, expectFailure, expectRefused } = consulKvSuite(dialect, (s) => ({ raw, d } = s));

  // ----------------------------------------------------------------------------------------------
  describe('2. KV', () => {
    test('set, get, keys, del', async () => {
      const key = uniq('basic');
      expect(await d.set(key, 'hello')).toEqual({ ok: true });
      const e = (await d.get(key))!;
      expect(Object.keys(e)).toEqual(entryFieldOrder);
      expect(e).toMatchObject({ Key: key, Value: 'hello', Flags: 0, LockIndex: 0 });
      expect(e.CreateIndex).toBe(e.ModifyIndex);
      expect(await d.keys(key)).toEqual([key]);

      // Overwrite keeps CreateIndex, bumps ModifyIndex; an empty value reads back as null.
      expect((await d.set(key, '')).ok).toBe(true);
      const e2 = (await d.get(key))!;
      expect(e2.Value).toBeNull();
      expect(e2.CreateIndex).toBe(e.CreateIndex);
      expect(e2.ModifyIndex).toBeGreaterThan(e.ModifyIndex);

      expect(await d.del(key)).toEqual({ ok: true });
      expect(await d.get(key)).toBeUndefined();
      expect((await d.del(key)).ok).toBe(true); // a missing key deletes fine

      // Wire: PUT → 200 true (JSON); GET → entry JSON with index = ModifyIndex.
      const put = await raw.put(`/v1/kv/${key}`, 'v');
      expect(put.status).toBe(200);
      expect(put.text).toBe('true');
      if (isConsul) expectJson(put, 'true');
      const got = await raw.get(`/v1/kv/${key}`);
      expect(got.status).toBe(200);
      expect(expectIndexHeaders(got)).toBe(got.json<Entry[]>()[0]!.ModifyIndex);
      expect(got.json<Entry[]>()[0]!.Value).toBe(Buffer.from('v').toString('base64'));
      if (isConsul) expectJson(got);
      const del = await raw.del(`/v1/kv/${key}`);
      expect(del.text).toBe('true');
      if (isConsul) expectJson(del, 'true');
    });

    test('recurse: string prefix, sorted by key; nothing under the prefix is a miss', async () => {
      const p = uniq('rec');
      for (const k of [`${p}/b`, `${p}/a`, `${p}x`]) expect((await d.set(k, k)).ok).toBe(true);
      const all = await d.getRecurse(p);
      expect(all!.map((e) => e.Key)).toEqual([`${p}/a`, `${p}/b`, `${p}x`]);
      expect(all!.map((e) => e.Value)).toEqual([`${p}/a`, `${p}/b`, `${p}x`]);
      expect((await d.getRecurse(`${p}/`))!.map((e) => e.Key)).toEqual([`${p}/a`, `${p}/b`]);
      expect(await d.getRecurse(`${p}/none`)).toBeUndefined();

      const miss = await raw.get(`/v1/kv/${p}/none?recurse`);
      expect(miss.status).toBe(404);
      expectIndexHeaders(miss);
      if (isConsul) expect(miss.text).toBe('');
      else expectError(miss, 404, 1006);
    });

    test('keys with and without a separator; an unmatched prefix is a 404', async () => {
      const p = `${uniq('sep')}/`;
      for (const k of ['a/x', 'a/y', 'b', 'c/z/w']) expect((await d.set(p + k, 'v')).ok).toBe(true);
      expect(await d.keys(p)).toEqual(['a/x', 'a/y', 'b', 'c/z/w'].map((k) => p + k));
      expect(await d.keys(p, '/')).toEqual(['a/', 'b', 'c/'].map((k) => p + k));

      await expectFailure(d.keys(`${p}none`), 404, 'not found', 404, 1006);
      const r = await raw.get(`/v1/kv/${p}none?keys`);
      expect(r.status).toBe(404);
      expectIndexHeaders(r);
      if (isConsul) expect(r.text).toBe('');
    });

    test('raw: the value bytes as a Buffer, text/plain', async () => {
      const key = uniq('raw');
      const bytes = Buffer.from([0x00, 0xff, 0x10, 0x7b, 0x22, 0x0a, 0xc3]);
      expect((await d.set(key, bytes)).ok).toBe(true);
      const got = await d.getRaw(key);
      expect(Buffer.isBuffer(got)).toBe(true);
      expect(got.equals(bytes)).toBe(true);

      const r = await raw.get(`/v1/kv/${key}?raw`);
      expect(r.status).toBe(200);
      expect(r.body.equals(bytes)).toBe(true);
      expect(r.headers.get('content-type')).toBe('text/plain');
      expect(r.headers.get('content-length')).toBe(String(bytes.length));
      expectIndexHeaders(r);
      if (isConsul) {
        expect(r.headers.get('x-content-type-options')).toBe('nosniff');
        expect(r.headers.get('content-security-policy')).toBe('sandbox');
      }
      // Decoded by the client from base64 back to the same bytes.
      const plain = await raw.get(`/v1/kv/${key}`);
      expect(Buffer.from(plain.json<Entry[]>()[0]!.Value!, 'base64').equals(bytes)).toBe(true);
    });

    test('flags: small through the client, uint64 exact on the raw text, absent flags reset to 0', async () => {
      const key = uniq('flags');
      expect((await d.set(key, 'v', { flags: 42 })).ok).toBe(true);
      expect((await d.get(key))!.Flags).toBe(42);

      expect((await d.set(key, 'v', { flags: lockFlags })).ok).toBe(true);
      expect(await rawFlags(raw, key)).toBe(lockFlags);

      const put = await raw.put(`/v1/kv/${key}?flags=${maxFlags}`, 'w');
      expect(put.status, put.text).toBe(200);
      expect(await rawFlags(raw, key)).toBe(maxFlags);
      const rec = await raw.get(`/v1/kv/${key}?recurse`);
      expect(rec.text).toContain(`"Flags":${maxFlags}`);

      expect((await d.set(key, 'plain')).ok).toBe(true);
      expect(await rawFlags(raw, key)).toBe('0');
    });

    test('cas: 0 creates only; N writes only at ModifyIndex N; DELETE ?cas likewise', async () => {
      const key = uniq('cas');
      expect((await d.set(key, 'one', { cas: 0 })).ok).toBe(true);
      expectRefused(await d.set(key, 'two', { cas: 0 }));
      const e = (await d.get(key))!;
      expect(e.Value).toBe('one');

      expectRefused(await d.set(key, 'two', { cas: e.ModifyIndex + 1000 }));
      expect((await d.set(key, 'two', { cas: e.ModifyIndex })).ok).toBe(true);
      expectRefused(await d.set(key, 'three', { cas: e.ModifyIndex })); // now stale
      const e2 = (await d.get(key))!;
      expect(e2.Value).toBe('two');

      expectRefused(await d.del(key, { cas: e.ModifyIndex }));
      expect((await d.get(key))!.Value).toBe('two');
      expect((await d.del(key, { cas: e2.ModifyIndex })).ok).toBe(true);
      expect(await d.get(key)).toBeUndefined();
      expect((await d.del(key, { cas: 12345 })).ok).toBe(true); // absent key

      // Wire of a failed CAS.
      expect((await d.set(key, 'x')).ok).toBe(true);
      const put = await raw.put(`/v1/kv/${key}?cas=0`, 'y');
      const del = await raw.del(`/v1/kv/${key}?cas=1`);
      for (const r of [put, del]) {
        if (isConsul) expectJson(r, 'false');
        else expectError(r, 409, 1025);
      }
    });

    test('acquire and release: holder, other session, re-acquire, release by non-holder, release of unlocked', async () => {
      const key = uniq('lock');
      const s1 = await d.createSession({ name: 's1' });
      const s2 = await d.createSession({ name: 's2' });

      expect((await d.set(key, 'a', { acquire: s1, flags: 7 })).ok).toBe(true);
      const held = (await d.get(key))!;
      expect(Object.keys(held)).toEqual(lockedEntryFieldOrder);
      expect(held).toMatchObject({ LockIndex: 1, Session: s1, Value: 'a', Flags: 7 });

      expectRefused(await d.set(key, 'b', { acquire: s2 }), 'held-by-other');
      expect((await d.get(key))!).toMatchObject({ Session: s1, Value: 'a' });
      if (isConsul) expectJson(await raw.put(`/v1/kv/${key}?acquire=${s2}`, 'b'), 'false');

      expect((await d.set(key, 'a2', { acquire: s1, flags: 7 })).ok).toBe(true);
      expect((await d.get(key))!).toMatchObject({ LockIndex: 1, Session: s1, Value: 'a2' });

      expectRefused(await d.set(key, 'b', { release: s2 }), 'not-holder');
      if (isConsul) expectJson(await raw.put(`/v1/kv/${key}?release=${s2}`, 'b'), 'false');

      const before = (await d.get(key))!;
      expect((await d.set(key, 'released', { release: s1, flags: 9 })).ok).toBe(true);
      const after = (await d.get(key))!;
      expect(after.Session).toBeUndefined();
      expect(Object.keys(after)).toEqual(entryFieldOrder);
      expect(after).toMatchObject({ LockIndex: 1, Value: 'released', Flags: 9 });
      expect(after.ModifyIndex).toBeGreaterThan(before.ModifyIndex);

      expectRefused(await d.set(key, 'x', { release: s1 }), 'not-locked');
      // Explicit release arms no lock-delay: the other session takes it at once.
      expect((await d.set(key, 'b', { acquire: s2 })).ok).toBe(true);
      expect((await d.get(key))!).toMatchObject({ LockIndex: 2, Session: s2 });

      // Release on an absent key: refused.
      expectRefused(await d.set(uniq('absent'), 'x', { release: s1 }));
      await d.destroy(s1);
      await d.destroy(s2);
    });

    test('lock-delay: after the holder is destroyed, a fresh session cannot acquire within the delay', async () => {
      const key = uniq('delay');
      const holder = await d.createSession({ lockdelay: '30s' });
      expect((await d.set(key, 'h', { acquire: holder })).ok).toBe(true);
      await d.destroy(holder);
      expect((await d.get(key))!.Session).toBeUndefined();

      const fresh = await d.createSession({});
      expectRefused(await d.set(key, 'f', { acquire: fresh }), 'lock-delay');
      if (isConsul) expectJson(await raw.put(`/v1/kv/${key}?acquire=${fresh}`, 'f'), 'false');
      else expect(expectError(await raw.put(`/v1/kv/${key}?acquire=${fresh}`, 'f'), 409, 1025).message).toBe('did not acquire lock');
      // Plain writes are not blocked by the delay.
      expect((await d.set(key, 'plain')).ok).toBe(true);
      await d.destroy(fresh);
    });

    test('invalidation by destroy: Behavior release keeps the entry, Behavior delete removes it', async () => {
      const kr = uniq('beh-release');
      const kd = uniq('beh-delete');
      const rel = await d.createSession({ behavior: 'release' });
      const del = await d.createSession({ behavior: 'delete' });
      expect((await d.set(kr, 'kept', { acquire: rel, flags: 5 })).ok).toBe(true);
      expect((await d.set(kd, 'gone', { acquire: del })).ok).toBe(true);
      const before = (await d.get(kr))!;

      await d.destroy(rel);
      await d.destroy(del);

      const after = (await d.get(kr))!;
      expect(after.Session).toBeUndefined();
      expect(after).toMatchObject({ Value: 'kept', Flags: 5, LockIndex: before.LockIndex, CreateIndex: before.CreateIndex });
      expect(after.ModifyIndex).toBeGreaterThan(before.ModifyIndex);
      expect(await d.get(kd)).toBeUndefined();
    });

    test('delete recurse removes every key starting with the prefix', async () => {
      const p = uniq('delrec');
      const other = uniq('delrec-keep');
      for (const k of [`${p}/a`, `${p}/b/c`, `${p}x`, other]) expect((await d.set(k, 'v')).ok).toBe(true);
      expect((await d.del(p, { recurse: true })).ok).toBe(true);
      expect(await d.getRecurse(p)).toBeUndefined();
      expect(await d.get(`${p}x`)).toBeUndefined();
      expect((await d.get(other))!.Value).toBe('v');
    });

    test('missing key: client undefined; wire 404 with index headers', async () => {
      const key = uniq('missing');
      expect(await d.get(key)).toBeUndefined();
      const r = await raw.get(`/v1/kv/${key}`);
      expect(r.status).toBe(404);
      expectIndexHeaders(r);
      if (isConsul) expect(r.text).toBe('');
      else expectError(r, 404, 1006);
    });

    test('acquire with an unknown session', async () => {
      const key = uniq('unknown-session');
      const body = await expectFailure(d.set(key, 'v', { acquire: unknownSession }), 500, `invalid session "${unknownSession}"`, 400, 1007);
      if (!isConsul) expect(body.message).toBe(`invalid session "${unknownSession}"`);
      if (isConsul) expectText(await raw.put(`/v1/kv/${key}?acquire=${unknownSession}`, 'v'), 500, `invalid session "${unknownSession}"`);
      expect(await d.get(key)).toBeUndefined();
    });

    test('acquire with an empty session id', async () => {
      const key = uniq('empty-session');
      await expectFailure(d.set(key, 'v', { acquire: '' }), 500, 'missing session', 400, 1008);
      if (isConsul) {
        expectText(await raw.put(`/v1/kv/${key}?acquire=`, 'v'), 500, 'missing session');
        expectText(await raw.put(`/v1/kv/${key}?release=`, 'v'), 500, 'missing session');
      } else {
        expectError(await raw.put(`/v1/kv/${key}?release=`, 'v'), 400, 1008);
      }
      expect(await d.get(key)).toBeUndefined();
    });

    test('conflicting flags: more than one of cas, acquire, release', async () => {
      const key = uniq('conflict');
      const s = await d.createSession({});
      const text = `Conflicting flags: acquire=${s}&cas=0\n`;
      await expectFailure(d.set(key, 'v', { cas: 0, acquire: s }), 400, text, 400, 1009);
      const r = await raw.put(`/v1/kv/${key}?cas=0&acquire=${s}`, 'v');
      if (isConsul) expectText(r, 400, text);
      else expectError(r, 400, 1009);
      const r2 = await raw.put(`/v1/kv/${key}?release=${s}&acquire=${s}`, 'v');
      if (isConsul) expectText(r2, 400, `Conflicting flags: acquire=${s}&release=${s}\n`);
      else expectError(r2, 400, 1009);
      expect(await d.get(key)).toBeUndefined();

      // DELETE: recurse and cas together (the seed spec names no code for this one; 400 with an error body).
      expect((await d.set(`${key}/x`, 'v')).ok).toBe(true);
      const delText = 'Conflicting flags: cas=0&recurse=true\n';
      const delErr = await rejection(d.del(key, { recurse: true, cas: 0 }));
      const rd = await raw.del(`/v1/kv/${key}?recurse=true&cas=0`);
      if (isConsul) {
        expect(delErr.message).toBe(delText);
        expect(delErr.statusCode).toBe(400);
        expectText(rd, 400, delText);
        expectText(await raw.del(`/v1/kv/${key}?recurse&cas=0`), 400, 'Conflicting flags: cas=0&recurse=\n');
      } else {
        expect((delErr as SeedHttpError).r.status).toBe(400);
        expect(rd.status).toBe(400);
        expect(typeof rd.json().code).toBe('number');
      }
      expect((await d.get(`${key}/x`))!.Value).toBe('v');
      await d.destroy(s);
    });

    test('bad flags', async () => {
      const key = uniq('badflags');
      const text = 'strconv.ParseUint: parsing "abc": invalid syntax';
      await expectFailure(d.set(key, 'v', { flags: 'abc' }), 500, text, 400, 1009);
      const r = await raw.put(`/v1/kv/${key}?flags=abc`, 'v');
      if (isConsul) expectText(r, 500, text);
      else expectError(r, 400, 1009);
      expect(await d.get(key)).toBeUndefined();
    });

    test('flags and cas past 2^64 - 1: Go\'s ParseUint says the value is out of range', async () => {
      const key = uniq('bigflags');
      for (const name of ['flags', 'cas']) {
        const r = await raw.put(`/v1/kv/${key}?${name}=18446744073709551616`, 'v');
        if (isConsul) expectText(r, 500, 'strconv.ParseUint: parsing "18446744073709551616": value out of range');
        else expectError(r, 400, 1009);
      }
      expect(await d.get(key)).toBeUndefined();
    });

    test(`a value of ${kvValueMaxBytes} bytes is stored; one byte more is 413`, async () => {
      const key = uniq('big');
      expect((await d.set(key, Buffer.alloc(kvValueMaxBytes, 0x61))).ok).toBe(true);
      expect((await d.getRaw(key)).length).toBe(kvValueMaxBytes);

      const tooBig = Buffer.alloc(kvValueMaxBytes + 1, 0x62);
      await expectFailure(d.set(key, tooBig), 413, 'payload too large', 413, 1011);
      const r = await raw.put(`/v1/kv/${key}`, tooBig);
      expect(r.status).toBe(413);
      if (isConsul) {
        expect(r.headers.get('content-type')).toBe(textPlain);
        expect(r.text.startsWith(`Request body(${kvValueMaxBytes + 1} bytes) too large, max size: ${kvValueMaxBytes} bytes. See `)).toBe(true);
      } else {
        expectError(r, 413, 1011);
      }
      expect((await d.getRaw(key)).length).toBe(kvValueMaxBytes);
    });
  });

});
