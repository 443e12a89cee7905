// Goal: what the dashboard shows of timers and queues against a started agent, in Debian's Chromium and
// through the endpoints behind it (GET /v1/session/timer/<id>, GET /v1/lock/queue/<key>). A session's
// page counts its TTL down and starts again from the renewal after a renew (not on the stream: read
// again); a lock's page lists the acquires queued with `?acquire&wait=` in order and drops each as it
// gets the lock; a session's page names the keys it waits on and its place. Unknown sessions are 404, as
// are sessions a token may not see (no session read on their node); a token without read on the key gets 403.
import { describe, expect, test } from 'vitest';
import { TokenAuthority } from '../../src/auth/index.ts';
import { call, expectError, startAgent } from '../support/agent.ts';
import { until } from '../support/until.ts';
import { ok, openPage, screenshot, useAgentAndBrowser } from './browser.ts';

const ui = useAgentAndBrowser();

interface Timer { RenewedAt: string; RenewBy: string; InvalidateBy: string; RemainingMs: number; WaitingOn: { Key: string; Position: number }[] }

const queue = async (key: string) => (await ui.c.get(`/v1/lock/queue/${key}`)).json<{ Waiters: { Session: string; Name: string }[] }>().Waiters.map((w) => w.Name);

describe('timers and queues', () => {
  test('a session\'s TTL counts down, and starts again from a renewal', async () => {
    const sid = await ui.c.session({ Name: 'ticking', TTL: '30s' });
    const first = (await ui.c.get(`/v1/session/timer/${sid}`)).json<Timer>();
    expect(Date.parse(first.RenewBy) - Date.parse(first.RenewedAt)).toBe(30_000);
    expect(Date.parse(first.InvalidateBy) - Date.parse(first.RenewedAt)).toBe(60_000);
    expect(first.RemainingMs).toBeGreaterThan(0);
    expect(first.RemainingMs).toBeLessThanOrEqual(30_000);
    await ui.withPage(`/ui/sessions/${sid}`, async (page) => {
      await page.waitForSelector(`#session-countdown[data-renewed-at="${first.RenewedAt}"]`);
      const left = Number(await page.getAttribute('#session-countdown', 'data-left-ms'));
      expect(left).toBeGreaterThan(0);
      expect(left).toBeLessThanOrEqual(30_000);
      expect(await page.textContent('#session-countdown')).toContain('s left to renew');
      await until('a later RenewedAt', async () => {
        await ok(ui.c.put(`/v1/session/renew/${sid}`), 'renew');
        const t = (await ui.c.get(`/v1/session/timer/${sid}`)).json<Timer>();
        return t.RenewedAt !== first.RenewedAt ? t : undefined;
      });
      const renewed = (await ui.c.get(`/v1/session/timer/${sid}`)).json<Timer>();
      await page.waitForSelector(`#session-countdown[data-renewed-at="${renewed.RenewedAt}"]`);
    });
    expectError(await ui.c.get('/v1/session/timer/00000000-0000-0000-0000-000000000000'), 404, 1006);
  });

  test('queued acquires in order on the lock\'s page; each session\'s page names its place', async () => {
    const [holder, second, third] = [await ui.c.session({ Name: 'holder' }), await ui.c.session({ Name: 'second' }), await ui.c.session({ Name: 'third' })];
    expect(await ok(ui.c.put(`/v1/kv/q/job?acquire=${holder}`, 'h'), 'holder')).toBe('true');
    const page = await openPage(ui.browser, ui.agent.url, '/ui/locks/q/job');
    // Queued acquires: each blocks until it gets the lock (or 60 s pass).
    const waiting = [ui.c.put(`/v1/kv/q/job?acquire=${second}&wait=60s`, 's')];
    try {
      await until('second queued', async () => ((await queue('q/job')).length === 1 ? true : undefined));
      waiting.push(ui.c.put(`/v1/kv/q/job?acquire=${third}&wait=60s`, 't'));
      await until('third queued', async () => ((await queue('q/job')).length === 2 ? true : undefined));
      expect(await queue('q/job')).toEqual(['second', 'third']);
      await page.waitForSelector('#lock-waiters li >> nth=1');
      expect(await page.$$eval('#lock-waiters li', (ls) => ls.map((l) => l.getAttribute('data-waiter')))).toEqual([second, third]);
      await screenshot(page, 'ui-queue');
      await page.goto(`${ui.agent.url}/ui/sessions/${third}`);
      await page.waitForSelector('#session-waits li[data-waits-on="q/job"][data-position="2"]');
      expect((await ui.c.get(`/v1/session/timer/${third}`)).json<Timer>().WaitingOn).toEqual([{ Key: 'q/job', Position: 2 }]);

      expect(await ok(ui.c.put(`/v1/kv/q/job?release=${holder}`), 'release')).toBe('true');
      expect((await waiting[0]!).text).toBe('true');
      await page.waitForSelector('#session-waits li[data-waits-on="q/job"][data-position="1"]');
      await page.goto(`${ui.agent.url}/ui/locks/q/job`);
      await page.waitForSelector(`[data-holder="${second}"]`);
      await page.waitForSelector(`#lock-waiters li[data-waiter="${third}"]`);
      expect(await page.locator('#lock-waiters li').count()).toBe(1);
      expect(await ok(ui.c.put(`/v1/kv/q/job?release=${second}`), 'release second')).toBe('true');
      expect((await waiting[1]!).text).toBe('true');
      await page.waitForSelector('[data-no-waiters]');
    } finally {
      await Promise.allSettled(waiting);
      await page.close();
    }
  });

  test('with authentication on: key read for a queue, session read on its node for a timer', async () => {
    const secret = 'a-dashboard-queues-secret-long-enough-0123456789';
    const secured = await startAgent({ env: { ROSTER_AUTH_SECRET: secret } });
    try {
      const authority = new TokenAuthority({ secret });
      const admin = { Authorization: `Bearer ${await authority.mint({ subject: 'admin', rules: [{ resource: 'session', prefix: '', access: 'write' }, { resource: 'key', prefix: '', access: 'write' }], ttlSeconds: 600 })}` };
      const narrow = { Authorization: `Bearer ${await authority.mint({ subject: 'narrow', rules: [{ resource: 'key', prefix: 'open/', access: 'read' }], ttlSeconds: 600 })}` };
      const sid = (await call(secured.url, 'PUT', '/v1/session/create', { TTL: '30s' }, admin)).json().ID as string;
      expect((await call(secured.url, 'GET', `/v1/session/timer/${sid}`, undefined, admin)).status).toBe(200);
      expectError(await call(secured.url, 'GET', `/v1/session/timer/${sid}`, undefined, narrow), 404, 1006);
      expect((await call(secured.url, 'GET', '/v1/lock/queue/open/a', undefined, narrow)).json()).toEqual({ Key: 'open/a', Waiters: [] });
      expectError(await call(secured.url, 'GET', '/v1/lock/queue/closed/a', undefined, narrow), 403, 1004);
      expectError(await call(secured.url, 'GET', '/v1/lock/queue/open/a'), 401, 1002);
    } finally {
      await secured.stop();
      secured.cleanup();
    }
  });
});
