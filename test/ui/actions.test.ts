// Goal: every action of the dashboard in Debian's Chromium against started agents: invalidate a session,
// pass/warn/fail a TTL check, deregister a check and a service instance, toggle a service instance's
// and the node's maintenance (delete a key: kv.test.ts). Each asks first, Cancel does nothing, and the
// change is seen through the HTTP API and live on the page. With authentication on and a token that may
// only read, each action shows the agent's permission error and changes nothing.
import type { Page } from 'playwright-core';
import { describe, expect, test } from 'vitest';
import { TokenAuthority, type Rule } from '../../src/auth/index.ts';
import { call, type client } from '../support/agent.ts';
import { confirm, confirmRefused, ok, useAgentAndBrowser } from './browser.ts';

async function checkStatus(c: ReturnType<typeof client>, id: string): Promise<string | undefined> {
  const checks = (await c.get('/v1/agent/checks')).json<Record<string, { Status: string }>>();
  return checks[id]?.Status;
}

/** Clicks `button`, confirms the dialog asking `question`, and waits for `shown` (or for it to go). */
async function act(page: Page, button: string, question: string, shown: string, state?: 'detached'): Promise<void> {
  await page.click(button);
  await confirm(page, question);
  if (state === undefined) await page.waitForSelector(shown);
  else await page.waitForSelector(shown, { state });
}

describe('actions, allowed', () => {
  const ui = useAgentAndBrowser(async ({ c }) => {
    await ok(c.put('/v1/agent/service/register', { Name: 'queue', ID: 'queue-1', Check: { TTL: '10m' } }), 'queue-1');
    await ok(c.put('/v1/agent/service/register', { Name: 'queue', ID: 'queue-2' }), 'queue-2');
    await ok(c.put('/v1/agent/check/register', { Name: 'disk', CheckID: 'disk', TTL: '10m' }), 'disk');
  });

  test('pass, warn and fail a TTL check; Cancel leaves it', async () => {
    await ui.withPage('/ui/services/queue', async (page) => {
      const row = '[data-view="service-checks"] tr[data-check="node1/service:queue-1"]';
      await page.waitForSelector(`${row}[data-status="critical"]`);
      await page.click(`${row} [data-action="check-pass"]`);
      await page.waitForSelector('#confirm[open]');
      await page.click('#confirm-cancel');
      expect(await checkStatus(ui.c, 'service:queue-1')).toBe('critical');
      for (const [verb, status] of [['pass', 'passing'], ['warn', 'warning'], ['fail', 'critical']] as const) {
        await act(page, `${row} [data-action="check-${verb}"]`, `Mark the check service:queue-1 on node1 ${status}`, `${row}[data-status="${status}"]`);
        expect(await checkStatus(ui.c, 'service:queue-1')).toBe(status);
      }
    });
  });

  test('deregister a check', async () => {
    await ui.withPage('/ui/nodes/node1', async (page) => {
      await act(page, 'tr[data-check="node1/disk"] [data-action="check-deregister"]', 'Deregister the check disk on node1', 'tr[data-check="node1/disk"]', 'detached');
      expect(await checkStatus(ui.c, 'disk')).toBeUndefined();
    });
  });

  test('toggle a service instance\'s maintenance', async () => {
    const row = 'tr[data-instance="node1/queue-2"]';
    await ui.withPage('/ui/services/queue', async (page) => {
      await act(page, `${row} [data-action="service-maintenance"]`, 'Put the instance queue-2 in maintenance', `${row}[data-status="maintenance"], ${row}[data-status="critical"]`);
      expect(await checkStatus(ui.c, '_service_maintenance:queue-2')).toBe('critical');
      await act(page, `${row} [data-action="service-maintenance"][data-enabled="true"]`, 'Take the instance queue-2 out of maintenance', `${row}[data-status="passing"]`);
      expect(await checkStatus(ui.c, '_service_maintenance:queue-2')).toBeUndefined();
    });
  });

  test('toggle the node\'s maintenance', async () => {
    await ui.withPage('/ui/nodes/node1', async (page) => {
      await act(page, '[data-action="node-maintenance"][data-enabled="false"]', 'Put the node node1 in maintenance', '[data-action="node-maintenance"][data-enabled="true"]');
      expect(await checkStatus(ui.c, '_node_maintenance')).toBe('critical');
      await act(page, '[data-action="node-maintenance"]', 'Take the node node1 out of maintenance', '[data-action="node-maintenance"][data-enabled="false"]');
      expect(await checkStatus(ui.c, '_node_maintenance')).toBeUndefined();
    });
  });

  test('deregister a service instance', async () => {
    await ui.withPage('/ui/services/queue', async (page) => {
      await act(page, 'tr[data-instance="node1/queue-2"] [data-action="service-deregister"]', 'Deregister the instance queue-2 on node1', 'tr[data-instance="node1/queue-2"]', 'detached');
      expect(Object.keys((await ui.c.get('/v1/agent/services')).json())).toEqual(['queue-1']);
    });
  });

  test('invalidate a session: its locks are released', async () => {
    const sid = await ui.c.session({ Name: 'doomed', TTL: '60s' });
    expect(await ok(ui.c.put(`/v1/kv/work/lock?acquire=${sid}`, 'x'), 'acquire')).toBe('true');
    await ui.withPage(`/ui/sessions/${sid}`, async (page) => {
      await page.waitForSelector('tr[data-lock="work/lock"]');
      await act(page, '[data-action="session-invalidate"]', `Invalidate the session “doomed” ${sid}`, '[data-gone]');
      // The live stream can take the session off the page before the action's own answer writes the flash line.
      await expect.poll(() => page.textContent('#flash'), { timeout: 10_000 }).toContain(`Invalidated ${sid}`);
    });
    expect((await ui.c.get(`/v1/session/info/${sid}`)).json()).toEqual([]);
    expect((await ui.c.get('/v1/kv/work/lock')).json()[0].Session).toBeUndefined();
  });
});

describe('actions, refused', () => {
  const secret = 'a-dashboard-actions-secret-long-enough-0123456789';
  let admin: Record<string, string>;
  let reader: string;
  let sid: string;
  const as = (method: string, path: string, body?: unknown) => call(ui.agent.url, method, path, body, admin);

  const ui = useAgentAndBrowser(async () => {
    const all = (access: Rule['access']) => (['service', 'node', 'session', 'key', 'agent', 'check', 'operator'] as const).map((resource): Rule => ({ resource, prefix: '', access }));
    const authority = new TokenAuthority({ secret });
    admin = { Authorization: `Bearer ${await authority.mint({ subject: 'admin', rules: all('write'), ttlSeconds: 600 })}` };
    reader = await authority.mint({ subject: 'viewer', rules: all('read'), ttlSeconds: 600 });
    await ok(as('PUT', '/v1/agent/service/register', { Name: 'locked', ID: 'locked-1', Check: { TTL: '10m' } }), 'register');
    await ok(as('PUT', '/v1/kv/kept', 'value'), 'key');
    const r = await as('PUT', '/v1/session/create', { Name: 'kept', TTL: '60s' });
    sid = r.json().ID;
  }, { env: { ROSTER_AUTH_SECRET: secret } });

  test('a read-only token: every action shows the permission error and nothing changes', async () => {
    const denied = 'permission denied';
    await ui.withPage('/ui/services/locked', async (page) => {
      const row = 'tr[data-check="node1/service:locked-1"]';
      await page.waitForSelector(`${row}[data-status="critical"]`);
      for (const verb of ['pass', 'warn', 'fail', 'deregister'] as const) {
        await page.click(`${row} [data-action="check-${verb}"]`);
        expect(await confirmRefused(page, 'the check service:locked-1', denied)).toContain('403');
      }
      await page.click('tr[data-instance="node1/locked-1"] [data-action="service-maintenance"]');
      await confirmRefused(page, 'in maintenance', denied);
      await page.click('tr[data-instance="node1/locked-1"] [data-action="service-deregister"]');
      await confirmRefused(page, 'Deregister the instance locked-1', denied);
    }, reader);
    const elsewhere = [
      ['/ui/nodes/node1', '[data-action="node-maintenance"]', 'Put the node node1 in maintenance'],
      [`/ui/sessions/${sid}`, '[data-action="session-invalidate"]', 'Invalidate the session'],
      ['/ui/kv/kept', '[data-action="delete-key"]', 'Delete the key kept'],
    ] as const;
    for (const [path, button, question] of elsewhere) {
      await ui.withPage(path, async (page) => {
        await page.click(button);
        await confirmRefused(page, question, denied);
      }, reader);
    }
    const checks = (await as('GET', '/v1/agent/checks')).json();
    expect(Object.keys(checks)).toEqual(['service:locked-1']);
    expect(checks['service:locked-1'].Status).toBe('critical');
    expect(Object.keys((await as('GET', '/v1/agent/services')).json())).toEqual(['locked-1']);
    expect((await as('GET', `/v1/session/info/${sid}`)).json()).toHaveLength(1);
    expect((await as('GET', '/v1/kv/kept')).status).toBe(200);
  });
});
