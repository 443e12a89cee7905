// Goal: the agent's own /v1/agent/checks never goes back to an older probe output. With check_update_interval
// holding output-only changes back, a started agent shows each check's latest output; when a status change (or
// the held-back output's own write) is being written, it keeps showing the output held back until that write
// has applied, rather than the older output the log last had. Read as fast as the agent answers, against a
// target whose every answer is numbered and whose every fourth answer is a 500.
import { createServer } from 'node:http';
import type { AddressInfo } from 'node:net';
import { afterAll, beforeAll, describe, expect, test } from 'vitest';
import { client } from '../support/agent.ts';
import { useConfigAgent } from '../support/config-agent.ts';

describe('the latest output on /v1/agent/checks', () => {
  const a = useConfigAgent('roster-latest-output-', { check_update_interval: '2s' });
  let n = 0;
  const target = createServer((_req, res) => {
    n++;
    res.writeHead(n % 4 === 0 ? 500 : 200).end(`#${n}`);
  });
  beforeAll(() => new Promise<void>((done) => target.listen(0, '127.0.0.1', done)));
  afterAll(() => new Promise<void>((done) => target.close(() => done())));

  test('an older output is never shown after a newer one, across status changes and held-back writes', async () => {
    const c = client(a.agent);
    const url = `http://127.0.0.1:${(target.address() as AddressInfo).port}/`;
    expect((await c.put('/v1/agent/check/register', { ID: 'numbered', Name: 'numbered', HTTP: url, Interval: '1s' })).status).toBe(200);
    let newest = 0;
    let reads = 0;
    const regressions: string[] = [];
    for (const stop = Date.now() + 15_000; Date.now() < stop; reads++) {
      const check = (await c.get('/v1/agent/checks')).json<Record<string, { Status: string; Output: string }>>()['numbered'];
      const seen = Number(/#(\d+)$/.exec(check?.Output ?? '')?.[1] ?? 0);
      if (seen < newest) regressions.push(`#${seen} (${check!.Status}) after #${newest}`);
      newest = Math.max(newest, seen);
    }
    expect(n, 'probes run').toBeGreaterThanOrEqual(10);
    expect(reads).toBeGreaterThan(100);
    expect(regressions).toEqual([]);
  }, 40_000);
});
