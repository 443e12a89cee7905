// Goal: rate limits and overload through a started agent — rate-limit headers on every answer, the
// 101st request of a 100-per-period window refused with 429 and Retry-After, client addresses counted
// apart (without authentication a token string names no caller),
// and writes answered 503 with Retry-After when too many are in flight.
import { writeFileSync } from 'node:fs';
import { get, type IncomingHttpHeaders } from 'node:http';
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, test } from 'vitest';
import { call, client, expectError, startAgent, tempDataDir, type Agent } from '../support/agent.ts';

let agent: Agent;
beforeAll(async () => {
  const file = join(tempDataDir(), 'agent.json');
  writeFileSync(file, JSON.stringify({ rate_limit: { requests: 100, period: '60s' } }));
  agent = await startAgent({ args: ['--config-file', file] });
});
afterAll(async () => { await agent?.stop(); agent?.cleanup(); });

/** A GET from another loopback source address: another client as the agent sees it. */
function getFrom(localAddress: string, path: string): Promise<{ status: number; headers: IncomingHttpHeaders }> {
  const url = new URL(agent.url);
  return new Promise((resolve, reject) => {
    get({ host: url.hostname, port: url.port, path, localAddress }, (res) => {
      res.resume();
      res.on('end', () => resolve({ status: res.statusCode ?? 0, headers: res.headers }));
    }).on('error', reject);
  });
}

describe('rate limit', () => {
  test('100 per period: headers count down, the 101st gets 429 with Retry-After; another token is not another caller, another address is', async () => {
    const me = { 'x-consul-token': 'caller-a' };
    for (let i = 1; i <= 100; i++) {
      const r = await call(agent.url, 'GET', '/v1/status/leader', undefined, me);
      expect(r.status).toBe(200);
      expect(r.headers.get('x-rate-limit-limit')).toBe('100');
      expect(r.headers.get('x-rate-limit-remaining')).toBe(String(100 - i));
      const reset = Number(r.headers.get('x-rate-limit-reset'));
      expect(reset).toBeGreaterThan(0);
      expect(reset).toBeLessThanOrEqual(60);
    }
    const refused = await call(agent.url, 'GET', '/v1/status/leader', undefined, me);
    expectError(refused, 429, 1022);
    expect(Number(refused.headers.get('retry-after'))).toBeGreaterThan(0);
    expect(refused.headers.get('x-rate-limit-remaining')).toBe('0');
    // Without authentication a token proves nothing: another one from the same address is the same caller.
    expectError(await call(agent.url, 'GET', '/v1/status/leader', undefined, { 'x-consul-token': 'caller-b' }), 429, 1022);
    const other = await getFrom('127.0.0.2', '/v1/status/leader');
    expect(other.status).toBe(200);
    expect(other.headers['x-rate-limit-remaining']).toBe('99');
  });
});

describe('overload', () => {
  test('writes beyond the in-flight limit answer 503 with Retry-After; reads still answer', async () => {
    const file = join(tempDataDir(), 'agent.json');
    writeFileSync(file, JSON.stringify({ writes_in_flight_max: 1 }));
    const small = await startAgent({ args: ['--config-file', file] });
    try {
      const c = client(small);
      const results = await Promise.all(Array.from({ length: 200 }, (_, i) => c.put(`/v1/kv/ov/${i}`, 'x')));
      const busy = results.filter((r) => r.status === 503);
      expect(results.every((r) => r.status === 200 || r.status === 503)).toBe(true);
      expect(busy.length).toBeGreaterThan(0);
      expectError(busy[0]!, 503, 1016);
      expect(busy[0]!.headers.get('retry-after')).toBe('1');
      expect((await c.get('/v1/status/leader')).status).toBe(200);
    } finally {
      await small.stop();
      small.cleanup();
    }
  });
});
