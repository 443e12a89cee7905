// Goal: the dashboard's log page in Debian's Chromium against a started agent: it follows the agent's log
// from its first line (the monitor's announcement, at info), and at the level chosen shows what the agent
// does meanwhile (a write's request line at debug, which info leaves out); the filter box narrows the
// lines; the header links to it.
import { describe, expect, test } from 'vitest';
import { ok, screenshot, useAgentAndBrowser } from './browser.ts';

const ui = useAgentAndBrowser();

describe('the log page', () => {
  test('follows the agent\'s log at the level chosen', async () => {
    await ui.withPage('/ui/services', async (page) => {
      await page.click('header a[data-nav="log"]');
      await page.waitForURL('**/ui/log');
      await page.waitForSelector('#log-lines:has-text("[INFO]  monitor started")');
      expect(await page.textContent('#log-status')).toContain('at info and above');
      await ok(ui.c.put('/v1/kv/ui-log/at-info', 'x'), 'write at info');
      await page.selectOption('#log-level', 'debug');
      await page.waitForSelector('#log-lines:has-text("loglevel=debug")');
      await ok(ui.c.put('/v1/kv/ui-log/at-debug', 'x'), 'write at debug');
      await page.waitForSelector('#log-lines:has-text("path=/v1/kv/ui-log/at-debug status=200")');
      const lines = await page.$$eval('#log-lines tr[data-row]', (rows) => rows.map((r) => r.textContent ?? ''));
      // Following again at debug started afresh: the info page's lines are gone, and info never showed requests.
      expect(lines.join('\n')).not.toContain('at-info');
      expect(lines.every((l) => /^\d{4}-\d\d-\d\dT[\d:.]+Z \[[A-Z]+\]/.test(l))).toBe(true);
      await screenshot(page, 'ui-log');
      await page.fill('#filter', 'ui-log/at-debug');
      // A string: it runs in the page (this file is compiled without the DOM).
      await page.waitForFunction(`document.querySelectorAll('#log-lines tr[data-row]:not([hidden])').length === 1`);
      expect(await page.textContent('#log-lines tr[data-row]:not([hidden])')).toContain('method=PUT');
    });
  });
});
