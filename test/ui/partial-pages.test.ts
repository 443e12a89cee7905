// Goal: the node, session and lock pages and the Nodes list work from what a token may read, in Debian's
// Chromium against a started agent with authentication on. Each watches the narrowest stream views of what
// it shows (a lock page its key, with its holder read over HTTP; a session page the session read over HTTP,
// then its node's sessions and checks; a node page that node's checks and sessions, its services over
// HTTP), so a token that may read part of the registry (keys under a prefix, sessions of one node, some
// services) is not refused them for lacking the views of everything; what it may not read shows as a
// refusal in its own section, naming the view and giving the agent's words, and the rest shows.
import { describe, expect, test } from 'vitest';
import { TokenAuthority, type Rule } from '../../src/auth/index.ts';
import { call } from '../support/agent.ts';
import type { Page } from 'playwright-core';
import { ok, useAgentAndBrowser } from './browser.ts';

const secret = 'a-dashboard-partial-pages-secret-long-enough-0123456789';
const authority = new TokenAuthority({ secret });
let admin: Record<string, string> = {};
let first = '';
let second = '';
let third = '';

const as = (method: string, path: string, body?: unknown) => call(ui.agent.url, method, path, body, admin);
const read = (resource: Rule['resource'], prefix: string): Rule => ({ resource, prefix, access: 'read' });
const mint = (rules: Rule[]) => authority.mint({ subject: 'partial', rules: [read('agent', ''), ...rules], ttlSeconds: 600 });

const ui = useAgentAndBrowser(async () => {
  const all = (['service', 'node', 'session', 'key', 'agent', 'check'] as const).map((resource): Rule => ({ resource, prefix: '', access: 'write' }));
  admin = { Authorization: `Bearer ${await authority.mint({ subject: 'admin', rules: all, ttlSeconds: 600 })}` };
  first = (JSON.parse(await ok(as('PUT', '/v1/session/create', { Name: 'first', TTL: '60s' }), 'first')) as { ID: string }).ID;
  second = (JSON.parse(await ok(as('PUT', '/v1/session/create', { Name: 'second', TTL: '60s' }), 'second')) as { ID: string }).ID;
  expect(await ok(as('PUT', `/v1/kv/jobs/leader?acquire=${first}`, 'first'), 'acquire')).toBe('true');
  third = (JSON.parse(await ok(as('PUT', '/v1/session/create', { Name: 'third', TTL: '60s', NodeChecks: ['gossipHealth'] }), 'third')) as { ID: string }).ID;
  for (const key of ['jobs/nightly', 'secret/vault']) expect(await ok(as('PUT', `/v1/kv/${key}?acquire=${third}`, 'third'), key)).toBe('true');
  await ok(as('PUT', '/v1/agent/service/register', { Name: 'web', ID: 'web-1', Port: 8080, Check: { CheckID: 'web-1-ttl', TTL: '10m' } }), 'web-1');
  await ok(as('PUT', '/v1/agent/service/register', { Name: 'db', ID: 'db-1', Port: 5432, Check: { CheckID: 'db-1-ttl', TTL: '10m' } }), 'db-1');
}, { env: { ROSTER_AUTH_SECRET: secret } });

/** Read on the service web alone, every node, node1's sessions and the keys under jobs/. */
const partial = () => mint([read('service', 'web'), read('node', ''), read('session', 'node1'), read('key', 'jobs/')]);
const rows = (page: Page, view: string, attr: string) => page.$$eval(`[data-view="${view}"] tr[data-row]`, (rs, a) => rs.map((r) => r.getAttribute(a)).sort(), attr);

describe('a lock page for a token that may read keys under a prefix', () => {
  test('keys only: the holder by its ID, LockIndex and the hand-offs, no refusal', async () => {
    await ui.withPage('/ui/locks/jobs/leader', async (page) => {
      await page.waitForSelector(`[data-holder="${first}"][data-holder-unknown]`);
      expect(await page.locator('[data-stream-refused]').count()).toBe(0);
      expect(await page.textContent('#lock-index')).toBe('1');
      expect(await ok(as('PUT', `/v1/kv/jobs/leader?release=${first}`), 'release')).toBe('true');
      expect(await ok(as('PUT', `/v1/kv/jobs/leader?acquire=${second}`, 'second'), 'second')).toBe('true');
      await page.waitForSelector(`[data-holder="${second}"]`);
      expect(await page.textContent('#lock-index')).toBe('2');
      await page.waitForSelector('[data-view="lock-history"] tr[data-row]');
      expect(await page.textContent('[data-view="lock-history"]')).toContain(`held by ${second}`);
    }, await mint([read('key', 'jobs/')]));
  });

  test('and the sessions of node1: the holder by its name and node', async () => {
    await ui.withPage('/ui/locks/jobs/leader', async (page) => {
      await page.waitForSelector('[data-holder]:has-text("on node1")');
      expect(await page.locator('[data-stream-refused]').count()).toBe(0);
      expect(await page.textContent('[data-holder]')).toMatch(/^(first|second) on node1$/);
    }, await mint([read('key', 'jobs/'), read('session', 'node1')]));
  });
});

describe('a token that may read the service web, every node, node1\'s sessions and keys under jobs/', () => {
  test('the node page: the checks and services it may read, its sessions; the refused live checks view said', async () => {
    await ui.withPage('/ui/nodes/node1', async (page) => {
      await page.waitForSelector('[data-view="node-services"] tr[data-instance="web-1"]');
      expect(await page.locator('[data-stream-refused]').count()).toBe(0);
      expect(await rows(page, 'node-services', 'data-instance')).toEqual(['web-1']);
      // node_checks needs read on every service: refused, said in the section, the readable checks shown instead.
      expect(await page.textContent('[data-section-refused="node-checks"]')).toContain('node_checks "node1"');
      expect(await page.textContent('[data-refused="node-checks"]')).toContain('forbidden');
      await page.waitForSelector('[data-view="node-checks"] tr[data-check="node1/web-1-ttl"]');
      expect(await rows(page, 'node-checks', 'data-check')).toEqual(['node1/gossipHealth', 'node1/web-1-ttl']);
      await page.waitForSelector(`[data-view="node-sessions"] tr[data-session="${third}"]`);
      expect(await page.locator('[data-member="alive"]').count()).toBe(1);
    }, await partial());
  });

  test('a session page: the session, its readable locks from its timer, its bound check; the refused held-locks view said', async () => {
    await ui.withPage(`/ui/sessions/${third}`, async (page) => {
      await page.waitForSelector('[data-view="session-locks"] tr[data-lock="jobs/nightly"]');
      expect(await page.locator('[data-stream-refused]').count()).toBe(0);
      expect(await page.textContent('[data-page="session"]')).toContain('third');
      expect(await rows(page, 'session-locks', 'data-lock')).toEqual(['jobs/nightly']);
      expect(await page.textContent('[data-section-refused="session-locks"]')).toContain('kv_prefix ""');
      await page.waitForSelector('[data-view="session-checks"] tr[data-check="node1/gossipHealth"] .badge');
      expect(await page.textContent('[data-view="session-checks"] tr[data-check="node1/gossipHealth"]')).toContain('passing');
      await ok(as('PUT', `/v1/session/destroy/${third}`), 'destroy');
      await page.waitForSelector('[data-gone]');
    }, await partial());
  });

  test('the Nodes list: each node with the services and checks it may read, the refused views said', async () => {
    await ui.withPage('/ui/nodes', async (page) => {
      await page.waitForSelector('tr[data-node="node1"] a:text-is("web")');
      expect(await page.locator('[data-stream-refused]').count()).toBe(0);
      expect(await page.$$eval('tr[data-node="node1"] td:nth-child(5) a', (as) => as.map((a) => a.textContent))).toEqual(['web']);
      for (const f of ['entries', 'checks']) expect(await page.textContent(`[data-refused="${f}"]`), f).toContain('forbidden');
      // gossipHealth and web-1-ttl: db-1-ttl is not readable.
      await page.waitForSelector('tr[data-node="node1"] td:nth-child(6):text-is("2")');
      // Every session readable, so that one view of the page's is not refused and the header is live.
    }, await mint([read('service', 'web'), read('node', ''), read('session', ''), read('key', 'jobs/')]));
  });
});
