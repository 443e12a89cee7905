// Goal: a token the agent refuses at the stream's WebSocket upgrade is shown as refused, in Debian's
// Chromium against a started agent with authentication on. A browser sees a refused upgrade as a lost
// connection; the page then asks `GET /v1/stream` once, and on its 401 (no token) or 403 (a token whose
// rules read nothing a topic shows) the header says the token is refused in the agent's words and the page
// stops retrying; once a token the stream takes is set, it connects and goes live.
import type { Page } from 'playwright-core';
import { describe, expect, test } from 'vitest';
import { TokenAuthority, type Rule } from '../../src/auth/index.ts';
import { useAgentAndBrowser, waitMs } from './browser.ts';

const secret = 'a-dashboard-stream-denied-secret-long-enough-0123456789';
const authority = new TokenAuthority({ secret });
const mint = (rules: Rule[]) => authority.mint({ subject: 'ui', rules, ttlSeconds: 600 });

const ui = useAgentAndBrowser(undefined, { env: { ROSTER_AUTH_SECRET: secret } });

/** A page at /ui/services with `token` set (none when undefined), not waiting for the stream; counts its WebSockets. */
async function open(token: string | undefined): Promise<{ page: Page; sockets: () => number }> {
  const page = await ui.browser.newPage({ viewport: { width: 1280, height: 800 } });
  page.setDefaultTimeout(waitMs);
  let sockets = 0;
  page.on('websocket', () => { sockets += 1; });
  if (token !== undefined) await page.addInitScript(`localStorage.setItem('roster.token', ${JSON.stringify(token)})`);
  await page.goto(`${ui.agent.url}/ui/services`);
  return { page, sockets: () => sockets };
}

describe('a token refused at the upgrade', () => {
  test.each<[string, Rule[] | undefined, string]>([
    ['no token (401)', undefined, 'user not logged in'],
    ['a token that reads nothing the stream shows (403)', [{ resource: 'agent', prefix: '', access: 'read' }], 'the stream needs read on a service, node, session or key prefix'],
  ])('%s: the header says the token is refused, retries stop, a good token goes live', async (_what, rules, words) => {
    const { page, sockets } = await open(rules === undefined ? undefined : await mint(rules));
    try {
      await page.waitForSelector('#connection[data-state="denied"]');
      const text = (await page.textContent('#connection')) ?? '';
      expect(text).toContain('token refused');
      expect(text).toContain(words);
      expect(await page.textContent('#notice')).toContain(words);
      // No retry while the token stays: the backoff starts at 250 ms, so 2 s would see several.
      const tried = sockets();
      await page.waitForTimeout(2000);
      expect(sockets()).toBe(tried);
      expect(await page.getAttribute('#connection', 'data-state')).toBe('denied');
      await page.click('#token-button');
      await page.fill('#token-input', await mint((['service', 'node', 'session', 'key', 'agent'] as const).map((resource): Rule => ({ resource, prefix: '', access: 'read' }))));
      await page.press('#token-input', 'Enter');
      await page.waitForSelector('#connection[data-state="live"]');
      expect(await page.isHidden('#notice')).toBe(true);
    } finally {
      await page.close();
    }
  });
});
