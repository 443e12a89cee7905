// Goal: the node, session and lock pages work from what a token may read, in Debian's Chromium against a
// started agent with authentication on. Each watches the narrowest stream views of what it shows (a lock
// page its key, with its holder read over HTTP; a session page that session's node's sessions and checks;
// a node page that node's checks and sessions), so a token that may read part of the registry (keys under
// a prefix, sessions of one node, one node) is not refused them for lacking the views of everything; what
// it may not read shows as a refusal in its own section.
import { describe, expect, test } from 'vitest';
import { TokenAuthority, type Rule } from '../../src/auth/index.ts';
import { call } from '../support/agent.ts';
import { ok, useAgentAndBrowser } from './browser.ts';

const secret = 'a-dashboard-partial-pages-secret-long-enough-0123456789';
const authority = new TokenAuthority({ secret });
let admin: Record<string, string> = {};
let first = '';
let second = '';

const as = (method: string, path: string, body?: unknown) => call(ui.agent.url, method, path, body, admin);
const read = (resource: Rule['resource'], prefix: string): Rule => ({ resource, prefix, access: 'read' });
const mint = (rules: Rule[]) => authority.mint({ subject: 'partial', rules: [read('agent', ''), ...rules], ttlSeconds: 600 });

const ui = useAgentAndBrowser(async () => {
  const all = (['service', 'node', 'session', 'key', 'agent', 'check'] as const).map((resource): Rule => ({ resource, prefix: '', access: 'write' }));
  admin = { Authorization: `Bearer ${await authority.mint({ subject: 'admin', rules: all, ttlSeconds: 600 })}` };
  first = (JSON.parse(await ok(as('PUT', '/v1/session/create', { Name: 'first', TTL: '60s' }), 'first')) as { ID: string }).ID;
  second = (JSON.parse(await ok(as('PUT', '/v1/session/create', { Name: 'second', TTL: '60s' }), 'second')) as { ID: string }).ID;
  expect(await ok(as('PUT', `/v1/kv/jobs/leader?acquire=${first}`, 'first'), 'acquire')).toBe('true');
}, { env: { ROSTER_AUTH_SECRET: secret } });

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
