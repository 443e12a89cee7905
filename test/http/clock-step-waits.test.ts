// Goal: what an agent waits for, and the windows it counts in, are measured on the monotonic clock, so a
// wall clock stepped while they run (an NTP step; libfaketime here, which leaves the monotonic clock alone)
// neither stretches them by the step nor cuts them. Set back an hour: a blocking read, a `?hash` wait on an
// agent service and a queued acquire answer after their `wait`, not after the hour; stream bookmarks keep
// coming; a rate-limit window still ends after its period, and Retry-After and X-Rate-Limit-Reset count
// its seconds left. Set forward: a queued acquire on a key under a lock delay gets the lock once the delay
// is over, where the estimate of the log's time saw it over at once and, refused, the waiter parked for its
// whole wait. Started an hour ahead and then corrected, the agent takes signed requests stamped with the
// right time, where its memory of nonces seemed to begin an hour in the future.
import { afterAll, beforeAll, describe, expect, test } from 'vitest';
import { signRequest } from '../../src/auth/signature.ts';
import { call, client, sleep, type HttpResult } from '../support/agent.ts';
import { startSteppedAgent, type SteppedAgent } from '../support/stepped-agent.ts';
import { Stream, subscribe } from '../support/stream.ts';

/** Bound of every request that waits: well past its `wait`, far short of the step. */
const answeredWithinMs = 10_000;

/** A request that fails the test rather than hang for the length of a step. */
function bounded(on: SteppedAgent, method: string, path: string, body?: unknown): Promise<HttpResult & { tookMs: number }> {
  const started = Date.now();
  return call(on.agent.url, method, path, body, {}, AbortSignal.timeout(answeredWithinMs))
    .then((r) => ({ ...r, tookMs: Date.now() - started }));
}

describe('an agent whose wall clock is stepped while requests wait', () => {
  let stepped: SteppedAgent;
  /** The agent's offset from the true time, in hours: each test steps from where the last one left it. */
  let offsetH = 0;
  const stepBy = (hours: number) => {
    offsetH += hours;
    stepped.step(`${offsetH >= 0 ? '+' : ''}${offsetH}h`);
  };

  beforeAll(async () => {
    stepped = await startSteppedAgent({ stream_bookmark_interval: '1s' });
  }, 60_000);

  afterAll(async () => {
    await stepped?.stop();
  });

  test('set back an hour: a blocking read, a ?hash wait and a queued acquire answer after their wait, not the hour', async () => {
    const c = client(stepped.agent);
    expect((await c.put('/v1/kv/waits/read', 'v')).status).toBe(200);
    const index = (await c.get('/v1/kv/waits/read')).headers.get('x-consul-index');
    expect((await c.put('/v1/agent/service/register', { ID: 'waited', Name: 'waited' })).status).toBe(200);
    const hash = (await c.get('/v1/agent/service/waited')).json().ContentHash;
    const holder = await c.session({ LockDelay: '0s' });
    const waiter = await c.session({ LockDelay: '0s' });
    expect((await c.put(`/v1/kv/waits/lock?acquire=${holder}`, 'held')).text).toBe('true');
    const read = bounded(stepped, 'GET', `/v1/kv/waits/read?index=${index}&wait=2s`);
    const service = bounded(stepped, 'GET', `/v1/agent/service/waited?hash=${hash}&wait=2s`);
    const acquire = bounded(stepped, 'PUT', `/v1/kv/waits/lock?acquire=${waiter}&wait=2s`, 'mine');
    await sleep(300);
    stepBy(-1);
    const [r, s, a] = await Promise.all([read, service, acquire]);
    expect([r.status, r.headers.get('x-consul-index')]).toEqual([200, index]);
    expect([s.status, s.json().ContentHash]).toEqual([200, hash]);
    expect([a.status, a.json().details.reason]).toEqual([409, 'held-by-other']);
    for (const answered of [r, s, a]) expect(answered.tookMs).toBeGreaterThanOrEqual(1_900);
  }, 30_000);

  test('set forward an hour: a queued acquire on a key under a lock delay gets the lock once the delay is over', async () => {
    const c = client(stepped.agent);
    stepBy(+1);
    await sleep(200);
    const holder = await c.session({ LockDelay: '3s' });
    expect((await c.put(`/v1/kv/waits/delayed?acquire=${holder}`, 'held')).text).toBe('true');
    expect((await c.put(`/v1/session/destroy/${holder}`)).status).toBe(200);
    const next = await c.session({ LockDelay: '0s' });
    const r = await bounded(stepped, 'PUT', `/v1/kv/waits/delayed?acquire=${next}&wait=8s`, 'mine');
    expect([r.status, r.text]).toEqual([200, 'true']);
    expect(r.tookMs).toBeLessThan(7_000); // the delay (2 to 6 s while entry time catches up), not the whole wait
  }, 30_000);

  test('set back an hour: an idle stream subscriber still gets a bookmark every interval', async () => {
    const s = await Stream.open(stepped.agent);
    try {
      await subscribe(s, { id: 'idle', topic: 'kv_prefix', key: 'waits/none/' });
      await s.next(s.mark, (m) => m.type === 'bookmark', 'a bookmark before the step', 5_000);
      stepBy(-2);
      const from = s.mark;
      await sleep(3_500);
      expect(s.since(from).filter((m) => m.type === 'bookmark').length).toBeGreaterThanOrEqual(2);
    } finally {
      s.end();
    }
  }, 30_000);
});

describe('a rate-limited agent whose wall clock is set back an hour', () => {
  let stepped: SteppedAgent;

  beforeAll(async () => {
    stepped = await startSteppedAgent({ rate_limit: { requests: 5, period: '1s' } });
  }, 60_000);

  afterAll(async () => {
    await stepped?.stop();
  });

  test('the window still ends after its period, and Retry-After and X-Rate-Limit-Reset count its seconds left', async () => {
    const c = client(stepped.agent);
    expect((await c.get('/v1/kv/limited')).status).toBe(404);
    stepped.step('-1h');
    let limited: HttpResult | undefined;
    for (let i = 0; i < 20 && limited === undefined; i++) {
      const r = await c.get('/v1/kv/limited');
      expect(Number(r.headers.get('x-rate-limit-reset'))).toBeLessThanOrEqual(1);
      if (r.status === 429) limited = r;
    }
    expect(limited).toBeDefined();
    expect(Number(limited!.headers.get('retry-after'))).toBe(1);
    await sleep(1_100);
    const after = await c.get('/v1/kv/limited');
    expect(after.status).toBe(404);
    expect(after.headers.get('x-rate-limit-remaining')).toBe('4');
  }, 30_000);
});

describe('an agent started with its clock an hour ahead, then corrected', () => {
  const appSecret = 'app-secret-1';
  let stepped: SteppedAgent;

  beforeAll(async () => {
    const auth = { jwt_secret: 'a-test-secret-that-is-long-enough-0123456789', app_keys: { app1: { secret: appSecret, rules: [{ resource: 'key', prefix: '', access: 'write' }] } } };
    stepped = await startSteppedAgent({ auth }, '+1h');
  }, 60_000);

  afterAll(async () => {
    await stepped?.stop();
  });

  test('takes a request signed at the right time: its memory of nonces began when it started, not an hour from now', async () => {
    stepped.step('+0');
    const path = '/v1/kv/signed';
    const qs = signRequest({ method: 'PUT', path, params: [], body: Buffer.from('v'), appKey: 'app1', secret: appSecret, nonce: `n-${Date.now()}`, signMethod: 'HMACSHA256' });
    const r = await call(stepped.agent.url, 'PUT', `${path}?${qs}`, 'v');
    expect([r.status, r.text]).toEqual([200, 'true']);
    // The same request again is a replay; one stamped before the agent started is older than its memory.
    expect((await call(stepped.agent.url, 'PUT', `${path}?${qs}`, 'v')).json().code).toBe(1023);
    const before = signRequest({
      method: 'PUT', path, params: [], body: Buffer.from('v'), appKey: 'app1', secret: appSecret, nonce: `early-${Date.now()}`,
      signMethod: 'HMACSHA256', timestampSeconds: Math.floor(Date.now() / 1000) - 120,
    });
    expect((await call(stepped.agent.url, 'PUT', `${path}?${before}`, 'v')).json().message).toMatch(/older than the agent's memory of nonces/);
  }, 30_000);
});
