// Goal: every duration the API takes is refused above its documented maximum (400 naming the field and the
// maximum, in both dialects), and an accepted duration longer than Node's 32-bit timer limit (about 24.8 days)
// is waited for in full: a check TTL of 720h does not lapse at once, a probe Interval of 100000h does not probe
// in a loop. Driven through started agents.
import { writeFileSync } from 'node:fs';
import http from 'node:http';
import net, { type AddressInfo } from 'node:net';
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, test } from 'vitest';
import { call, client, expectError, sleep, startAgent, tempDataDir, withAgent, type Agent } from '../support/agent.ts';
import { parseAnswers } from '../support/raw-http.ts';

const goMax = '2562047h47m16.854775807s';

describe('seed dialect', () => {
  let agent: Agent;
  withAgent((a) => { agent = a; });

  test('a check TTL of 720h keeps the status it was given', async () => {
    const c = client(agent);
    const r = await c.put('/v1/agent/check/register', { ID: 'long-ttl', Name: 'long ttl', TTL: '720h', Status: 'passing' });
    expect(r.status).toBe(200);
    const passed = await c.put('/v1/agent/check/pass/long-ttl');
    expect(passed.status).toBe(200);
    // A TTL beyond the timer limit used to lapse after 1 ms; give such a lapse ample time to show.
    await sleep(500);
    const checks = (await c.get('/v1/agent/checks')).json<Record<string, { Status: string }>>();
    expect(checks['long-ttl']?.Status).toBe('passing');
  });

  test('an HTTP probe with an Interval of 100000h is not run in a loop', async () => {
    let hits = 0;
    const server = http.createServer((_req, res) => { hits++; res.end('ok'); });
    await new Promise<void>((r) => server.listen(0, '127.0.0.1', r));
    try {
      const url = `http://127.0.0.1:${(server.address() as AddressInfo).port}/`;
      const r = await client(agent).put('/v1/agent/check/register', { ID: 'long-interval', Name: 'long interval', HTTP: url, Interval: '100000h' });
      expect(r.status).toBe(200);
      await sleep(1000);
      // The first probe comes after a random part of the interval (at most one here); an overflowed timer probed hundreds of times a second.
      expect(hits).toBeLessThanOrEqual(1);
    } finally {
      await client(agent).put('/v1/agent/check/deregister/long-interval');
      server.close();
    }
  });

  test.each([
    ['Interval', { HTTP: 'http://127.0.0.1:1/', Interval: '1000000000h' }],
    ['TTL', { TTL: '99999999999h' }],
    ['Timeout', { TCP: '127.0.0.1:1', Interval: '10s', Timeout: '3000000h' }],
    ['DeregisterCriticalServiceAfter', { TTL: '10s', DeregisterCriticalServiceAfter: '99999999999h' }],
  ])('a check %s beyond the maximum duration is refused 400 naming the field and the maximum', async (fieldName, extra) => {
    const r = await client(agent).put('/v1/agent/check/register', { ID: `over-${fieldName}`, Name: 'over', ...extra });
    const body = expectError(r, 400, 1009);
    expect(body.message).toContain(fieldName);
    expect(body.message).toContain(goMax);
    expect(body.details[fieldName]).toContain(`Range:must be at most ${goMax}`);
    const checks = (await client(agent).get('/v1/agent/checks')).json<Record<string, unknown>>();
    expect(checks[`over-${fieldName}`]).toBeUndefined();
  });

  test('Go\'s largest duration is taken, and one nanosecond more (however written) refused naming the maximum', async () => {
    const c = client(agent);
    expect((await c.put('/v1/agent/check/register', { ID: 'max-ttl', Name: 'max', TTL: goMax })).status).toBe(200);
    expect((await c.get('/v1/agent/checks')).json<Record<string, unknown>>()).toHaveProperty('max-ttl');
    // 16.8547759s is 93 ns past the maximum, and was taken when the text was read through a float.
    for (const over of ['2562047h47m16.854775808s', '2562047h47m16.8547759s', '9223372036854775808ns', '2562047h47m17s']) {
      const r = await c.put('/v1/agent/check/register', { ID: 'over-max', Name: 'over', TTL: over });
      expect(expectError(r, 400, 1009).details.TTL, over).toContain(`Range:must be at most ${goMax}`);
    }
    expect((await c.get('/v1/agent/checks')).json<Record<string, unknown>>()).not.toHaveProperty('over-max');
  });

  test('a duration given as nanoseconds beyond the maximum is refused too', async () => {
    const r = await client(agent).put('/v1/agent/check/register', { ID: 'over-ns', Name: 'over', TTL: 1e30 });
    expect(expectError(r, 400, 1009).details.TTL).toContain(`Range:must be at most ${goMax}`);
  });

  test('a session TTL above 24h is refused, as Consul caps it', async () => {
    for (const ttl of ['25h', '720h', '1000000000h']) {
      const r = await client(agent).put('/v1/session/create', { TTL: ttl });
      expect(expectError(r, 400, 1009).details.TTL).toEqual(['Range:must be between 10s and 24h']);
    }
    expect((await client(agent).put('/v1/session/create', { TTL: '24h' })).status).toBe(200);
  });

  test('a blocking wait beyond the maximum duration is refused', async () => {
    const r = await client(agent).get('/v1/kv/some/key?index=1&wait=1000000000h');
    expect(expectError(r, 400, 1009).message).toContain(goMax);
  });
});

describe('consul dialect', () => {
  let agent: Agent;
  beforeAll(async () => { agent = await startAgent({ args: ['--dialect', 'consul'] }); });
  afterAll(async () => { await agent?.stop(); agent?.cleanup(); });

  test('an overlong Interval is refused 400 with Go\'s text', async () => {
    const r = await call(agent.url, 'PUT', '/v1/agent/check/register', { Name: 'over', HTTP: 'http://127.0.0.1:1/', Interval: '1000000000h' });
    expect(r.status).toBe(400);
    expect(r.text).toBe('Request decode failed: time: invalid duration "1000000000h"');
  });

  test('Go\'s largest duration is taken, one nanosecond more is Go\'s invalid duration', async () => {
    const taken = await call(agent.url, 'PUT', '/v1/agent/check/register', { ID: 'max-ttl', Name: 'max', TTL: goMax });
    expect(taken.status, taken.text).toBe(200);
    for (const over of ['2562047h47m16.854775808s', '2562047h47m16.8547759s']) {
      const r = await call(agent.url, 'PUT', '/v1/agent/check/register', { Name: 'over', TTL: over });
      expect([r.status, r.text]).toEqual([400, `Request decode failed: time: invalid duration "${over}"`]);
    }
  });

  const decodeFailed = (goError: string) => `Request decode failed: ${goError}`;
  const session = (path: string) => ['/v1/session/create', path] as const;
  const check = (path: string) => ['/v1/agent/check/register', path] as const;
  // Each duration the consul dialect reads, with a text of each kind Go's time.ParseDuration refuses, and its words.
  test.each([
    [...session('TTL'), { TTL: '20' }, 500, 'Session TTL \'20\' invalid: time: missing unit in duration "20"'],
    [...session('TTL'), { TTL: '5x' }, 500, 'Session TTL \'5x\' invalid: time: unknown unit "x" in duration "5x"'],
    [...session('TTL'), { TTL: 'soon' }, 500, 'Session TTL \'soon\' invalid: time: invalid duration "soon"'],
    [...session('TTL'), { TTL: '99999999999h' }, 500, 'Session TTL \'99999999999h\' invalid: time: invalid duration "99999999999h"'],
    [...session('LockDelay'), { LockDelay: '1500000000' }, 400, decodeFailed('time: missing unit in duration "1500000000"')],
    [...session('LockDelay'), { LockDelay: '5 s' }, 400, decodeFailed('time: unknown unit " s" in duration "5 s"')],
    [...session('LockDelay'), { LockDelay: '.s' }, 400, decodeFailed('time: invalid duration ".s"')],
    [...check('Interval'), { Name: 'd', HTTP: 'http://127.0.0.1:1/', Interval: '10' }, 400, decodeFailed('time: missing unit in duration "10"')],
    [...check('Interval'), { Name: 'd', HTTP: 'http://127.0.0.1:1/', Interval: '\u0663s' }, 400, decodeFailed('time: invalid duration "\\xd9\\xa3s"')],
    [...check('Timeout'), { Name: 'd', TCP: '127.0.0.1:1', Interval: '10s', Timeout: '3q' }, 400, decodeFailed('time: unknown unit "q" in duration "3q"')],
    [...check('TTL'), { Name: 'd', TTL: '1.5' }, 400, decodeFailed('time: missing unit in duration "1.5"')],
    [...check('DeregisterCriticalServiceAfter'), { Name: 'd', TTL: '10s', DeregisterCriticalServiceAfter: '90 m' }, 400,
      decodeFailed('time: unknown unit " m" in duration "90 m"')],
    ['/v1/agent/service/register', 'a service check\'s Interval', { Name: 'd', Check: { HTTP: 'http://127.0.0.1:1/', Interval: '10' } }, 400,
      decodeFailed('time: missing unit in duration "10"')],
  ] as const)('%s %s: Go\'s own words (%j)', async (path, _field, body, status, text) => {
    const r = await call(agent.url, 'PUT', path, body);
    expect([r.status, r.text]).toEqual([status, text]);
  });
});

describe('configuration durations', () => {
  let agent: Agent;
  beforeAll(async () => {
    const file = join(tempDataDir(), 'agent.json');
    writeFileSync(file, JSON.stringify({ limits: { request_body_timeout: '720h' } }));
    agent = await startAgent({ args: ['--config-file', file] });
  });
  afterAll(async () => { await agent?.stop(); agent?.cleanup(); });

  test('a request_body_timeout of 720h lets a body that follows its head a little later arrive', async () => {
    const { port } = new URL(agent.url);
    const socket = net.connect(Number(port), '127.0.0.1');
    let data = Buffer.alloc(0);
    socket.on('data', (d: Buffer) => { data = Buffer.concat([data, d]); });
    await new Promise((r) => socket.once('connect', r));
    socket.write('PUT /v1/kv/late/body HTTP/1.1\r\nHost: localhost\r\nContent-Length: 4\r\n\r\n');
    // An overflowed deadline fired after 1 ms and answered 400/1015 before the body came.
    await sleep(200);
    socket.write('late');
    for (let i = 0; i < 100 && parseAnswers(data, false).length === 0; i++) await sleep(50);
    socket.destroy();
    expect(parseAnswers(data, false).map((a) => a.status)).toEqual([200]);
    expect((await call(agent.url, 'GET', '/v1/kv/late/body?raw')).text).toBe('late');
  });

  test('a configuration duration beyond the maximum stops the start naming the setting and the maximum', async () => {
    const file = join(tempDataDir(), 'agent.json');
    writeFileSync(file, JSON.stringify({ limits: { request_body_timeout: '1000000000h' } }));
    await expect(startAgent({ args: ['--config-file', file], readyTimeoutMs: 15_000 })).rejects.toThrow(/request_body_timeout.*at most 2562047h47m16\.854775807s/);
  });
});
