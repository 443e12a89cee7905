// Goal: with authentication on, each operation of a transaction needs its key's rule — read for get and the
// checks, write for writes, write on the whole subtree for delete-tree — and lock/unlock need the session's
// owner; an operation the token may not do is a failed operation ("Permission denied" at its OpIndex, 409)
// and nothing applies; get-tree results hold only the keys the token may read, and a read-only
// transaction's index moves only with them. Both dialects.
import { writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, test } from 'vitest';
import { TokenAuthority, type Rule } from '../../src/auth/index.ts';
import { tempDataDir } from '../support/agent.ts';
import { call, expectError, startAgent, type Agent } from '../support/in-process.ts';

const secret = 'a-transaction-secret-that-is-long-enough-9';
const tokens = new TokenAuthority({ secret });
const bearer = (t: string) => ({ authorization: `Bearer ${t}` });
const b64 = (text: string) => Buffer.from(text).toString('base64');
const kv = (verb: string, key: string, more: Record<string, unknown> = {}) => ({ KV: { Verb: verb, Key: key, ...more } });

/** Write under t/rw/, read under t/ro/, nothing under t/rw/locked/ (a deny below a write). */
const rules: Rule[] = [
  { resource: 'key', prefix: 't/rw/', access: 'write' },
  { resource: 'key', prefix: 't/rw/locked/', access: 'deny' },
  { resource: 'key', prefix: 't/ro/', access: 'read' },
  { resource: 'session', prefix: '', access: 'write' },
];
const admin: Rule[] = [{ resource: 'key', prefix: '', access: 'write' }, { resource: 'session', prefix: '', access: 'write' }];

let agents: { consul: Agent; seed: Agent };
let user: string;
let other: string;
let root: string;

beforeAll(async () => {
  const configFile = join(tempDataDir(), 'agent.json');
  writeFileSync(configFile, JSON.stringify({ auth: { jwt_secret: secret } }));
  const [consul, seed] = await Promise.all([
    startAgent({ args: ['--config-file', configFile, '--dialect', 'consul'] }), startAgent({ args: ['--config-file', configFile] }),
  ]);
  agents = { consul, seed };
  [user, other, root] = await Promise.all([
    tokens.mint({ subject: 'user', rules, ttlSeconds: 600 }), tokens.mint({ subject: 'other', rules, ttlSeconds: 600 }),
    tokens.mint({ subject: 'root', rules: admin, ttlSeconds: 600 }),
  ]);
});
afterAll(async () => {
  await Promise.all([agents?.consul.stop(), agents?.seed.stop()]);
});

describe.each(['consul', 'seed'] as const)('%s dialect', (dialect) => {
  const agent = () => agents[dialect];
  const txn = (token: string, ops: unknown[]) => call(agent().url, 'PUT', '/v1/txn', ops, bearer(token));
  const errorsOf = (r: Awaited<ReturnType<typeof txn>>) =>
    (dialect === 'consul' ? r.json().Errors : expectError(r, 409, 1025).details.errors.map((e: any) => ({ OpIndex: e.opIndex, What: e.what })));

  beforeAll(async () => {
    const seeded = await txn(root, [kv('set', 't/ro/a', { Value: b64('ro') }), kv('set', 't/secret/x', { Value: b64('s') }), kv('set', 't/rw/locked/k')]);
    expect(seeded.status, seeded.text).toBe(200);
  });

  test('each operation the token may not do is Permission denied at its index, and nothing applies', async () => {
    const r = await txn(user, [
      kv('set', 't/rw/new', { Value: b64('x') }), kv('set', 't/ro/a'), kv('get', 't/ro/a'), kv('get', 't/secret/x'),
      kv('check-index', 't/secret/x', { Index: 1 }), kv('delete-tree', 't/rw/'), kv('delete', 't/rw/locked/k'),
    ]);
    expect(r.status).toBe(409);
    expect(errorsOf(r)).toEqual([1, 3, 4, 5, 6].map((i) => ({ OpIndex: i, What: 'Permission denied' })));
    const after = await call(agent().url, 'GET', '/v1/kv/t/rw/new', undefined, bearer(root));
    expect(after.status).toBe(404);
  });

  test('allowed operations apply; get-tree holds only readable keys', async () => {
    const r = await txn(user, [kv('set', 't/rw/mine', { Value: b64('m') }), kv('get-tree', 't/')]);
    expect(r.status, r.text).toBe(200);
    expect(r.json().Results.map((x: any) => x.KV.Key)).toEqual(['t/rw/mine', 't/ro/a', 't/rw/mine']);
  });

  test('a read-only transaction\'s index moves only with the keys the token may read', async () => {
    const reads = [kv('get-tree', 't/ro/')];
    const before = await txn(user, reads);
    expect(before.status, before.text).toBe(200);
    const index = Number(before.headers.get('x-consul-index'));
    expect(index).toBeGreaterThan(0);
    // Writes the token cannot see leave it where it was.
    for (let i = 0; i < 3; i++) expect((await txn(root, [kv('set', 't/secret/x', { Value: b64(`s${i}`) })])).status).toBe(200);
    expect(Number((await txn(user, reads)).headers.get('x-consul-index'))).toBe(index);
    // One it can see moves it to that write.
    const write = await txn(root, [kv('set', 't/ro/b', { Value: b64('b') })]);
    const seen = Number((await txn(user, reads)).headers.get('x-consul-index'));
    expect(seen).toBe(write.json().Results[0].KV.ModifyIndex);
    // A token that may read every key gets the state's index.
    expect(Number((await txn(root, reads)).headers.get('x-consul-index'))).toBeGreaterThanOrEqual(seen);
  });

  test('lock and unlock need the session\'s owner', async () => {
    const created = await call(agent().url, 'PUT', '/v1/session/create', {}, bearer(user));
    expect(created.status, created.text).toBe(200);
    const s = created.json().ID;
    const key = `t/rw/lock-${dialect}`;
    expect(errorsOf(await txn(other, [kv('lock', key, { Session: s })]))).toEqual([{ OpIndex: 0, What: 'Permission denied' }]);
    const mine = await txn(user, [kv('lock', key, { Session: s })]);
    expect(mine.status, mine.text).toBe(200);
    expect(mine.json().Results[0].KV).toMatchObject({ Session: s, LockIndex: 1 });
    expect(errorsOf(await txn(other, [kv('unlock', key, { Session: s })]))).toEqual([{ OpIndex: 0, What: 'Permission denied' }]);
    expect((await txn(root, [kv('unlock', key, { Session: s })])).status).toBe(409);
    expect((await txn(user, [kv('unlock', key, { Session: s })])).status).toBe(200);
  });
});
