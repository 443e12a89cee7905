// Goal: HTTP checks aimed at the agent's own API do not take the requests in flight of the address they come
// from. With limits.http_max_conns_per_client 5, six checks of a started agent hold a blocking query each on
// the agent's own port, from 127.0.0.1 (a long wait, a Timeout of an hour); a local client is still served,
// and still has its own 5 requests in flight at most: its 6th is answered 429.
import { writeFileSync } from 'node:fs';
import http from 'node:http';
import { join } from 'node:path';
import { afterAll, beforeAll, expect, test } from 'vitest';
import { call, sleep, startAgent, tempDataDir, type Agent } from '../support/agent.ts';

let agent: Agent;

beforeAll(async () => {
  const config = join(tempDataDir(), 'agent.json');
  writeFileSync(config, JSON.stringify({ limits: { http_max_conns_per_client: 5 } }));
  agent = await startAgent({ args: ['--config-file', config] });
});

afterAll(async () => {
  await agent?.stop();
  agent?.cleanup();
});

/** A request left in flight until `stop`: a blocking read of `anchor` waiting for an index far ahead. */
function blocking(stop: AbortSignal): Promise<number> {
  return new Promise((resolve) => {
    const req = http.get(`${agent.url}/v1/kv/anchor?index=999999999&wait=30s`, { agent: false, signal: stop }, (res) => {
      res.resume();
      resolve(res.statusCode ?? 0);
    });
    req.on('error', () => resolve(0));
  });
}

test('the agent\'s own probes of its API leave a local client its requests, and only its own', async () => {
  expect((await call(agent.url, 'PUT', '/v1/kv/anchor', 'x')).status).toBe(200);
  const url = `${agent.url}/v1/kv/anchor?index=999999999&wait=10m`;
  for (let i = 0; i < 6; i++) {
    const r = await call(agent.url, 'PUT', '/v1/agent/check/register', { ID: `self-${i}`, Name: 'self', HTTP: url, Interval: '1s', Timeout: '1h' });
    expect(r.status, r.text).toBe(200);
  }
  // All six probes hold their request (the first comes within an interval).
  let running = 0;
  for (let deadline = Date.now() + 5000; Date.now() < deadline && running < 6; await sleep(200)) {
    const r = await call(agent.url, 'GET', '/v1/agent/metrics?format=prometheus');
    running = r.status === 200 ? Number(/^roster_check_probes_running (\S+)$/m.exec(r.text)?.[1]) : 0;
  }
  expect(running).toBe(6);
  for (let i = 0; i < 3; i++) expect((await call(agent.url, 'GET', '/v1/status/leader')).status).toBe(200);
  // The client's own cap is unchanged: five of its requests in flight, the sixth refused.
  const stop = new AbortController();
  try {
    const held = Array.from({ length: 5 }, () => blocking(stop.signal));
    await sleep(300);
    const sixth = await call(agent.url, 'GET', '/v1/status/leader');
    expect(sixth.status, sixth.text).toBe(429);
    expect(sixth.text).toContain('too many requests in flight from 127.0.0.1: at most 5');
    stop.abort();
    await Promise.all(held);
  } finally {
    stop.abort();
  }
  for (let i = 0; i < 6; i++) expect((await call(agent.url, 'PUT', `/v1/agent/check/deregister/self-${i}`)).status).toBe(200);
}, 30_000);
