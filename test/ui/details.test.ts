// Goal: the dashboard's detail pages in Debian's Chromium against a started agent, reached by their
// links. A service: its instances, its checks with output, and the recent transitions of those checks
// with the output each had (seen live). A node: member status, checks, services, sessions. A session:
// the locks it holds with their LockIndex and the checks it is bound to; a TTL of `0s` (kept as sent)
// shown as no TTL, as a session without one is. A lock key: its holder and
// LockIndex (the fencing token), and the hand-offs seen live. Unknown /ui/ addresses get the not-found
// view, and a detail page of something that went away says so.
import { describe, expect, test } from 'vitest';
import { ok, screenshot, useAgentAndBrowser } from './browser.ts';

const ui = useAgentAndBrowser(async ({ c }) => {
  for (const [id, port] of [['pay-1', 7001], ['pay-2', 7002]] as const) {
    await ok(c.put('/v1/agent/service/register', { Name: 'pay', ID: id, Port: port, Tags: ['billing'], Check: { TTL: '10m' } }), id);
    await ok(c.put(`/v1/agent/check/pass/service:${id}?note=ready`), `pass ${id}`);
  }
});

describe('detail pages', () => {
  test('a service: instances, checks with output, and its transitions with the output of each', async () => {
    await ui.withPage('/ui/services', async (page) => {
      await page.click('tr[data-service="pay"] a');
      await page.waitForURL('**/ui/services/pay');
      await page.waitForSelector('tr[data-instance="node1/pay-2"]');
      expect(await page.$$eval('[data-view="instances"] tr[data-row]', (rs) => rs.map((r) => r.getAttribute('data-instance')))).toEqual(['node1/pay-1', 'node1/pay-2']);
      expect(await page.textContent('tr[data-instance="node1/pay-2"]')).toContain('7002');
      expect(await page.textContent('[data-view="service-checks"] tr[data-check="node1/service:pay-1"] pre.output')).toBe('ready');
      await ok(ui.c.put('/v1/agent/check/fail/service:pay-2?note=timeout%20after%202s'), 'fail');
      await page.waitForSelector('[data-view="service-history"] tr[data-subject="node1/service:pay-2"][data-to="critical"]');
      await ok(ui.c.put('/v1/agent/check/warn/service:pay-2?note=slow%20answers'), 'warn');
      await page.waitForSelector('[data-view="service-history"] tr[data-to="warning"]');
      const history = await page.$$eval('[data-view="service-history"] tr[data-row]', (rs) => rs.map((r) => r.textContent));
      // Newest first, each with the output it had then.
      expect(history[0]).toContain('slow answers');
      expect(history[1]).toContain('timeout after 2s');
      expect(history[1]).toMatch(/passing\s*→\s*critical/);
      await screenshot(page, 'ui-service');
      await page.click('tr[data-instance="node1/pay-1"] a:text-is("node1")');
      await page.waitForURL('**/ui/nodes/node1');
    });
  });

  test('a node: member status, checks, services and sessions, with links', async () => {
    const sid = await ui.c.session({ Name: 'node-page', TTL: '60s' });
    await ui.withPage('/ui/nodes', async (page) => {
      await page.click('tr[data-node="node1"] td.name a');
      await page.waitForURL('**/ui/nodes/node1');
      await page.waitForSelector('[data-member="alive"]');
      await page.waitForSelector('[data-view="node-checks"] tr[data-check="node1/service:pay-1"]');
      expect(await page.$$eval('[data-view="node-services"] tr[data-row]', (rs) => rs.map((r) => r.getAttribute('data-instance')))).toEqual(['pay-1', 'pay-2']);
      await page.waitForSelector(`[data-view="node-sessions"] tr[data-session="${sid}"]`);
      await page.click(`[data-view="node-sessions"] tr[data-session="${sid}"] a`);
      await page.waitForURL(`**/ui/sessions/${sid}`);
    });
  });

  test('a session: the locks it holds with LockIndex, its bound checks, and what shows when it goes', async () => {
    const sid = await ui.c.session({ Name: 'with-locks', TTL: '60s', ServiceChecks: [{ ID: 'service:pay-1' }] });
    expect(await ok(ui.c.put(`/v1/kv/jobs/a?acquire=${sid}`, 'x'), 'a')).toBe('true');
    await ui.withPage(`/ui/sessions/${sid}`, async (page) => {
      await page.waitForSelector('[data-view="session-locks"] tr[data-lock="jobs/a"]');
      expect(await page.textContent('[data-view="session-locks"] tr[data-lock="jobs/a"]')).toContain('1');
      expect(await page.textContent('[data-view="session-checks"] tr[data-check="node1/service:pay-1"]')).toContain('passing');
      expect(await page.textContent('[data-page="session"]')).toContain('with-locks');
      expect(await ok(ui.c.put(`/v1/kv/jobs/b?acquire=${sid}`, 'x'), 'b')).toBe('true');
      await page.waitForSelector('[data-view="session-locks"] tr[data-lock="jobs/b"]');
      await screenshot(page, 'ui-session');
      await page.click('[data-view="session-locks"] tr[data-lock="jobs/b"] a');
      await page.waitForURL('**/ui/locks/jobs/b');
      await page.waitForSelector(`[data-holder="${sid}"]`);
      await page.goBack();
      await page.waitForSelector('[data-view="session-locks"]');
      await ok(ui.c.put(`/v1/session/destroy/${sid}`), 'destroy');
      await page.waitForSelector('[data-gone]');
    });
  });

  test('a session TTL of "0s" or "0" (kept as sent) reads as no TTL, as one without TTL does, in the lists and on its page', async () => {
    const zero = await ui.c.session({ Name: 'ttl-zero', TTL: '0s' });
    const bare = await ui.c.session({ Name: 'ttl-bare', TTL: '0' });
    const none = await ui.c.session({ Name: 'ttl-none' });
    const timed = await ui.c.session({ Name: 'ttl-timed', TTL: '90s' });
    const ttlCell = (view: string, sid: string) => `[data-view="${view}"] tr[data-session="${sid}"] td >> nth=${view === 'sessions' ? 3 : 2}`;
    await ui.withPage('/ui/sessions', async (page) => {
      await page.waitForSelector(`[data-view="sessions"] tr[data-session="${timed}"]`);
      const shown = [];
      for (const sid of [zero, bare, none, timed]) shown.push(await page.textContent(ttlCell('sessions', sid)));
      expect(shown).toEqual(['—', '—', '—', '90s']);
    });
    await ui.withPage('/ui/nodes/node1', async (page) => {
      await page.waitForSelector(`[data-view="node-sessions"] tr[data-session="${timed}"]`);
      expect([await page.textContent(ttlCell('node-sessions', zero)), await page.textContent(ttlCell('node-sessions', timed))]).toEqual(['—', '90s']);
    });
    for (const sid of [zero, none]) {
      await ui.withPage(`/ui/sessions/${sid}`, async (page) => {
        await page.waitForSelector('dl.facts');
        const facts = await page.$$eval('dl.facts dt', (dts) => dts.map((dt) => [dt.textContent, dt.nextElementSibling?.textContent]));
        expect(facts).toContainEqual(['TTL', 'none (lives until destroyed or a bound check fails)']);
      });
    }
  });

  test('a lock key: holder, LockIndex as the fencing token, and the hand-offs seen live', async () => {
    const first = await ui.c.session({ Name: 'first', TTL: '60s' });
    const second = await ui.c.session({ Name: 'second', TTL: '60s' });
    await ui.withPage('/ui/locks/svc/leader', async (page) => {
      await page.waitForSelector('[data-free]');
      expect(await ok(ui.c.put(`/v1/kv/svc/leader?acquire=${first}`, 'first'), 'first')).toBe('true');
      await page.waitForSelector(`[data-holder="${first}"]`);
      expect(await page.textContent('#lock-index')).toBe('1');
      expect(await page.textContent(`[data-holder="${first}"]`)).toContain('first on node1');
      expect(await ok(ui.c.put(`/v1/kv/svc/leader?release=${first}`), 'release')).toBe('true');
      expect(await ok(ui.c.put(`/v1/kv/svc/leader?acquire=${second}`, 'second'), 'second')).toBe('true');
      await page.waitForSelector(`[data-holder="${second}"]`);
      expect(await page.textContent('#lock-index')).toBe('2');
      await page.waitForSelector('[data-view="lock-history"] tr[data-row] >> nth=1');
      const history = await page.$$eval('[data-view="lock-history"] tr[data-row]', (rs) => rs.map((r) => r.textContent ?? ''));
      expect(history[0]).toContain(`held by ${second}`);
      expect(history[0]).toContain('LockIndex 2');
      expect(history.some((h) => h.includes(`held by ${first}`))).toBe(true);
      await screenshot(page, 'ui-lock');
    });
  });

  test('unknown addresses under /ui/ get the not-found view; the lists still work from it', async () => {
    for (const path of ['/ui/nope', '/ui/services/pay/extra', '/ui/locks/', '/ui/checks/x']) {
      await ui.withPage(path, async (page) => {
        await page.waitForSelector('[data-notfound]');
        expect(await page.textContent('#title'), path).toBe('Not found');
        expect(await page.textContent('[data-notfound]'), path).toContain(path);
      });
    }
    await ui.withPage('/ui/nope', async (page) => {
      await page.waitForSelector('[data-notfound]');
      await page.click('[data-notfound] a:text-is("Services")');
      await page.waitForSelector('tr[data-service="pay"]');
    });
    await ui.withPage('/ui/services/never-registered', async (page) => {
      await page.waitForSelector('[data-gone]');
    });
  });
});
