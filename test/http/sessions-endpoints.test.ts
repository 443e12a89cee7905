// Goal: the session endpoints (consul-compat.md §1.1, seed error bodies), the legacy Checks binding among them —
// over HTTP.
import { beforeAll, describe, expect, test } from 'vitest';
import { client, withAgent, expectError } from '../support/in-process.ts';
import { type Client, type SessionJson, sessionFieldOrder, uuidPattern, uniq, info, registerNode } from '../support/sessions.ts';

// One agent with the default TTL minimum (10s) and one with 1s for the timing rows.
let pc: Client;
let tc: Client;

withAgent((a) => { pc = client(a); });
withAgent((a) => { tc = client(a); }, { args: ['--session-ttl-min', '1s'] });

// ---------------------------------------------------------------------------------------------------
describe.concurrent('Session endpoints', () => {
  test('create with no body: {ID} and every default field of the session JSON, in order', async () => {
    const c = pc;
    const r = await c.put('/v1/session/create');
    expect(r.status, r.text).toBe(200);
    expect(r.headers.get('content-type')).toMatch(/^application\/json/);
    const { ID } = r.json<{ ID: string }>();
    expect(Object.keys(r.json())).toEqual(['ID']);
    expect(ID).toMatch(uuidPattern);
    const got = await c.get(`/v1/session/info/${ID}`);
    const [s] = got.json<SessionJson[]>();
    expect(Object.keys(s!)).toEqual(sessionFieldOrder);
    expect(s).toEqual({
      ID, Name: '', Node: 'node1', LockDelay: 15_000_000_000, Behavior: 'release', TTL: '',
      NodeChecks: ['gossipHealth'], ServiceChecks: null, CreateIndex: s!.CreateIndex, ModifyIndex: s!.CreateIndex,
    });
    expect(s!.CreateIndex).toBeGreaterThan(0);
  });

  test('create with {} gives the same defaults', async () => {
    const c = pc;
    const id = await c.session({});
    const [s] = await info(c, id);
    expect(s).toMatchObject({ Name: '', Node: 'node1', LockDelay: 15_000_000_000, Behavior: 'release', TTL: '', NodeChecks: ['gossipHealth'], ServiceChecks: null });
  });

  test('create with Name, Behavior, TTL and LockDelay given', async () => {
    const c = pc;
    const id = await c.session({ Name: 'db-leader', Behavior: 'delete', TTL: '30s', LockDelay: '5s' });
    const [s] = await info(c, id);
    expect(s).toMatchObject({ ID: id, Name: 'db-leader', Node: 'node1', LockDelay: 5_000_000_000, Behavior: 'delete', TTL: '30s' });
    const id2 = await c.session({ Behavior: 'release', TTL: '1m' });
    expect((await info(c, id2))[0]).toMatchObject({ Behavior: 'release', TTL: '1m' });
  });

  test.each([
    ['a number of ns', 2_500_000_000, 2_500_000_000],
    ['"1500ms"', '1500ms', 1_500_000_000],
    ['"0s"', '0s', 0],
    ['"60s" (upper bound)', '60s', 60_000_000_000],
    ['a number under 1000 (read as seconds)', 20, 20_000_000_000],
  ])('LockDelay as %s', async (_label, input, ns) => {
    const id = await pc.session({ LockDelay: input });
    expect((await info(pc, id))[0]!.LockDelay).toBe(ns);
  });

  describe('legacy Checks binding (consul-compat.md §1.1 table)', () => {
    let node: string;
    beforeAll(async () => {
      node = uniq('legacy');
      await registerNode(pc, node, [{ CheckID: 'gossipHealth', Status: 'passing' }, { CheckID: 'x', Status: 'passing' }]);
    });

    test.each<[string, Record<string, unknown>, string[], string[] | undefined]>([
      ['nothing about checks', {}, ['gossipHealth'], undefined],
      ['Checks: []', { Checks: [] }, [], undefined],
      ['Checks: ["gossipHealth"]', { Checks: ['gossipHealth'] }, ['gossipHealth'], undefined],
      ['Checks: ["gossipHealth","x"]', { Checks: ['gossipHealth', 'x'] }, ['gossipHealth'], ['gossipHealth', 'x']],
      ['NodeChecks: []', { NodeChecks: [] }, [], undefined],
      ['NodeChecks: ["x"]', { NodeChecks: ['x'] }, ['x'], undefined],
      ['NodeChecks: ["gossipHealth","x"]', { NodeChecks: ['gossipHealth', 'x'] }, ['gossipHealth', 'x'], undefined],
    ])('%s', async (_label, body, nodeChecks, checks) => {
      const id = await pc.session({ Node: node, ...body });
      const r = await pc.get(`/v1/session/info/${id}`);
      const [s] = r.json<SessionJson[]>();
      expect(s!.NodeChecks).toEqual(nodeChecks);
      if (checks === undefined) {
        expect('Checks' in s!, `Checks must be omitted: ${r.text}`).toBe(false);
      } else {
        expect(s!.Checks).toEqual(checks);
        expect(Object.keys(s!)).toEqual([...sessionFieldOrder.slice(0, 8), 'Checks', 'CreateIndex', 'ModifyIndex']);
      }
    });
  });

  test('info, list and node: shapes and index headers', async () => {
    const c = pc;
    const id = await c.session({ Name: 'shape' });
    const [one] = await info(c, id);
    for (const path of [`/v1/session/info/${id}`, '/v1/session/list', '/v1/session/node/node1']) {
      const r = await c.get(path);
      expect(r.status, `${path}: ${r.text}`).toBe(200);
      expect(r.headers.get('content-type')).toMatch(/^application\/json/);
      const idx = r.headers.get('x-consul-index');
      expect(idx, `${path} X-Consul-Index`).toMatch(/^[1-9]\d*$/);
      expect(r.headers.get('x-consul-knownleader')).toBe('true');
      expect(r.headers.get('x-consul-lastcontact')).toBe('0');
      const arr = r.json<SessionJson[]>();
      expect(Array.isArray(arr)).toBe(true);
      expect(arr.find((s) => s.ID === id), path).toEqual(one);
      for (const s of arr) expect(Object.keys(s).slice(0, 7)).toEqual(sessionFieldOrder.slice(0, 7));
      expect(Number(idx)).toBeGreaterThanOrEqual(one!.CreateIndex);
    }
    const unknownNode = await c.get('/v1/session/node/no-such-node');
    expect(unknownNode.status).toBe(200);
    expect(unknownNode.json()).toEqual([]);
  });

  test('info of an unknown id → 200 []', async () => {
    const r = await pc.get('/v1/session/info/00000000-0000-0000-0000-000000000000');
    expect(r.status, r.text).toBe(200);
    expect(r.json()).toEqual([]);
    expect(r.headers.get('x-consul-index')).toMatch(/^[1-9]\d*$/);
  });

  test('renew returns [session] with unchanged indexes', async () => {
    const c = pc;
    const id = await c.session({ TTL: '15s', Name: 'renewed' });
    const [before] = await info(c, id);
    const r = await c.put(`/v1/session/renew/${id}`);
    expect(r.status, r.text).toBe(200);
    expect(r.json()).toEqual([before]);
    const [after] = await info(c, id);
    expect(after!.ModifyIndex).toBe(before!.ModifyIndex);
    expect(after!.CreateIndex).toBe(before!.CreateIndex);
  });

  test('renew of an unknown session → 404 code 1006', async () => {
    expectError(await pc.put('/v1/session/renew/00000000-0000-0000-0000-000000000000'), 404, 1006);
  });

  test('destroy of an unknown session → 200 true', async () => {
    const r = await pc.put('/v1/session/destroy/00000000-0000-0000-0000-000000000000');
    expect(r.status, r.text).toBe(200);
    expect(r.json()).toBe(true);
  });

  test.each([
    ['PUT', '/v1/session/destroy/'],
    ['PUT', '/v1/session/renew/'],
    ['GET', '/v1/session/info/'],
    ['GET', '/v1/session/node/'],
  ])('missing id: %s %s → 400 code 1008', async (method, path) => {
    expectError(await pc.req(method, path), 400, 1008);
  });

  test.each<[string, Record<string, unknown>, string, RegExp]>([
    ['LockDelay "90s"', { LockDelay: '90s' }, 'LockDelay', /^Range:must be between 0s and 60s$/],
    ['LockDelay "-1s"', { LockDelay: '-1s' }, 'LockDelay', /^Range:/],
    ['LockDelay 61e9 ns', { LockDelay: 61_000_000_000 }, 'LockDelay', /^Range:/],
    ['LockDelay "soon"', { LockDelay: 'soon' }, 'LockDelay', /^\w+:.+/],
    ['Behavior "x"', { Behavior: 'x' }, 'Behavior', /^Enum:/],
    ['TTL "5s" (min 10s)', { TTL: '5s' }, 'TTL', /^Range:/],
    ['TTL "25h" (max 24h)', { TTL: '25h' }, 'TTL', /^Range:/],
    ['TTL "abc"', { TTL: 'abc' }, 'TTL', /^Format:/],
    ['TTL 30 (number)', { TTL: 30 }, 'TTL', /^\w+:.+/],
    ['Name 5', { Name: 5 }, 'Name', /^\w+:.+/],
    ['Node true', { Node: true }, 'Node', /^\w+:.+/],
    ['NodeChecks "x"', { NodeChecks: 'x' }, 'NodeChecks', /^\w+:.+/],
  ])('validation: %s → 400 code 1009 with details.%s', async (_label, body, fieldName, rule) => {
    const r = await pc.put('/v1/session/create', body);
    const err = expectError(r, 400, 1009);
    expect(Array.isArray(err.details?.[fieldName]), `details.${fieldName} in ${r.text}`).toBe(true);
    expect(err.details[fieldName].length).toBeGreaterThan(0);
    for (const m of err.details[fieldName]) expect(m).toMatch(rule);
  });

  test('validation reports every bad field at once', async () => {
    const r = await pc.put('/v1/session/create', { LockDelay: '90s', Behavior: 'x', TTL: 'abc', Name: 5 });
    const err = expectError(r, 400, 1009);
    expect(Object.keys(err.details).sort()).toEqual(['Behavior', 'LockDelay', 'Name', 'TTL']);
  });

  test('TTL under the minimum on the 1s-min agent is refused; "1s" is accepted', async () => {
    const err = expectError(await tc.put('/v1/session/create', { TTL: '500ms' }), 400, 1009);
    expect(err.details.TTL[0]).toMatch(/^Range:/);
    const id = await tc.session({ TTL: '1s' });
    expect((await info(tc, id))[0]!.TTL).toBe('1s');
    await tc.put(`/v1/session/destroy/${id}`);
  });

  test('bad JSON → 400 code 1024', async () => {
    expectError(await pc.put('/v1/session/create', '{"Name":', { 'content-type': 'application/json' }), 400, 1024);
  });

  test('binding an unknown check → 400 code 1007', async () => {
    expectError(await pc.put('/v1/session/create', { NodeChecks: ['no-such-check'] }), 400, 1007);
    expectError(await pc.put('/v1/session/create', { Checks: ['gossipHealth', 'no-such-check'] }), 400, 1007);
  });

  test('binding a critical check → 400 code 1009', async () => {
    const node = uniq('node-critical');
    await registerNode(pc, node, [{ CheckID: 'down', Status: 'critical' }, { CheckID: 'warn', Status: 'warning' }]);
    expectError(await pc.put('/v1/session/create', { Node: node, NodeChecks: ['down'] }), 400, 1009);
    // A warning check may be bound.
    const id = await pc.session({ Node: node, NodeChecks: ['warn'] });
    expect((await info(pc, id))[0]!.NodeChecks).toEqual(['warn']);
  });

  test('unknown Node → 400 code 1007', async () => {
    expectError(await pc.put('/v1/session/create', { Node: 'no-such-node' }), 400, 1007);
  });

  test.each([
    ['PUT', '/v1/session/create?dc=other'],
    ['GET', '/v1/session/list?dc=other'],
    ['GET', '/v1/session/info/00000000-0000-0000-0000-000000000000?dc=other'],
    ['PUT', '/v1/session/destroy/00000000-0000-0000-0000-000000000000?dc=other'],
  ])('%s %s → 503 code 1016', async (method, path) => {
    expectError(await pc.req(method, path), 503, 1016);
  });
});
