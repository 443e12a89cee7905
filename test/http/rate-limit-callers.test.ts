// Goal: the rate limiter holds only the callers of its current period. Requests from 40 loopback addresses
// (each its own caller without authentication) show 40 callers in roster_rate_limit_callers; once their
// windows have ended, one more request leaves only its own caller: a caller that does not come back is not
// kept until the limiter's cap of 100,000.
import { request } from 'node:http';
import { afterAll, beforeAll, expect, test } from 'vitest';
import { sleep, startAgent, type Agent } from '../support/agent.ts';
import { writeConfigFile } from '../support/stream-load.ts';

let agent: Agent;

beforeAll(async () => {
  agent = await startAgent({ args: ['--config-file', writeConfigFile({ rate_limit: { requests: 100, period: '4s' } })] });
});
afterAll(async () => { await agent?.stop(); agent?.cleanup(); });

/** A GET from `localAddress`; resolves with the status and body. */
function get(path: string, localAddress: string): Promise<{ status: number; body: string }> {
  return new Promise((resolve, reject) => {
    const req = request(`${agent.url}${path}`, { localAddress, agent: false }, (res) => {
      let body = '';
      res.setEncoding('utf8');
      res.on('data', (d: string) => { body += d; });
      res.on('end', () => resolve({ status: res.statusCode ?? 0, body }));
    });
    req.on('error', reject);
    req.end();
  });
}

async function callers(): Promise<number> {
  const r = await get('/v1/agent/metrics?format=prometheus', '127.0.0.1');
  expect(r.status, r.body).toBe(200);
  return Number(/^roster_rate_limit_callers (\d+)$/m.exec(r.body)![1]);
}

test('callers whose window has ended are forgotten when a new window starts', async () => {
  const addresses = Array.from({ length: 40 }, (_, i) => `127.0.0.${i + 10}`);
  for (const address of addresses) expect((await get('/v1/status/leader', address)).status).toBe(200);
  // The scrape is a caller too (127.0.0.1), in the same period.
  expect(await callers()).toBe(41);
  await sleep(4_300);
  expect(await callers()).toBe(1);
}, 30_000);
