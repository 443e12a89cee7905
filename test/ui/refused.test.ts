// Goal: with authentication on, a token that may read only part of the registry (services under `pub`,
// keys under `public/`) gets the stream's refusal of the views every page shares (`service_health ""`,
// `checks_in_state any`, the held locks of `kv_prefix ""`), in Debian's Chromium against a started agent.
// Each page that needs a refused view says so, naming what it may not read, and keeps saying so after the
// node list is read successfully; it never sits at "Waiting for the stream…". A service page watches its
// own service, so only a service outside `pub` is refused there. What the token may read (its KV folder)
// still shows. (The Nodes list, the node and session pages show what the token may read instead of
// refusing the whole page: test/ui/partial-pages.test.ts.)
import { describe, expect, test } from 'vitest';
import { TokenAuthority, type Rule } from '../../src/auth/index.ts';
import { call } from '../support/agent.ts';
import { ok, useAgentAndBrowser, waitMs } from './browser.ts';

const secret = 'a-dashboard-refusal-secret-long-enough-0123456789';
const authority = new TokenAuthority({ secret });
let token = '';

const ui = useAgentAndBrowser(async ({ agent }) => {
  const admin = { Authorization: `Bearer ${await authority.mint({ subject: 'admin', rules: [{ resource: 'key', prefix: '', access: 'write' }], ttlSeconds: 600 })}` };
  await ok(call(agent.url, 'PUT', '/v1/kv/public/readme', 'hello', admin), 'public/readme');
  const rules: Rule[] = [
    { resource: 'service', prefix: 'pub', access: 'read' },
    ...(['node', 'session', 'agent'] as const).map((resource): Rule => ({ resource, prefix: '', access: 'read' })),
    { resource: 'key', prefix: 'public/', access: 'read' },
  ];
  token = await authority.mint({ subject: 'partial', rules, ttlSeconds: 600 });
}, { env: { ROSTER_AUTH_SECRET: secret } });

/** Each page and the views its refusal must name. */
const pages: [string, string[]][] = [
  ['/ui/services', ['entries']],
  ['/ui/checks', ['checks']],
  ['/ui/sessions', ['locks']],
  ['/ui/timeline', ['checks', 'locks']],
  // A service page watches its own service: one outside `pub` is refused, one under it would show.
  ['/ui/services/web', ['service']],
];

describe('a token that may not read every service, check or key', () => {
  test('each page shows the refusal, and it stays after the node list is read', async () => {
    for (const [path, fields] of pages) {
      await ui.withPage(path, async (page) => {
        await page.waitForSelector('[data-stream-refused]');
        // The node list (read over HTTP, allowed) answers in the meantime; the refusal must outlast it.
        // A string script: it runs in the page (this file is compiled without the DOM). Polled from here:
        // waitForFunction polls inside the page, where the page's CSP forbids evaluating a string.
        await expect.poll(() => page.evaluate(`performance.getEntriesByType('resource').some((e) => e.name.endsWith('/v1/agent/self'))`), { timeout: waitMs }).toBe(true);
        await page.waitForTimeout(300);
        expect(await page.getAttribute('[data-stream-refused]', 'data-stream-refused'), path).toBe(fields.join(' '));
        for (const f of fields) expect(await page.textContent(`[data-refused="${f}"]`), `${path} ${f}`).toContain('forbidden');
        expect(await page.textContent('[data-stream-refused]')).toContain('cannot be shown');
        expect(await page.locator('[data-waiting]').count(), path).toBe(0);
      }, token);
    }
  }, 60_000);

  test('its own KV folder shows', async () => {
    await ui.withPage('/ui/kv/public/', async (page) => {
      await page.waitForSelector('tr[data-kv="public/readme"]');
      expect(await page.locator('[data-stream-refused]').count()).toBe(0);
    }, token);
  });
});
