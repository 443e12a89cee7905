// Goal: lock-delay (registry.md) and blocking queries on sessions (consul-compat.md §1.1) — over HTTP.
import { afterAll, beforeAll, describe, expect, test } from 'vitest';
import { client, withAgent, sleep, startAgent, type Agent, type HttpResult, expectError } from '../support/in-process.ts';
import { type Client, type SessionJson, uniq, entry, acquire, mustAcquire, registerNode, setCheck } from '../support/sessions.ts';

// An agent with a TTL minimum of 1s, for the timing rows.
let tc: Client;

withAgent((a) => { tc = client(a); }, { args: ['--session-ttl-min', '1s'] });

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
