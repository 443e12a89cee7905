// Goal: the header tells the stream's state as it is when the agent refuses every subscription of the
// page, in Debian's Chromium against a started agent with authentication on. A token that may read
// nothing the dashboard subscribes to (keys under `public/` alone, which is enough to open the stream)
// gets a connection on which each subscription is refused: the header
// says it is connected and that every view is refused (never "connecting…", nor "live" once a bookmark
// arrives on the otherwise silent connection), and turns live when a token that may read them is set.
// A token refused some views only is live, with the count of the refused ones.
import { mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import type { Browser, Page } from 'playwright-core';
import { afterAll, beforeAll, describe, expect, test } from 'vitest';
import { TokenAuthority, type Rule } from '../../src/auth/index.ts';
import { startAgent, type Agent } from '../support/agent.ts';
import { launch, waitMs } from './browser.ts';

const secret = 'a-dashboard-all-refused-secret-long-enough-0123456789';
const authority = new TokenAuthority({ secret });
const configDir = mkdtempSync(join(tmpdir(), 'roster-ui-refused-'));
let agent: Agent;
let browser: Browser;

beforeAll(async () => {
  // Bookmarks after 1 s of silence, so the test sees them reach the page.
  writeFileSync(join(configDir, 'config.json'), JSON.stringify({ stream_bookmark_interval: '1s' }));
  agent = await startAgent({ args: ['--config-file', join(configDir, 'config.json')], env: { ROSTER_AUTH_SECRET: secret } });
  browser = await launch();
});

afterAll(async () => {
  await browser?.close();
  await agent?.stop();
  agent?.cleanup();
  rmSync(configDir, { recursive: true, force: true });
});

const mint = (rules: Rule[]) => authority.mint({ subject: 'ui', rules, ttlSeconds: 600 });
const readAll = (resources: Rule['resource'][]) => resources.map((resource): Rule => ({ resource, prefix: '', access: 'read' }));

/** A page at /ui/services with `token` set, not waiting for the stream (it may never be live). */
async function open(token: string): Promise<Page> {
  const page = await browser.newPage({ viewport: { width: 1280, height: 800 } });
  page.setDefaultTimeout(waitMs);
  await page.addInitScript(`localStorage.setItem('roster.token', ${JSON.stringify(token)})`);
  await page.goto(`${agent.url}/ui/services`);
  return page;
}

describe('the header when the stream refuses views', () => {
  test('every view refused: connected and refused, through bookmarks; live once a token may read them', async () => {
    // Keys under public/ only: the agent opens the stream to it (the stream shows keys), and refuses each view.
    const page = await open(await mint([...readAll(['agent']), { resource: 'key', prefix: 'public/', access: 'read' }]));
    try {
      await page.waitForSelector('#connection[data-state="refused"]');
      expect(await page.textContent('#connection')).toContain('every view refused');
      await page.waitForSelector('[data-stream-refused="entries"]');
      // Bookmarks come each second on this silent connection: the header stays as it is.
      await page.waitForTimeout(2500);
      expect(await page.getAttribute('#connection', 'data-state')).toBe('refused');
      expect(await page.textContent('#connection')).not.toContain('connecting');
      await page.click('#token-button');
      await page.fill('#token-input', await mint(readAll(['service', 'node', 'session', 'key', 'agent'])));
      await page.press('#token-input', 'Enter');
      await page.waitForSelector('#connection[data-state="live"]');
      expect(await page.textContent('#connection')).not.toContain('refused');
      await page.waitForSelector('[data-stream-refused]', { state: 'detached' });
    } finally {
      await page.close();
    }
  });

  test('some views refused: live, counting the refused ones', async () => {
    const page = await open(await mint(readAll(['session', 'agent'])));
    try {
      await page.waitForSelector('#connection[data-state="live"]');
      await page.waitForSelector('#connection:has-text("3 of 4 views refused")');
    } finally {
      await page.close();
    }
  });
});
