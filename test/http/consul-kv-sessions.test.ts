// Goal: sessions (consul-compat §1.1) written once and run in both dialects — the consul dialect driven by the
// real npm `consul` 2.0.1 client, the seed dialect over raw HTTP.
import { describe, expect, test } from 'vitest';
import { type Raw, sessionFieldOrder, uuidPattern, unknownSession, type Driver, expectText, expectJson, expectIndexHeaders, dialects, consulKvSuite } from '../support/consul-kv.ts';

describe.each(dialects)('%s dialect', (dialect) => {
  const isConsul = dialect === 'consul';
  let raw: Raw;
  let d: Driver;
  const { uniq, expectFailure } = consulKvSuite(dialect, (s) => ({ raw, d } = s));

  // ----------------------------------------------------------------------------------------------
  describe('1. sessions', () => {
    test('create with every client option; info shows them, serfHealth comes back as gossipHealth', async () => {
      const name = uniq('every-option');
      const id = await d.createSession({ name, node: 'node1', lockdelay: '5s', checks: ['serfHealth'], behavior: 'delete', ttl: '30s' });
      expect(id).toMatch(uuidPattern);
      const s = await d.sessionInfo(id);
      expect(s).toBeDefined();
      expect(Object.keys(s!)).toEqual(sessionFieldOrder);
      expect(s).toMatchObject({
        ID: id, Name: name, Node: 'node1', LockDelay: 5_000_000_000, Behavior: 'delete', TTL: '30s',
        NodeChecks: ['gossipHealth'], ServiceChecks: null,
      });
      expect(s!.CreateIndex).toBe(s!.ModifyIndex);

      // Defaults for an empty body.
      const plain = await d.createSession({});
      expect(await d.sessionInfo(plain)).toMatchObject({
        ID: plain, Name: '', Node: 'node1', LockDelay: 15_000_000_000, Behavior: 'release', TTL: '', NodeChecks: ['gossipHealth'], ServiceChecks: null,
      });

      // Wire: create → 200 {"ID":"<uuid>"} as JSON; info → index headers.
      const r = await raw.put('/v1/session/create', { Name: uniq('wire') });
      expect(r.status, r.text).toBe(200);
      expect(r.text).toMatch(/^\{"ID":"[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}"\}$/);
      if (isConsul) expectJson(r);
      const infoRaw = await raw.get(`/v1/session/info/${id}`);
      expect(infoRaw.status).toBe(200);
      expectIndexHeaders(infoRaw);
      if (isConsul) expectJson(infoRaw);
    });

    test('info of an unknown session: client undefined; wire 200 [] with index headers', async () => {
      expect(await d.sessionInfo(unknownSession)).toBeUndefined();
      const r = await raw.get(`/v1/session/info/${unknownSession}`);
      expect(r.status, r.text).toBe(200);
      expect(r.text).toBe('[]');
      expectIndexHeaders(r);
      if (isConsul) expectJson(r, '[]');
    });

    test('node and list show the session; an unknown node has none', async () => {
      const id = await d.createSession({ name: uniq('listed') });
      const onNode = await d.sessionNode('node1');
      expect(onNode.map((s) => s.ID)).toContain(id);
      expect(onNode.every((s) => s.Node === 'node1')).toBe(true);
      const all = await d.sessionList();
      expect(all.map((s) => s.ID)).toContain(id);
      const ids = all.map((s) => s.ID);
      expect(ids).toEqual([...ids].sort());
      expect(await d.sessionNode('no-such-node')).toEqual([]);

      for (const path of ['/v1/session/node/node1', '/v1/session/list', '/v1/session/node/no-such-node']) {
        const r = await raw.get(path);
        expect(r.status, r.text).toBe(200);
        expectIndexHeaders(r);
        if (isConsul) expectJson(r);
      }
    });

    test('renew returns the unchanged record; renew of an unknown session fails', async () => {
      const id = await d.createSession({ ttl: '20s' });
      const before = (await d.sessionInfo(id))!;
      const renewed = await d.renew(id);
      expect(renewed).toHaveLength(1);
      expect(renewed[0]).toEqual(before);

      const body = await expectFailure(d.renew(unknownSession), 404, `Session id '${unknownSession}' not found`, 404, 1006);
      if (!isConsul) expect(typeof body.message).toBe('string');
      if (isConsul) expectText(await raw.put(`/v1/session/renew/${unknownSession}`), 404, `Session id '${unknownSession}' not found`);
    });

    test('destroy removes the session; destroying an unknown id answers true', async () => {
      const id = await d.createSession({ name: uniq('doomed') });
      await d.destroy(id);
      expect(await d.sessionInfo(id)).toBeUndefined();
      expect((await d.sessionList()).map((s) => s.ID)).not.toContain(id);
      await d.destroy(unknownSession);

      const r = await raw.put(`/v1/session/destroy/${unknownSession}`);
      expect(r.status, r.text).toBe(200);
      expect(r.text).toBe('true');
      if (isConsul) expectJson(r, 'true');
    });
  });

});
