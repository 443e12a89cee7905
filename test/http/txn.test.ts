// Goal: PUT /v1/txn against in-process agents in both dialects — every verb's answer, the 409 body with every
// failing OpIndex and nothing applied (seen through GET), the 400 and 413 refusals with Consul's texts, reads
// answered without the log, the npm `consul` client's transaction.create, the seed dialect's error format, a blocking query
// and the stream woken by a transaction's writes (one batch at its index), and a queued acquire handed the lock by its unlock.
import Consul from 'consul';
import { afterAll, beforeAll, describe, expect, test } from 'vitest';
import { call, expectError, startAgent, type Agent, type HttpResult } from '../support/in-process.ts';
import { settled, Stream, subscribe } from '../support/stream.ts';

const b64 = (text: string) => Buffer.from(text).toString('base64');
const lockFlags = '3304740253564472344';

let consulAgent: Agent;
let seedAgent: Agent;
let consul: any;

beforeAll(async () => {
  [consulAgent, seedAgent] = await Promise.all([startAgent({ args: ['--dialect', 'consul'] }), startAgent()]);
  consul = new Consul({ host: '127.0.0.1', port: Number(new URL(consulAgent.url).port) } as any);
});
afterAll(async () => {
  await Promise.all([consulAgent?.stop(), seedAgent?.stop()]);
});

let unique = 0;
const uniq = (name: string) => `txn/${name}-${++unique}`;

function kv(verb: string, key: string, more: Record<string, unknown> = {}) {
  return { KV: { Verb: verb, Key: key, ...more } };
}
const put = (agent: Agent, body: unknown, query = '') => call(agent.url, 'PUT', `/v1/txn${query}`, typeof body === 'string' ? body : JSON.stringify(body), { 'content-type': 'application/json' });
const get = (agent: Agent, path: string) => call(agent.url, 'GET', path);

async function session(agent: Agent, body: Record<string, unknown> = {}): Promise<string> {
  const r = await call(agent.url, 'PUT', '/v1/session/create', body);
  expect(r.status, r.text).toBe(200);
  return r.json().ID;
}

function expectConsulText(r: HttpResult, status: number, text: string): void {
  expect(r.status, r.text).toBe(status);
  expect(r.headers.get('content-type')).toBe('text/plain; charset=utf-8');
  expect(r.text).toBe(text);
}

describe('consul dialect', () => {
  test('each write verb answers the entry after it without its value; get and get-tree with values', async () => {
    const p = uniq('verbs');
    const s = await session(consulAgent);
    const r = await put(consulAgent, [
      kv('set', `${p}/a`, { Value: b64('one'), Flags: 42 }),
      kv('cas', `${p}/b`, { Value: b64('two'), Index: 0 }),
      kv('lock', `${p}/l`, { Value: b64('held'), Session: s }),
      kv('get', `${p}/a`),
      kv('get-tree', `${p}/`),
      kv('check-session', `${p}/l`, { Session: s }),
      kv('check-not-exists', `${p}/none`),
      kv('delete', `${p}/none`),
    ]);
    expect(r.status, r.text).toBe(200);
    expect(r.headers.get('content-type')).toBe('application/json');
    const body = r.json();
    expect(body.Errors).toBeNull();
    const index = body.Results[0].KV.ModifyIndex;
    expect(body.Results.map((x: any) => [x.KV.Key, x.KV.Value])).toEqual([
      [`${p}/a`, null], [`${p}/b`, null], [`${p}/l`, null], [`${p}/a`, b64('one')],
      [`${p}/a`, b64('one')], [`${p}/b`, b64('two')], [`${p}/l`, b64('held')], [`${p}/l`, null],
    ]);
    expect(Object.keys(body.Results[2].KV)).toEqual(['LockIndex', 'Key', 'Flags', 'Value', 'Session', 'CreateIndex', 'ModifyIndex']);
    expect(body.Results[2].KV).toMatchObject({ LockIndex: 1, Session: s, CreateIndex: index, ModifyIndex: index });
    expect(body.Results[0].KV.Flags).toBe(42);
    // One entry: every key written carries the same index, and GET sees it.
    const a = await get(consulAgent, `/v1/kv/${p}/a`);
    expect(a.json()[0]).toMatchObject({ Value: b64('one'), Flags: 42, ModifyIndex: index });

    // check-index, unlock, delete-cas and delete-tree, again in one transaction.
    const r2 = await put(consulAgent, [
      kv('check-index', `${p}/a`, { Index: index }), kv('unlock', `${p}/l`, { Session: s }),
      kv('delete-cas', `${p}/b`, { Index: index }), kv('delete-tree', `${p}/a`),
    ]);
    expect(r2.status, r2.text).toBe(200);
    expect(r2.json().Results.map((x: any) => x.KV.Key)).toEqual([`${p}/a`, `${p}/l`]);
    expect(r2.json().Results[1].KV.Session).toBeUndefined();
    expect((await get(consulAgent, `/v1/kv/${p}/?keys`)).json()).toEqual([`${p}/l`]);
  });

  test('Flags round-trip as exact uint64 in and out', async () => {
    const key = uniq('flags');
    const r = await put(consulAgent, `[{"KV":{"Verb":"set","Key":"${key}","Flags":${lockFlags}}},{"KV":{"Verb":"get","Key":"${key}"}}]`);
    expect(r.status, r.text).toBe(200);
    expect(r.text).toContain(`"Flags":${lockFlags}`);
    expect((await get(consulAgent, `/v1/kv/${key}`)).text).toContain(`"Flags":${lockFlags}`);
  });

  test('a failing operation: 409 with every failing OpIndex, and nothing applied', async () => {
    const key = uniq('atomic');
    expect((await call(consulAgent.url, 'PUT', `/v1/kv/${key}`, 'before')).text).toBe('true');
    const before = (await get(consulAgent, `/v1/kv/${key}`)).json()[0];
    const r = await put(consulAgent, [
      kv('set', key, { Value: b64('after') }), kv('set', `${key}/new`, { Value: b64('x') }),
      kv('cas', key, { Value: b64('x'), Index: 1 }), kv('get', `${key}/missing`),
    ]);
    expect(r.status, r.text).toBe(409);
    expect(r.headers.get('content-type')).toBe('application/json');
    expect(r.text).toBe(`{"Results":null,"Errors":[{"OpIndex":2,"What":"failed to set key \\"${key}\\", index is stale"},{"OpIndex":3,"What":"key \\"${key}/missing\\" doesn't exist"}]}`);
    expect((await get(consulAgent, `/v1/kv/${key}`)).json()[0]).toEqual(before);
    expect((await get(consulAgent, `/v1/kv/${key}/new`)).status).toBe(404);
  });

  test('lock held by another session and a missing session are failed operations; an unknown verb is refused before apply', async () => {
    const key = uniq('held');
    const [s1, s2] = [await session(consulAgent), await session(consulAgent)];
    expect((await put(consulAgent, [kv('lock', key, { Session: s1 })])).status).toBe(200);
    const r = await put(consulAgent, [kv('lock', key, { Session: s2 }), kv('unlock', key)]);
    expect(r.status).toBe(409);
    expect(r.json().Errors).toEqual([{ OpIndex: 0, What: `failed to lock key "${key}", lock is already held` }, { OpIndex: 1, What: 'missing session' }]);
    // Vetting (verbs, keys, ACLs) comes first: its refusals alone are reported, as Consul's pre-check does.
    const vetted = await put(consulAgent, [kv('lock', key, { Session: s2 }), kv('get-or-what', key)]);
    expect(vetted.json()).toEqual({ Results: null, Errors: [{ OpIndex: 1, What: 'unknown KV verb "get-or-what"' }] });
  });

  test('refusals: 413 past 64 operations, 400 for a body that does not parse or a non-KV operation', async () => {
    const many = Array.from({ length: 65 }, (_, i) => kv('get', `k${i}`));
    expectConsulText(await put(consulAgent, many), 413, 'Transaction contains too many operations (65 > 64)');
    expectConsulText(await put(consulAgent, { KV: {} }), 400, 'Failed to parse body: json: cannot unmarshal object into Go value of type api.TxnOps');
    expectConsulText(await put(consulAgent, [kv('set', 'k', { Flags: 'x' })]), 400,
      'Failed to parse body: json: cannot unmarshal string into Go struct field KVTxnOp.KV.Flags of type uint64');
    expectConsulText(await put(consulAgent, [kv('set', 'k', { Flags: -1 })]), 400,
      'Failed to parse body: json: cannot unmarshal number -1 into Go struct field KVTxnOp.KV.Flags of type uint64');
    expectConsulText(await put(consulAgent, [kv('set', 'k', { Value: 'not base64!' })]), 400, 'Failed to parse body: illegal base64 data at input byte 3');
    expect((await put(consulAgent, '[{"KV":')).text).toMatch(/^Failed to parse body: /);
    expectConsulText(await put(consulAgent, [{ Node: { Verb: 'get', Node: { Node: 'n' } } }]), 400,
      "Operation 0 is a Node operation: this agent's transactions hold KV operations only");
    expect((await put(consulAgent, [kv('set', '')])).json().Errors).toEqual([{ OpIndex: 0, What: 'Must provide key' }]);
  });

  test('a body over the request limit is refused 413 before it is read', async () => {
    const big = JSON.stringify([kv('set', 'k', { Value: Buffer.alloc(400 * 1024).toString('base64') })]);
    const r = await put(consulAgent, big);
    expect(r.status).toBe(413);
    expect(r.text).toMatch(/^Request body\(\d+ bytes\) too large, max size: 524288 bytes/);
  });

  test('member names in any case, as Consul decodes them', async () => {
    const key = uniq('case');
    const r = await put(consulAgent, [{ kv: { verb: 'set', key, value: b64('v'), flags: 3 } }, { Kv: { VERB: 'get', KEY: key } }]);
    expect(r.status, r.text).toBe(200);
    expect(r.json().Results[1].KV).toMatchObject({ Key: key, Value: b64('v'), Flags: 3 });
  });

  test('a read-only transaction needs no log entry; ?consistent goes through a barrier first', async () => {
    const key = uniq('reads');
    await put(consulAgent, [kv('set', key, { Value: b64('r') })]);
    const applied = consulAgent.parts.runtime.state.index;
    const r = await put(consulAgent, [kv('get', key), kv('check-not-exists', `${key}/x`)]);
    expect(r.status, r.text).toBe(200);
    expect(r.json().Results).toHaveLength(1);
    expect(consulAgent.parts.runtime.state.index).toBe(applied);
    expect((await put(consulAgent, [kv('get', key)], '?consistent')).status).toBe(200);
    expect(consulAgent.parts.runtime.state.index).toBe(applied + 1);
    expect((await put(consulAgent, [kv('get', `${key}/none`)], '?stale')).json().Errors).toEqual([{ OpIndex: 0, What: `key "${key}/none" doesn't exist` }]);
    const orEmpty = await put(consulAgent, [kv('get-or-empty', key), kv('get-or-empty', `${key}/none`)]);
    expect(orEmpty.json().Results.map((x: any) => [x.KV.Key, x.KV.Value, x.KV.ModifyIndex > 0])).toEqual([[key, b64('r'), true], [`${key}/none`, null, false]]);
    expect(consulAgent.parts.runtime.state.index).toBe(applied + 1);
  });

  test('the npm consul client: transaction.create answers the results; a failure rejects with the 409 body', async () => {
    const key = uniq('client');
    const out = await consul.transaction.create([
      { KV: { Verb: 'set', Key: key, Value: b64('from-client') } },
      { KV: { Verb: 'get', Key: key } },
    ]);
    expect(out.Errors).toBeNull();
    expect(out.Results[1].KV).toMatchObject({ Key: key, Value: b64('from-client') });
    const err = await consul.transaction.create([{ KV: { Verb: 'check-not-exists', Key: key } }]).then(() => undefined, (e: any) => e);
    expect(err?.response?.statusCode).toBe(409);
    expect(err.response.body).toEqual({ Results: null, Errors: [{ OpIndex: 0, What: `key "${key}" exists` }] });
  });

  test('a blocking query on a key wakes when a transaction writes it', async () => {
    const key = uniq('blocking');
    await put(consulAgent, [kv('set', key, { Value: b64('1') })]);
    const index = Number((await get(consulAgent, `/v1/kv/${key}`)).headers.get('x-consul-index'));
    const waiting = get(consulAgent, `/v1/kv/${key}?index=${index}&wait=20s`);
    await new Promise((r) => setTimeout(r, 200));
    const started = Date.now();
    expect((await put(consulAgent, [kv('set', `${key}-other`), kv('set', key, { Value: b64('2') })])).status).toBe(200);
    const woken = await waiting;
    expect(Date.now() - started).toBeLessThan(10_000);
    expect(woken.json()[0].Value).toBe(b64('2'));
  });

  test('an unlock in a transaction hands the lock to an acquire queued with ?wait', async () => {
    const key = uniq('queued');
    const [s1, s2] = [await session(consulAgent), await session(consulAgent)];
    expect((await put(consulAgent, [kv('lock', key, { Session: s1 })])).status).toBe(200);
    const queued = call(consulAgent.url, 'PUT', `/v1/kv/${key}?acquire=${s2}&wait=20s`, 'next');
    await new Promise((r) => setTimeout(r, 200));
    expect((await put(consulAgent, [kv('unlock', key, { Session: s1 })])).status).toBe(200);
    expect((await queued).text).toBe('true');
    expect((await get(consulAgent, `/v1/kv/${key}`)).json()[0]).toMatchObject({ Session: s2, LockIndex: 2 });
  });
});

describe('seed dialect', () => {
  test('the stream sees one event per key a transaction changed, in one batch at its index', async () => {
    const p = uniq('stream');
    await put(seedAgent, [kv('set', `${p}/gone`, { Value: b64('g') })]);
    const s = await Stream.open(seedAgent);
    await subscribe(s, { id: 't', topic: 'kv_prefix', key: `${p}/` });
    const from = s.mark;
    const r = await put(seedAgent, [kv('set', `${p}/a`, { Value: b64('a') }), kv('set', `${p}/a`, { Value: b64('b') }), kv('delete', `${p}/gone`), kv('set', 'elsewhere')]);
    expect(r.status, r.text).toBe(200);
    const index = r.json().Results[0].KV.ModifyIndex;
    // One entry: its changes arrive as one batch at its index.
    const batches = (await settled(s, from, 't')).filter((m) => m.type !== 'bookmark');
    expect(batches.map((m) => [m.type, m.index])).toEqual([['batch', index]]);
    expect(batches[0]!.events.map((e: any) => [e.op, e.key])).toEqual([['upsert', `${p}/a`], ['delete', `${p}/gone`]]);
    expect(batches[0]!.events[0].value).toMatchObject({ Value: b64('b'), ModifyIndex: index });
    s.ws.terminate();
  });

  test('success is the same Results body', async () => {
    const key = uniq('seed');
    const r = await put(seedAgent, [kv('set', key, { Value: b64('s') }), kv('get', key)]);
    expect(r.status, r.text).toBe(200);
    expect(r.json()).toMatchObject({ Errors: null, Results: [{ KV: { Key: key, Value: null } }, { KV: { Key: key, Value: b64('s') } }] });
  });

  test('a failed operation is 409 code 1025 listing each failing operation; nothing applied', async () => {
    const key = uniq('seed-fail');
    const r = await put(seedAgent, [kv('set', key), kv('check-index', `${key}/y`, { Index: 1 }), kv('get', `${key}/x`)]);
    const body = expectError(r, 409, 1025);
    expect(body.details).toEqual({ errors: [
      { opIndex: 1, what: `failed to check index, key "${key}/y" doesn't exist` }, { opIndex: 2, what: `key "${key}/x" doesn't exist` },
    ] });
    expect((await get(seedAgent, `/v1/kv/${key}`)).status).toBe(404);
  });

  test('refusals in the seed format: 413 code 1011, 400 code 1024, 415 without a JSON content type', async () => {
    const many = Array.from({ length: 65 }, (_, i) => kv('get', `k${i}`));
    expect(expectError(await put(seedAgent, many), 413, 1011).details).toEqual({ operations: 65, max: 64 });
    expectError(await put(seedAgent, '[1,'), 400, 1024);
    // 1009's details map each field (here the operation's member, by its place) to its broken rules.
    expect(expectError(await put(seedAgent, [kv('get', 'a'), { Service: { Verb: 'get' } }]), 400, 1009).details)
      .toEqual({ '[1].Service': ['Unsupported:transactions hold KV operations only'] });
    expectError(await call(seedAgent.url, 'PUT', '/v1/txn', '[]', { 'content-type': 'text/plain' }), 415, 1019);
  });
});
