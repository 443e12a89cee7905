// Goal: queued acquisition (`PUT /v1/kv/<key>?acquire=<session>&wait=<d>`) through a started agent:
// a waiter gets the lock when the holder lets go, waiters are served in arrival order, the wait runs
// out into an ordinary refusal, lock delays are waited out, a waiter whose session ends (wherever it
// is in the queue) or whose client leaves drops out of the queue at once, and both dialects answer as
// for a plain acquire.
import { afterAll, beforeAll, describe, expect, test } from 'vitest';
import { call, client, expectError, sleep, startAgent, type Agent } from '../support/in-process.ts';

let seed: Agent;
let consul: Agent;
let seq = 0;
const fresh = () => `queue/k${++seq}`;

beforeAll(async () => {
  [seed, consul] = await Promise.all([startAgent(), startAgent({ args: ['--dialect', 'consul'] })]);
});
afterAll(async () => {
  for (const a of [seed, consul]) { await a?.stop(); a?.cleanup(); }
});

async function session(agent: Agent, body: Record<string, unknown> = { LockDelay: '0s' }): Promise<string> {
  return client(agent).session(body);
}

const acquire = (agent: Agent, key: string, sid: string, wait?: string, signal?: AbortSignal) =>
  fetch(`${agent.url}/v1/kv/${key}?acquire=${sid}${wait === undefined ? '' : `&wait=${wait}`}`, { method: 'PUT', body: sid, signal });

describe('queued acquire (seed dialect)', () => {
  test('a waiter gets the lock as soon as the holder releases it; LockIndex goes up by one', async () => {
    const key = fresh();
    const [holder, waiter] = [await session(seed), await session(seed)];
    expect(await (await acquire(seed, key, holder)).text()).toBe('true');
    const started = Date.now();
    const waiting = acquire(seed, key, waiter, '10s');
    await sleep(200);
    expect((await call(seed.url, 'PUT', `/v1/kv/${key}?release=${holder}`, 'x')).text).toBe('true');
    const got = await waiting;
    expect([got.status, await got.text()]).toEqual([200, 'true']);
    expect(Date.now() - started).toBeLessThan(5_000);
    const entry = (await call(seed.url, 'GET', `/v1/kv/${key}`)).json()[0];
    expect(entry).toMatchObject({ Session: waiter, LockIndex: 2 });
  });

  test('waiters are served in the order they arrived', async () => {
    const key = fresh();
    const holder = await session(seed);
    expect(await (await acquire(seed, key, holder)).text()).toBe('true');
    const order: string[] = [];
    const waiters = await Promise.all(['a', 'b', 'c', 'd'].map(async (name) => ({ name, sid: await session(seed) })));
    const done: Promise<void>[] = [];
    for (const w of waiters) {
      done.push(acquire(seed, key, w.sid, '20s').then(async (r) => {
        expect(await r.text()).toBe('true');
        order.push(w.name);
        await sleep(20);
        expect((await call(seed.url, 'PUT', `/v1/kv/${key}?release=${w.sid}`, 'x')).text).toBe('true');
      }));
      await sleep(250); // arrival order, with room for a loaded machine
    }
    expect((await call(seed.url, 'PUT', `/v1/kv/${key}?release=${holder}`, 'x')).text).toBe('true');
    await Promise.all(done);
    expect(order).toEqual(['a', 'b', 'c', 'd']);
  });

  test('when the wait runs out the answer is the ordinary refusal (409 code 1025); nothing changes', async () => {
    const key = fresh();
    const [holder, waiter] = [await session(seed), await session(seed)];
    await acquire(seed, key, holder);
    const started = Date.now();
    const r = await acquire(seed, key, waiter, '300ms');
    const took = Date.now() - started;
    expect(took).toBeGreaterThanOrEqual(250);
    expect(took).toBeLessThan(3_000);
    expectError({ status: r.status, headers: r.headers, text: await r.text(), body: Buffer.alloc(0), json() { return JSON.parse(this.text); } }, 409, 1025);
    expect((await call(seed.url, 'GET', `/v1/kv/${key}`)).json()[0]).toMatchObject({ Session: holder, LockIndex: 1 });
  });

  test('an invalidated holder\'s lock delay is waited out, then the waiter gets the lock', async () => {
    const key = fresh();
    const holder = await session(seed, { LockDelay: '1s' });
    const waiter = await session(seed);
    await acquire(seed, key, holder);
    const waiting = acquire(seed, key, waiter, '10s');
    await sleep(100);
    const destroyedAt = Date.now();
    await call(seed.url, 'PUT', `/v1/session/destroy/${holder}`);
    const got = await waiting;
    expect(await got.text()).toBe('true');
    expect(Date.now() - destroyedAt).toBeGreaterThanOrEqual(900);
  });

  test('a waiter whose own session is destroyed gets 400 code 1007 invalid session at once, the lock still held', async () => {
    const key = fresh();
    const [holder, waiter] = [await session(seed), await session(seed)];
    await acquire(seed, key, holder);
    const waiting = acquire(seed, key, waiter, '30s');
    await sleep(200);
    const destroyedAt = Date.now();
    await call(seed.url, 'PUT', `/v1/session/destroy/${waiter}`);
    // The key does not change: the entry that ends the session is what stops the wait.
    const r = await waiting;
    expect(Date.now() - destroyedAt).toBeLessThan(5_000);
    expect(r.status).toBe(400);
    expect(((await r.json()) as { code: number }).code).toBe(1007);
    expect((await call(seed.url, 'GET', `/v1/lock/queue/${key}`)).json().Waiters).toEqual([]);
    expect((await call(seed.url, 'GET', `/v1/kv/${key}`)).json()[0]).toMatchObject({ Session: holder, LockIndex: 1 });
  });

  test('waiters behind the head whose sessions end leave at once; the others keep their places', async () => {
    const key = fresh();
    const [holder, head, middle, last] = [await session(seed), await session(seed), await session(seed), await session(seed)];
    await acquire(seed, key, holder);
    const answers = new Map<string, Promise<Response>>();
    for (const [name, sid] of [['head', head], ['middle', middle], ['last', last]] as const) {
      answers.set(name, acquire(seed, key, sid, '30s'));
      await sleep(150);
    }
    const destroyedAt = Date.now();
    await call(seed.url, 'PUT', `/v1/session/destroy/${middle}`);
    const gone = await answers.get('middle')!;
    expect(Date.now() - destroyedAt).toBeLessThan(5_000);
    expect([gone.status, ((await gone.json()) as { code: number }).code]).toEqual([400, 1007]);
    const queue = (await call(seed.url, 'GET', `/v1/lock/queue/${key}`)).json() as { Waiters: { Session: string }[] };
    expect(queue.Waiters.map((w) => w.Session)).toEqual([head, last]);
    await call(seed.url, 'PUT', `/v1/session/destroy/${head}`);
    expect((await answers.get('head')!).status).toBe(400);
    expect((await call(seed.url, 'PUT', `/v1/kv/${key}?release=${holder}`, 'x')).text).toBe('true');
    expect(await (await answers.get('last')!).text()).toBe('true');
    expect((await call(seed.url, 'GET', `/v1/kv/${key}`)).json()[0]).toMatchObject({ Session: last, LockIndex: 2 });
  });

  test('a waiter whose client went away leaves the queue: the next one is served at once', async () => {
    const key = fresh();
    const [holder, gone, next] = [await session(seed), await session(seed), await session(seed)];
    await acquire(seed, key, holder);
    const cancel = new AbortController();
    const abandoned = acquire(seed, key, gone, '30s', cancel.signal).catch(() => undefined);
    await sleep(100);
    const waiting = acquire(seed, key, next, '10s');
    await sleep(100);
    cancel.abort();
    await abandoned;
    await sleep(100);
    await call(seed.url, 'PUT', `/v1/kv/${key}?release=${holder}`, 'x');
    expect(await (await waiting).text()).toBe('true');
    expect((await call(seed.url, 'GET', `/v1/kv/${key}`)).json()[0].Session).toBe(next);
  });

  test('a malformed wait is 400 code 1009; a free lock is taken at once with or without wait', async () => {
    const key = fresh();
    const sid = await session(seed);
    const bad = await acquire(seed, key, sid, 'soon');
    expect(bad.status).toBe(400);
    expect(((await bad.json()) as { code: number }).code).toBe(1009);
    expect(await (await acquire(seed, key, sid, '10s')).text()).toBe('true');
  });
});

describe('queued acquire (consul dialect)', () => {
  test('the wait runs out into false, as a plain refused acquire answers', async () => {
    const key = fresh();
    const holder = await session(consul);
    const waiter = await session(consul);
    await acquire(consul, key, holder);
    const r = await acquire(consul, key, waiter, '200ms');
    expect([r.status, await r.text()]).toEqual([200, 'false']);
  });

  test('a waiter whose session a failing check invalidates answers at once, as a plain acquire with that session does', async () => {
    const key = fresh();
    const check = `queue-check-${seq}`;
    await call(consul.url, 'PUT', '/v1/agent/check/register', JSON.stringify({ Name: check, TTL: '60s' }));
    await call(consul.url, 'PUT', `/v1/agent/check/pass/${check}`);
    const holder = await session(consul);
    const waiter = await session(consul, { LockDelay: '0s', Checks: [check] });
    await acquire(consul, key, holder);
    const waiting = acquire(consul, key, waiter, '30s');
    await sleep(200);
    const failedAt = Date.now();
    await call(consul.url, 'PUT', `/v1/agent/check/fail/${check}`);
    const r = await waiting;
    expect(Date.now() - failedAt).toBeLessThan(5_000);
    const plain = await acquire(consul, key, waiter);
    expect(plain.status).toBeGreaterThanOrEqual(400);
    expect([r.status, await r.text()]).toEqual([plain.status, await plain.text()]);
  });
});
