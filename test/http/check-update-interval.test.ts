// Goal: check_update_interval on a started agent. A probe result that changes only a check's output is held
// back — the catalog (/v1/health) keeps the output last written while the agent's own /v1/agent/checks shows
// the latest — and written once its wait (half to one and a half of the interval) is over; a status change is
// written at once with its output; a reload to "0s" writes every output change as it comes.
import { createServer, type Server } from 'node:http';
import type { AddressInfo } from 'node:net';
import { afterAll, beforeAll, describe, expect, test } from 'vitest';
import { call, client, sleep } from '../support/agent.ts';
import { useConfigAgent } from '../support/config-agent.ts';
import type { CheckRecord } from '../support/health-api.ts';

/** A server whose every answer differs from the one before: `probe <n>`, with status 200 or, while failing, 503. */
function countingServer(): { server: Server; url: () => string; fail: (on: boolean) => void } {
  let n = 0;
  let failing = false;
  const server = createServer((_req, res) => {
    n++;
    res.writeHead(failing ? 503 : 200, { 'content-type': 'text/plain' });
    res.end(`probe ${n}`);
  });
  return { server, url: () => `http://127.0.0.1:${(server.address() as AddressInfo).port}/`, fail: (on) => { failing = on; } };
}

describe('check_update_interval', () => {
  const a = useConfigAgent('roster-update-interval-', { check_update_interval: '8s' });
  const target = countingServer();
  beforeAll(() => new Promise<void>((done) => target.server.listen(0, '127.0.0.1', done)));
  afterAll(() => new Promise<void>((done) => target.server.close(() => done())));

  const catalogCheck = async (id: string) => {
    const r = await client(a.agent).get('/v1/health/checks/counted');
    expect(r.status, r.text).toBe(200);
    return r.json<CheckRecord[]>().find((c) => c.CheckID === id)!;
  };
  const agentCheck = async (id: string) => (await client(a.agent).get('/v1/agent/checks')).json<Record<string, CheckRecord>>()[id]!;
  async function until(read: () => Promise<CheckRecord>, ok: (c: CheckRecord) => boolean, timeoutMs: number): Promise<CheckRecord> {
    const deadline = Date.now() + timeoutMs;
    for (;;) {
      const c = await read();
      if (ok(c)) return c;
      if (Date.now() > deadline) throw new Error(`not reached in ${timeoutMs} ms: ${JSON.stringify(c)}`);
      await sleep(100);
    }
  }

  test('output-only changes wait, the agent shows them meanwhile; status changes are written at once; "0s" after a reload writes each', async () => {
    const c = client(a.agent);
    expect((await c.put('/v1/agent/service/register', {
      Name: 'counted', ID: 'counted-1', Check: { CheckID: 'counted-http', Name: 'counted', HTTP: target.url(), Interval: '1s' },
    })).status).toBe(200);
    // Critical → passing is a status change: written at once.
    const first = await until(() => catalogCheck('counted-http'), (k) => k.Status === 'passing', 10_000);
    expect(first.Output).toMatch(/probe \d+$/);

    // For the next 3 s (less than the shortest wait, 4 s) the catalog keeps that write while probes go on.
    const seenByAgent = new Set<string>();
    const deadline = Date.now() + 3_000;
    while (Date.now() < deadline) {
      const [inCatalog, inAgent] = await Promise.all([catalogCheck('counted-http'), agentCheck('counted-http')]);
      expect([inCatalog.Status, inCatalog.Output, inCatalog.ModifyIndex]).toEqual(['passing', first.Output, first.ModifyIndex]);
      expect(inAgent.Status).toBe('passing');
      if (inAgent.Output !== first.Output) seenByAgent.add(inAgent.Output);
      await sleep(200);
    }
    expect(seenByAgent.size, 'the agent shows the latest probe output').toBeGreaterThanOrEqual(1);

    // The held-back output is written when its wait is over (at most 12 s after the first write).
    const later = await until(() => catalogCheck('counted-http'), (k) => k.ModifyIndex !== first.ModifyIndex, 12_000);
    expect([later.Status, later.Output === first.Output]).toEqual(['passing', false]);
    expect(Number(/probe (\d+)$/.exec(later.Output)![1])).toBeGreaterThan(Number(/probe (\d+)$/.exec(first.Output)![1]));

    // A status change is not held back, even right after a write.
    target.fail(true);
    const down = await until(() => catalogCheck('counted-http'), (k) => k.Status === 'critical', 3_500);
    expect(down.Output).toMatch(/503 Service Unavailable Output: probe \d+$/);
    target.fail(false);
    await until(() => catalogCheck('counted-http'), (k) => k.Status === 'passing', 3_500);

    // "0s" (a reload changes it): every output change is written as it comes.
    a.write({ check_update_interval: '0s' });
    expect((await call(a.agent.url, 'PUT', '/v1/agent/reload')).status).toBe(200);
    const written = new Set<number>();
    const until0 = Date.now() + 4_000;
    while (Date.now() < until0 && written.size < 3) {
      written.add((await catalogCheck('counted-http')).ModifyIndex);
      await sleep(200);
    }
    expect(written.size).toBeGreaterThanOrEqual(3);
  }, 60_000);
});
