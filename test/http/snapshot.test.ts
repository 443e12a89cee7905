// Goal: backup and restore through started agents (GET/PUT /v1/snapshot). A snapshot taken under a write
// load holds every write acknowledged before it, at the index it names; restored into a fresh agent, every
// key, session and check equals the source's, every ModifyIndex is the restore entry's and later writes go
// above it; blocking queries wake; a damaged or truncated file is refused with nothing changed; the restored
// state survives SIGKILL and a restart (replay of the log). A snapshot too large for one log entry travels as
// a file beside the WAL and restores the same way. Fencing tokens (an acquire's X-Consul-Index) grow within
// one log, a restore into it included; a restore into another log continues from that log's index, below the
// tokens the file's log handed out, which is why fenced resources are reset after such a move.
import { readdirSync } from 'node:fs';
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, test } from 'vitest';
import { encodeSnapshotFile, readSnapshotFile } from '../../src/state/index.ts';
import { client, expectError, sleep, startAgent, type Agent } from '../support/agent.ts';

let source: Agent;
let target: Agent;
let sessionId = '';
const acked = new Set<string>();

beforeAll(async () => {
  [source, target] = await Promise.all([startAgent(), startAgent()]);
  const c = client(source);
  sessionId = await c.session({ Name: 'holder', TTL: '60s' });
  expect((await c.put(`/v1/kv/lock/a?acquire=${sessionId}`, 'held')).text).toBe('true');
  const service = { ID: 'web1', Name: 'web', Port: 80, Check: { CheckID: 'web1-ttl', TTL: '60s' } };
  expect((await c.put('/v1/agent/service/register', service)).status).toBe(200);
  expect((await c.put('/v1/agent/check/pass/web1-ttl')).status).toBe(200);
  for (let i = 0; i < 50; i++) await c.put(`/v1/kv/base/${i}?flags=${i}`, `v${i}`);
}, 60_000);
afterAll(async () => {
  for (const a of [source, target]) { await a?.stop(); a?.cleanup(); }
});

/** A list endpoint's items with the indexes a restore renumbers left out. */
async function listed(agent: Agent, path: string): Promise<unknown[]> {
  const r = await client(agent).get(path);
  expect(r.status, r.text).toBe(200);
  const items = r.json<Record<string, unknown>[] | Record<string, Record<string, unknown>>>();
  return (Array.isArray(items) ? items : Object.values(items)).map(({ ModifyIndex: _m, CreateIndex: _c, ...rest }) => rest);
}

const lists = ['/v1/kv/?recurse', '/v1/session/list', '/v1/health/state/any', '/v1/agent/services'];

describe('save', () => {
  test('under a write load: the file holds every write acknowledged before the request, at the index it names', async () => {
    const c = client(source);
    let stop = false;
    const writer = async (w: number) => {
      for (let i = 0; !stop; i++) {
        const key = `load/${w}/${i}`;
        if ((await c.put(`/v1/kv/${key}`, `x${i}`)).text === 'true') acked.add(key);
      }
    };
    const writers = [0, 1, 2, 3].map(writer);
    await sleep(300);
    const before = new Set(acked);
    const r = await c.get('/v1/snapshot');
    stop = true;
    await Promise.all(writers);
    expect(r.status, r.text).toBe(200);
    expect(r.headers.get('content-type')).toBe('application/gzip');
    const { meta, data } = readSnapshotFile(r.body);
    expect(Number(r.headers.get('x-consul-index'))).toBe(meta.index);
    expect(data.index).toBe(meta.index);
    const keys = new Set(data.kv.map((e) => e.key));
    for (const key of before) expect(keys.has(key), key).toBe(true);
    expect(meta.counts.keys).toBe(data.kv.length);
    expect(meta.counts.sessions).toBe(1);
    expect(data.kv.every((e) => e.modifyIndex <= meta.index)).toBe(true);
  }, 60_000);
});

describe('restore into a fresh agent', () => {
  let file: Buffer;
  let restoredIndex = 0;

  test('every key, session and check equals the source\'s; ModifyIndex is the restore entry\'s', async () => {
    const saved = await client(source).get('/v1/snapshot');
    expect(saved.status).toBe(200);
    file = saved.body;
    const blocked = client(target).get('/v1/kv/lock/a?index=1&wait=30s');
    const r = await client(target).put('/v1/snapshot', file);
    expect(r.status, r.text).toBe(200);
    restoredIndex = r.json<{ Index: number }>().Index;
    expect(Number(r.headers.get('x-consul-index'))).toBe(restoredIndex);
    // A blocking query on a key the restore created wakes with it.
    const woke = await blocked;
    expect(woke.status).toBe(200);
    expect(Number(woke.headers.get('x-consul-index'))).toBe(restoredIndex);
    for (const path of lists) expect(await listed(target, path), path).toEqual(await listed(source, path));
    // The catalog too, but for the node's ID: the agent registers itself again after a restore, with its own.
    const nodes = async (a: Agent) => (await listed(a, '/v1/catalog/nodes')).map((n) => ({ ...(n as object), ID: '' }));
    expect(await nodes(target)).toEqual(await nodes(source));
    const kv = (await client(target).get('/v1/kv/?recurse')).json<{ ModifyIndex: number; CreateIndex: number }[]>();
    expect(kv.length).toBeGreaterThan(acked.size);
    for (const e of kv) {
      expect(e.ModifyIndex).toBe(restoredIndex);
      expect(e.CreateIndex).toBeLessThanOrEqual(restoredIndex);
    }
    const lock = (await client(target).get('/v1/kv/lock/a')).json<{ Session: string }[]>()[0]!;
    expect(lock.Session).toBe(sessionId);
  }, 60_000);

  test('the restored session renews and still holds its lock; later writes go above the restore', async () => {
    const c = client(target);
    expect((await c.put(`/v1/session/renew/${sessionId}`)).status).toBe(200);
    expectError(await c.put('/v1/kv/lock/a?acquire=' + (await c.session({ Name: 'other' })), 'x'), 409, 1025);
    const w = await c.put('/v1/kv/after/restore', 'yes');
    expect(w.text).toBe('true');
    const after = (await c.get('/v1/kv/after/restore')).json<{ ModifyIndex: number }[]>()[0]!;
    expect(after.ModifyIndex).toBeGreaterThan(restoredIndex);
  });

  test('a damaged or truncated file is a 400 and changes nothing', async () => {
    const c = client(target);
    const before = await listed(target, '/v1/kv/?recurse');
    const index = Number((await c.get('/v1/kv/?recurse')).headers.get('x-consul-index'));
    const flipped = Buffer.from(file);
    flipped[Math.floor(flipped.length / 2)]! ^= 0xff;
    for (const bad of [flipped, file.subarray(0, file.length - 40), Buffer.from('not a snapshot')]) {
      const body = expectError(await c.put('/v1/snapshot', bad), 400, 1022);
      expect(body.message).toMatch(/^snapshot refused, nothing changed: /);
    }
    expect(await listed(target, '/v1/kv/?recurse')).toEqual(before);
    expect(Number((await c.get('/v1/kv/?recurse')).headers.get('x-consul-index'))).toBe(index);
  });

  test('a snapshot larger than one log entry travels beside the log (the WAL\'s attachments) and restores whole', async () => {
    const { data } = readSnapshotFile(file);
    const kv = [...data.kv, ...Array.from({ length: 200_000 }, (_, i) => ({
      key: `big/${String(i).padStart(7, '0')}`, value: 'dmFsdWUtdmFsdWUtdmFsdWU=', flags: '0', session: undefined, lockIndex: 0, createIndex: 1, modifyIndex: 1,
    }))].sort((a, b) => (a.key < b.key ? -1 : a.key > b.key ? 1 : 0));
    const big = await encodeSnapshotFile({ ...data, kv }, 'node1', Date.now());
    const c = client(target);
    const r = await c.put('/v1/snapshot', big.file);
    expect(r.status, r.text).toBe(200);
    expect(readdirSync(join(target.dataDir, 'attachments'))).toHaveLength(1);
    const keys = (await c.get('/v1/kv/big/?keys')).json<string[]>();
    expect(keys).toHaveLength(200_000);
    expect((await c.get('/v1/kv/lock/a')).json<{ Session: string }[]>()[0]!.Session).toBe(sessionId);
  }, 60_000);

  test('the restored state survives SIGKILL and a restart (the log replays the restore)', async () => {
    const expected = await Promise.all(lists.slice(0, 2).map((p) => listed(target, p)));
    await target.kill9();
    target = await startAgent({ dataDir: target.dataDir });
    const got = await Promise.all(lists.slice(0, 2).map((p) => listed(target, p)));
    expect(got).toEqual(expected);
  }, 60_000);
});

describe('fencing tokens across a restore', () => {
  /** An acquire of `key` through `agent` with a new session; its fencing token (the acquire's X-Consul-Index). */
  async function tokenOf(agent: Agent, key: string): Promise<number> {
    const c = client(agent);
    const r = await c.put(`/v1/kv/${key}?acquire=${await c.session({ Name: 'fenced', LockDelay: '0s' })}`, 'x');
    expect(r.text).toBe('true');
    return Number(r.headers.get('x-consul-index'));
  }

  test('they grow within one log, a restore into it included; restored into another log they start from its index, below the file\'s', async () => {
    const highest = await tokenOf(source, 'fenced/a');
    const file = (await client(source).get('/v1/snapshot')).body;
    // Another log: a fresh agent, far behind the source's.
    const fresh = await startAgent();
    try {
      const restored = (await client(fresh).put('/v1/snapshot', file)).json<{ Index: number }>().Index;
      const there = await tokenOf(fresh, 'fenced/b');
      expect(there).toBeGreaterThan(restored);
      expect(there).toBeLessThan(highest);
    } finally {
      await fresh.stop();
      fresh.cleanup();
    }
    // The same log: the restore entry and every acquire after it are above every token it gave.
    const back = (await client(source).put('/v1/snapshot', file)).json<{ Index: number }>().Index;
    expect(back).toBeGreaterThan(highest);
    expect(await tokenOf(source, 'fenced/c')).toBeGreaterThan(back);
  }, 60_000);
});
