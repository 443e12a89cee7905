// Goal: a token that may read only some services opens those services' pages, in Debian's Chromium
// against a started agent with authentication on. With service read on `web` alone (and read on nodes,
// which every instance names, sessions and the agent), the all-services and all-checks views are refused to it, yet the `web`
// page shows its instances and their checks, live (a check failed over HTTP turns critical and is listed
// as a transition); the page of a service it may not read shows the refusal and none of that service;
// and the Services list, refused, links the services it may read and leaves the others out.
import { describe, expect, test } from 'vitest';
import { TokenAuthority, type Rule } from '../../src/auth/index.ts';
import { call } from '../support/agent.ts';
import { ok, useAgentAndBrowser } from './browser.ts';

const secret = 'a-dashboard-service-acl-secret-long-enough-0123456789';
const authority = new TokenAuthority({ secret });
let admin: Record<string, string> = {};
let token = '';

const as = (method: string, path: string, body?: unknown) => call(ui.agent.url, method, path, body, admin);

const ui = useAgentAndBrowser(async () => {
  const all = (access: Rule['access']) => (['service', 'node', 'session', 'key', 'agent', 'check'] as const).map((resource): Rule => ({ resource, prefix: '', access }));
  admin = { Authorization: `Bearer ${await authority.mint({ subject: 'admin', rules: all('write'), ttlSeconds: 600 })}` };
  token = await authority.mint({
    subject: 'web-reader', ttlSeconds: 600,
    rules: [{ resource: 'service', prefix: 'web', access: 'read' }, ...(['node', 'session', 'agent'] as const).map((resource): Rule => ({ resource, prefix: '', access: 'read' }))],
  });
  await ok(as('PUT', '/v1/agent/service/register', { Name: 'web', ID: 'web-1', Port: 8080, Check: { CheckID: 'web-1-ttl', TTL: '10m' } }), 'web-1');
  await ok(as('PUT', '/v1/agent/service/register', { Name: 'web', ID: 'web-2', Port: 8081 }), 'web-2');
  await ok(as('PUT', '/v1/agent/service/register', { Name: 'db', ID: 'db-1', Port: 5432, Check: { CheckID: 'db-1-ttl', TTL: '10m' } }), 'db-1');
  await ok(as('PUT', '/v1/agent/check/pass/web-1-ttl?note=up', undefined), 'pass');
}, { env: { ROSTER_AUTH_SECRET: secret } });

describe('a token that may read the service web only', () => {
  test('the web page shows its instances and checks, live', async () => {
    await ui.withPage('/ui/services/web', async (page) => {
      await page.waitForSelector('tr[data-instance="node1/web-1"]');
      expect(await page.locator('[data-stream-refused]').count()).toBe(0);
      expect(await page.$$eval('tr[data-instance]', (rows) => rows.map((r) => r.getAttribute('data-instance')).sort())).toEqual(['node1/web-1', 'node1/web-2']);
      await page.waitForSelector('tr[data-check="node1/web-1-ttl"][data-status="passing"]');
      expect(await page.locator('tr[data-check="node1/gossipHealth"]').count()).toBe(1);
      expect(await page.locator('tr[data-check="node1/db-1-ttl"]').count()).toBe(0);
      await ok(as('PUT', '/v1/agent/check/fail/web-1-ttl?note=down', undefined), 'fail');
      await page.waitForSelector('tr[data-check="node1/web-1-ttl"][data-status="critical"]');
      await page.waitForSelector('[data-view="service-history"] tr[data-row]:has-text("web-1-ttl")');
    }, token);
  });

  test('a service it may not read: the page shows the refusal and nothing of it', async () => {
    await ui.withPage('/ui/services/db', async (page) => {
      await page.waitForSelector('[data-stream-refused="service"]');
      expect(await page.textContent('[data-refused="service"]')).toContain('forbidden');
      expect(await page.locator('[data-instance], [data-check]').count()).toBe(0);
      expect(await page.textContent('#view')).not.toContain('db-1');
    }, token);
  });

  test('the Services list is refused but links the services it may read, and only those', async () => {
    await ui.withPage('/ui/services', async (page) => {
      await page.waitForSelector('[data-stream-refused="entries"]');
      await page.waitForSelector('[data-readable-services] a:text-is("web")');
      expect(await page.$$eval('[data-readable-services] a', (as) => as.map((a) => a.textContent))).toEqual(['web']);
      await page.click('[data-readable-services] a:text-is("web")');
      await page.waitForSelector('tr[data-instance="node1/web-2"]');
      expect(new URL(page.url()).pathname).toBe('/ui/services/web');
    }, token);
  });
});
