// Goal: every row of registry.md's Session state table, the effect of invalidation by Behavior, lock-delay, and the session endpoints (consul-compat.md §1.1, seed error bodies) — over HTTP against started agents.
import { rmSync } from 'node:fs';
import { afterAll, beforeAll, describe, expect, test } from 'vitest';
import { client, sleep, startAgent, tempDataDir, type Agent, type HttpResult, expectError } from '../support/agent.ts';

type Client = ReturnType<typeof client>;

interface SessionJson {
  ID: string; Name: string; Node: string; LockDelay: number; Behavior: string; TTL: string;
  NodeChecks: string[]; ServiceChecks: unknown; Checks?: string[]; CreateIndex: number; ModifyIndex: number;
}
interface KvEntry {
  LockIndex: number; Key: string; Flags: number; Value: string | null; Session?: string; CreateIndex: number; ModifyIndex: number;
}

const sessionFieldOrder = ['ID', 'Name', 'Node', 'LockDelay', 'Behavior', 'TTL', 'NodeChecks', 'ServiceChecks', 'CreateIndex', 'ModifyIndex'];
const uuidPattern = /^[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}$/;
/** TTL used by the timing tests; the TTL agent runs with `--session-ttl-min 1s`. */
const ttlMs = 1000;
/** The spec allows expiry later than TTL; the server promises 2×TTL. Allow 1.5 s of slack on top. */
const expiryBoundMs = 2 * ttlMs + 1500;
const pollMs = 50;

let seq = 0;
/** Unique names per test, so concurrent tests on one agent never meet. */
const uniq = (p: string) => `${p}-${Date.now().toString(36)}-${(seq++).toString(36)}`;
const b64 = (s: string) => Buffer.from(s).toString('base64');

async function info(c: Client, id: string): Promise<SessionJson[]> {
  const r = await c.get(`/v1/session/info/${id}`);
  expect(r.status, r.text).toBe(200);
  return r.json<SessionJson[]>();
}

/** The KV entry, or null on 404. */
async function entry(c: Client, key: string): Promise<KvEntry | null> {
  const r = await c.get(`/v1/kv/${key}`);
  if (r.status === 404) return null;
  expect(r.status, r.text).toBe(200);
  return r.json<KvEntry[]>()[0]!;
}

async function acquire(c: Client, key: string, id: string, value = 'v', flags?: number): Promise<HttpResult> {
  return c.put(`/v1/kv/${key}?acquire=${id}${flags === undefined ? '' : `&flags=${flags}`}`, value);
}

async function mustAcquire(c: Client, key: string, id: string, value = 'v', flags?: number): Promise<KvEntry> {
  const r = await acquire(c, key, id, value, flags);
  expect(r.status, r.text).toBe(200);
  expect(r.text).toBe('true');
  const e = await entry(c, key);
  expect(e?.Session).toBe(id);
  return e!;
}

/** Registers a node with node-level checks (catalog register; Status given explicitly). */
async function registerNode(c: Client, node: string, checks: { CheckID: string; Status: string }[]): Promise<void> {
  const r = await c.put('/v1/catalog/register', {
    Node: node, Address: '10.1.2.3',
    Checks: checks.map((k) => ({ CheckID: k.CheckID, Name: `${k.CheckID} check`, Status: k.Status })),
  });
  expect(r.status, r.text).toBe(200);
}

async function setCheck(c: Client, node: string, checkId: string, status: string): Promise<void> {
  const r = await c.put('/v1/catalog/register', { Node: node, Address: '10.1.2.3', Check: { CheckID: checkId, Name: `${checkId} check`, Status: status } });
  expect(r.status, r.text).toBe(200);
}


/** Polls `probe` until it returns true or `timeoutMs` passes; returns the elapsed ms from `since` when it did, or null. */
async function pollUntil(probe: () => Promise<boolean>, since: number, timeoutMs: number): Promise<number | null> {
  while (performance.now() - since <= timeoutMs) {
    if (await probe()) return performance.now() - since;
    await sleep(pollMs);
  }
  return null;
}

/**
 * Watches a TTL session from a reference time (the send time of its create or last renew) and checks the
 * TTL row: it exists at ~0.8×TTL, is never seen gone before TTL, and is gone by `expiryBoundMs`.
 * Returns the elapsed ms at which it was first seen gone.
 */
async function expectTtlExpiry(c: Client, id: string, sentAt: number): Promise<number> {
  let seenAliveLate = false;
  let goneAt: number | null = null;
  while (performance.now() - sentAt <= expiryBoundMs) {
    const alive = (await info(c, id)).length === 1;
    const elapsed = performance.now() - sentAt; // response time: the server decided no later than this
    if (alive) {
      if (elapsed >= 0.8 * ttlMs) seenAliveLate = true;
    } else {
      goneAt = elapsed;
      break;
    }
    await sleep(pollMs);
  }
  expect(goneAt, `session ${id} still present ${expiryBoundMs} ms after create/renew`).not.toBeNull();
  expect(goneAt!, 'session expired before its TTL').toBeGreaterThanOrEqual(ttlMs);
  expect(seenAliveLate, 'session was never seen alive at ~0.8×TTL').toBe(true);
  return goneAt!;
}

// One agent with the default TTL minimum (10s) and one with 1s for the timing rows, started together.
let plain: Agent;
let ttl: Agent;
let pc: Client;
let tc: Client;

beforeAll(async () => {
  [plain, ttl] = await Promise.all([startAgent(), startAgent({ args: ['--session-ttl-min', '1s'] })]);
  pc = client(plain);
  tc = client(ttl);
});

afterAll(async () => {
  await Promise.all([plain?.stop(), ttl?.stop()]);
  plain?.cleanup();
  ttl?.cleanup();
});

// ---------------------------------------------------------------------------------------------------
describe.concurrent('Session state table (registry.md "States and transitions / Session")', () => {
  test('row 1: valid --node destroyed--> invalidated (catalog deregister of the session node)', async () => {
    const c = tc;
    const node = uniq('node-gone');
    await registerNode(c, node, [{ CheckID: 'svc-alive', Status: 'passing' }]);
    const id = await c.session({ Node: node, NodeChecks: ['svc-alive'], LockDelay: '0s' });
    const s = (await info(c, id))[0]!;
    expect(s.Node).toBe(node);
    expect(s.NodeChecks).toEqual(['svc-alive']);
    const onNode = await c.get(`/v1/session/node/${node}`);
    expect(onNode.json<SessionJson[]>().map((x) => x.ID)).toEqual([id]);
    const key = uniq('row1');
    await mustAcquire(c, key, id, 'held');

    const r = await c.put('/v1/catalog/deregister', { Node: node });
    expect(r.status, r.text).toBe(200);

    expect(await info(c, id)).toEqual([]);
    expect((await c.get(`/v1/session/node/${node}`)).json()).toEqual([]);
    expect((await c.put(`/v1/session/renew/${id}`)).status).toBe(404);
    const e = await entry(c, key);
    expect(e).not.toBeNull();
    expect(e!.Session).toBeUndefined(); // locks handled by Behavior (release)
  });

  test('row 2: valid --bound health check deregistered--> invalidated; sessions not bound to it survive', async () => {
    const c = tc;
    const node = uniq('node-chk-dereg');
    await registerNode(c, node, [{ CheckID: 'bound', Status: 'passing' }, { CheckID: 'other', Status: 'passing' }]);
    const bound = await c.session({ Node: node, NodeChecks: ['other', 'bound'], LockDelay: '0s' });
    const unbound = await c.session({ Node: node, NodeChecks: ['other'] });
    const key = uniq('row2');
    await mustAcquire(c, key, bound);

    const r = await c.put('/v1/catalog/deregister', { Node: node, CheckID: 'bound' });
    expect(r.status, r.text).toBe(200);

    expect(await info(c, bound)).toEqual([]);
    expect((await info(c, unbound)).map((s) => s.ID)).toEqual([unbound]);
    expect((await entry(c, key))!.Session).toBeUndefined();
  });

  test('row 3: valid --bound health check enters critical--> invalidated (warning does not invalidate)', async () => {
    const c = tc;
    const node = uniq('node-chk-crit');
    await registerNode(c, node, [{ CheckID: 'c1', Status: 'passing' }, { CheckID: 'c2', Status: 'passing' }]);
    const id = await c.session({ Node: node, NodeChecks: ['c1', 'c2'], LockDelay: '0s' });
    const key = uniq('row3');
    await mustAcquire(c, key, id);

    await setCheck(c, node, 'c2', 'warning');
    expect((await info(c, id)).length, 'a warning check must not invalidate the session').toBe(1);

    await setCheck(c, node, 'c2', 'critical'); // any one bound check is enough
    expect(await info(c, id)).toEqual([]);
    expect((await entry(c, key))!.Session).toBeUndefined();
  });

  test('row 4: valid --destroy operation--> invalidated', async () => {
    const c = tc;
    const id = await c.session({ LockDelay: '0s' });
    const key = uniq('row4');
    await mustAcquire(c, key, id);
    const r = await c.put(`/v1/session/destroy/${id}`);
    expect(r.status, r.text).toBe(200);
    expect(r.json()).toBe(true);
    expect(await info(c, id)).toEqual([]);
    expect((await c.get('/v1/session/list')).json<SessionJson[]>().some((s) => s.ID === id)).toBe(false);
    expect((await entry(c, key))!.Session).toBeUndefined();
    // An invalidated session cannot be used again.
    expectError(await acquire(c, key, id), 400, 1007);
    expectError(await c.put(`/v1/session/renew/${id}`), 404, 1006);
  });

  test('row 5: valid --TTL expires--> invalidated (never before TTL, gone by 2×TTL + slack)', async () => {
    const c = tc;
    const sentAt = performance.now();
    const id = await c.session({ TTL: '1s', LockDelay: '0s' });
    const key = uniq('row5');
    await mustAcquire(c, key, id);
    await expectTtlExpiry(c, id, sentAt);
    expect((await entry(c, key))!.Session).toBeUndefined();
    expectError(await c.put(`/v1/session/renew/${id}`), 404, 1006);
  });

  test('row 6a: valid --renew--> valid, the TTL timer restarts (survives well past 2×TTL while renewed, then expires)', async () => {
    const c = tc;
    const createdAt = performance.now();
    const id = await c.session({ TTL: '1s' });
    let lastSentAt = createdAt;
    // Renew every 0.4 s for 3 s in total: past 2×TTL (2 s) since create.
    while (performance.now() - createdAt < 3 * ttlMs) {
      await sleep(400);
      lastSentAt = performance.now();
      const r = await c.put(`/v1/session/renew/${id}`);
      expect(r.status, `renew after ${Math.round(lastSentAt - createdAt)} ms: ${r.text}`).toBe(200);
      expect(r.json<SessionJson[]>()[0]!.ID).toBe(id);
    }
    expect(performance.now() - createdAt).toBeGreaterThan(2 * ttlMs);
    expect((await info(c, id)).length, 'renewed session must survive past 2×TTL from create').toBe(1);
    // Stop renewing: the timer now runs from the last renew.
    await expectTtlExpiry(c, id, lastSentAt);
  });

  test('row 6b: valid --leader failover--> valid, the TTL timer restarts from full after a restart', async () => {
    const dataDir = tempDataDir();
    const args = ['--session-ttl-min', '1s'];
    let a: Agent | undefined = await startAgent({ dataDir, args });
    try {
      let c = client(a);
      const createdAt = performance.now();
      const id = await c.session({ TTL: '1s', LockDelay: '0s' });
      const key = uniq('failover');
      await mustAcquire(c, key, id);
      expect(await a.stop()).toBe(0);
      // Stay down longer than 2×TTL past the create, so a deadline kept across the restart would already be over.
      const downFor = 2 * ttlMs + 500 - (performance.now() - createdAt);
      if (downFor > 0) await sleep(downFor);
      a = await startAgent({ dataDir, args });
      c = client(a);
      const restartedAt = performance.now();
      const after = await info(c, id);
      expect(after.map((s) => s.ID), 'session must still exist right after the restart').toEqual([id]);
      expect((await entry(c, key))!.Session).toBe(id);
      // …and then expire, on the restarted timer.
      await expectTtlExpiry(c, id, restartedAt);
      expect((await entry(c, key))!.Session).toBeUndefined();
    } finally {
      await a?.stop();
      rmSync(dataDir, { recursive: true, force: true });
    }
  });

  test('no bound checks (NodeChecks: []): survives its node gossip check going critical and being removed; ends only by destroy', async () => {
    const c = tc;
    const node = uniq('node-nochecks');
    await registerNode(c, node, [{ CheckID: 'gossipHealth', Status: 'passing' }]);
    const free = await c.session({ Node: node, NodeChecks: [] });
    const bound = await c.session({ Node: node }); // default: bound to gossipHealth
    expect((await info(c, free))[0]!.NodeChecks).toEqual([]);
    expect((await info(c, bound))[0]!.NodeChecks).toEqual(['gossipHealth']);

    await setCheck(c, node, 'gossipHealth', 'critical');
    expect(await info(c, bound), 'control: the bound session is invalidated').toEqual([]);
    expect((await info(c, free)).map((s) => s.ID)).toEqual([free]);

    await c.put('/v1/catalog/deregister', { Node: node, CheckID: 'gossipHealth' });
    expect((await info(c, free)).map((s) => s.ID)).toEqual([free]);

    await c.put(`/v1/session/destroy/${free}`);
    expect(await info(c, free)).toEqual([]);
  });

  test('Checks: ["gossipHealth","x"] (legacy) binds both: x going critical invalidates', async () => {
    const c = tc;
    const node = uniq('node-legacy');
    await registerNode(c, node, [{ CheckID: 'gossipHealth', Status: 'passing' }, { CheckID: 'x', Status: 'passing' }]);
    const id = await c.session({ Node: node, Checks: ['gossipHealth', 'x'] });
    await setCheck(c, node, 'x', 'critical');
    expect(await info(c, id)).toEqual([]);
  });
});

// ---------------------------------------------------------------------------------------------------
describe.concurrent('Effect of invalidation by Behavior', () => {
  async function lockedEntry(c: Client, behavior: 'release' | 'delete', extra: Record<string, unknown> = {}) {
    const id = await c.session({ Behavior: behavior, LockDelay: '0s', ...extra });
    const key = uniq(`beh-${behavior}`);
    const before = await mustAcquire(c, key, id, 'kept-value', 42);
    expect(before.LockIndex).toBe(1);
    expect(before.Flags).toBe(42);
    return { id, key, before };
  }

  function expectReleased(after: KvEntry | null, before: KvEntry) {
    expect(after, 'release behavior keeps the key').not.toBeNull();
    expect(after!.Session).toBeUndefined();
    expect(Object.keys(after!)).toEqual(['LockIndex', 'Key', 'Flags', 'Value', 'CreateIndex', 'ModifyIndex']);
    expect(after!.Value).toBe(b64('kept-value'));
    expect(after!.Flags).toBe(42);
    expect(after!.LockIndex).toBe(before.LockIndex);
    expect(after!.CreateIndex).toBe(before.CreateIndex);
    expect(after!.ModifyIndex).toBeGreaterThan(before.ModifyIndex);
  }

  test('release on destroy: key stays, Session cleared, Value/Flags/LockIndex kept, ModifyIndex bumped', async () => {
    const c = tc;
    const { id, key, before } = await lockedEntry(c, 'release');
    await c.put(`/v1/session/destroy/${id}`);
    expectReleased(await entry(c, key), before);
  });

  test('delete on destroy: the key is deleted', async () => {
    const c = tc;
    const { id, key } = await lockedEntry(c, 'delete');
    const other = uniq('beh-untouched');
    expect((await c.put(`/v1/kv/${other}`, 'x')).text).toBe('true');
    await c.put(`/v1/session/destroy/${id}`);
    expect(await entry(c, key)).toBeNull();
    expect(await entry(c, other), 'keys the session did not hold stay').not.toBeNull();
  });

  test('release on TTL expiry: key stays, Session cleared, Value/Flags/LockIndex kept, ModifyIndex bumped', async () => {
    const c = tc;
    const { id, key, before } = await lockedEntry(c, 'release', { TTL: '1s' });
    const gone = await pollUntil(async () => (await info(c, id)).length === 0, performance.now(), expiryBoundMs);
    expect(gone, 'TTL session did not expire').not.toBeNull();
    expectReleased(await entry(c, key), before);
  });

  test('delete on TTL expiry: the key is deleted', async () => {
    const c = tc;
    const { id, key } = await lockedEntry(c, 'delete', { TTL: '1s' });
    const gone = await pollUntil(async () => (await info(c, id)).length === 0, performance.now(), expiryBoundMs);
    expect(gone, 'TTL session did not expire').not.toBeNull();
    expect(await entry(c, key)).toBeNull();
  });

  test('delete on bound check critical: the key is deleted', async () => {
    const c = tc;
    const node = uniq('node-beh-del');
    await registerNode(c, node, [{ CheckID: 'chk', Status: 'passing' }]);
    const { key } = await lockedEntry(c, 'delete', { Node: node, NodeChecks: ['chk'] });
    await setCheck(c, node, 'chk', 'critical');
    expect(await entry(c, key)).toBeNull();
  });
});

// ---------------------------------------------------------------------------------------------------
describe.concurrent('Lock delay', () => {
  function expectLockDelay(r: HttpResult) {
    const body = expectError(r, 409, 1025);
    expect(body.message).toBe('did not acquire lock');
    expect(body.details?.reason).toBe('lock-delay');
  }

  /** Runs the 1 s lock-delay scenario after `invalidate` and checks both sides of the delay. */
  async function delayScenario(c: Client, key: string, invalidate: () => Promise<void>) {
    await invalidate();
    const invalidatedAt = performance.now();
    const fresh = await c.session({ LockDelay: '0s' });
    const r = await acquire(c, key, fresh, 'mine');
    const sentWithin = performance.now() - invalidatedAt;
    expect(sentWithin, 'test setup too slow to probe inside the delay').toBeLessThan(900);
    expectLockDelay(r);
    // Plain writes are not blocked by the delay.
    expect((await c.put(`/v1/kv/${key}`, 'plain')).text).toBe('true');
    await sleep(1000 + 150 - (performance.now() - invalidatedAt));
    const ok = await acquire(c, key, fresh, 'mine');
    expect(ok.status, ok.text).toBe(200);
    expect(ok.text).toBe('true');
    expect((await entry(c, key))!.Session).toBe(fresh);
  }

  test('after destroy: a fresh session is refused with 409 lock-delay inside LockDelay "1s" and succeeds after it', async () => {
    const c = tc;
    const key = uniq('ld-destroy');
    const id = await c.session({ LockDelay: '1s' });
    await mustAcquire(c, key, id);
    await delayScenario(c, key, async () => { await c.put(`/v1/session/destroy/${id}`); });
  });

  test('after a bound check goes critical: 409 lock-delay inside the delay, success after', async () => {
    const c = tc;
    const node = uniq('node-ld');
    await registerNode(c, node, [{ CheckID: 'chk', Status: 'passing' }]);
    const id = await c.session({ Node: node, NodeChecks: ['chk'], LockDelay: '1s' });
    const key = uniq('ld-crit');
    await mustAcquire(c, key, id);
    await delayScenario(c, key, async () => { await setCheck(c, node, 'chk', 'critical'); });
  });

  test('after a delete-behavior invalidation the deleted key is still under lock-delay', async () => {
    const c = tc;
    const key = uniq('ld-delete');
    const id = await c.session({ LockDelay: '1s', Behavior: 'delete' });
    await mustAcquire(c, key, id);
    await c.put(`/v1/session/destroy/${id}`);
    expect(await entry(c, key)).toBeNull();
    const fresh = await c.session({ LockDelay: '0s' });
    expectLockDelay(await acquire(c, key, fresh));
  });

  test('LockDelay as a number of ns (1e9) arms a 1 s delay', async () => {
    const c = tc;
    const key = uniq('ld-ns');
    const id = await c.session({ LockDelay: 1_000_000_000 });
    await mustAcquire(c, key, id);
    await delayScenario(c, key, async () => { await c.put(`/v1/session/destroy/${id}`); });
  });

  test('LockDelay "0s" disables the delay: immediate re-acquire by a fresh session works', async () => {
    const c = tc;
    const key = uniq('ld-zero');
    const id = await c.session({ LockDelay: '0s' });
    await mustAcquire(c, key, id);
    await c.put(`/v1/session/destroy/${id}`);
    const fresh = await c.session();
    await mustAcquire(c, key, fresh);
  });

  test('an explicit release arms no delay (even with the default 15 s LockDelay)', async () => {
    const c = tc;
    const key = uniq('ld-release');
    const id = await c.session();
    await mustAcquire(c, key, id);
    const rel = await c.put(`/v1/kv/${key}?release=${id}`, 'v');
    expect(rel.status, rel.text).toBe(200);
    expect(rel.text).toBe('true');
    const fresh = await c.session();
    await mustAcquire(c, key, fresh);
    // And the releasing session itself may re-acquire after the other lets go.
    expect((await c.put(`/v1/kv/${key}?release=${fresh}`, 'v')).text).toBe('true');
    await mustAcquire(c, key, id);
  });
});

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

// ---------------------------------------------------------------------------------------------------
describe('Blocking queries on sessions', () => {
  // Its own agent: no TTL sessions from other tests may move the sessions index while these wait.
  let a: Agent;
  let c: Client;
  beforeAll(async () => { a = await startAgent(); c = client(a); });
  afterAll(async () => { await a?.stop(); a?.cleanup(); });

  async function currentIndex(): Promise<number> {
    const r = await c.get('/v1/session/list');
    expect(r.status).toBe(200);
    const idx = Number(r.headers.get('x-consul-index'));
    expect(idx).toBeGreaterThan(0);
    return idx;
  }

  test('list?index=<current> wakes when a session is created, before the wait ends', async () => {
    await c.session({ Name: 'seed' });
    const idx = await currentIndex();
    let answered = false;
    const started = performance.now();
    const pending = c.get(`/v1/session/list?index=${idx}&wait=20s`).then((r) => { answered = true; return r; });
    await sleep(300);
    expect(answered, 'blocking query answered before anything changed').toBe(false);
    const id = await c.session({ Name: 'wake' });
    const r = await pending;
    const elapsed = performance.now() - started;
    expect(r.status, r.text).toBe(200);
    expect(elapsed, 'blocking query did not wake on create').toBeLessThan(10_000);
    expect(Number(r.headers.get('x-consul-index'))).toBeGreaterThan(idx);
    expect(r.json<SessionJson[]>().map((s) => s.ID)).toContain(id);
  });

  test('list?index=<current>&wait=300ms times out with the same index when nothing changes', async () => {
    const idx = await currentIndex();
    const before = (await c.get('/v1/session/list')).json();
    const started = performance.now();
    const r = await c.get(`/v1/session/list?index=${idx}&wait=300ms`);
    const elapsed = performance.now() - started;
    expect(r.status, r.text).toBe(200);
    expect(elapsed, 'returned before the wait elapsed although nothing changed').toBeGreaterThanOrEqual(290);
    expect(Number(r.headers.get('x-consul-index'))).toBe(idx);
    expect(r.json()).toEqual(before);
  });

  test('info?index=<current> wakes when that session is destroyed', async () => {
    const id = await c.session();
    const r0 = await c.get(`/v1/session/info/${id}`);
    const idx = Number(r0.headers.get('x-consul-index'));
    const pending = c.get(`/v1/session/info/${id}?index=${idx}&wait=20s`);
    await sleep(100);
    await c.put(`/v1/session/destroy/${id}`);
    const r = await pending;
    expect(r.status).toBe(200);
    expect(Number(r.headers.get('x-consul-index'))).toBeGreaterThan(idx);
    expect(r.json()).toEqual([]);
  });
});
