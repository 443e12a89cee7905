// Goal: every row of registry.md's Session state table and the effect of invalidation by Behavior — over HTTP against
// a really started agent (a row restarts it over its data dir).
import { rmSync } from 'node:fs';
import { describe, expect, test } from 'vitest';
import { client, withAgent, sleep, startAgent, tempDataDir, type Agent, expectError } from '../support/agent.ts';
import { type Client, type SessionJson, type KvEntry, ttlMs, expiryBoundMs, uniq, b64, info, entry, acquire, mustAcquire, registerNode, setCheck, pollUntil, expectTtlExpiry } from '../support/sessions.ts';

// An agent with a TTL minimum of 1s, for the timing rows.
let tc: Client;

withAgent((a) => { tc = client(a); }, { args: ['--session-ttl-min', '1s'] });

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
