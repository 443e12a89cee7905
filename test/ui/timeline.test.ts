// Goal: the dashboard's timeline in Debian's Chromium against a started agent: health transitions
// (with the output of each) and lock acquires, hand-offs and releases appear live, newest first; a
// click on a heading sorts by that column, a second click the other way, and the order holds across
// live updates; the filter box narrows the rows.
import type { Page } from 'playwright-core';
import { describe, expect, test } from 'vitest';
import { ok, screenshot, useAgentAndBrowser } from './browser.ts';

const ui = useAgentAndBrowser(async ({ c }) => {
  for (const id of ['alpha-1', 'beta-1']) await ok(c.put('/v1/agent/service/register', { Name: id.slice(0, -2), ID: id, Check: { TTL: '10m' } }), id);
});

const subjects = (page: Page) => page.$$eval('[data-view="timeline"] tr[data-row]:not([hidden])', (rs) => rs.map((r) => `${r.getAttribute('data-subject')} ${r.getAttribute('data-to')}`));

describe('the timeline', () => {
  test('health transitions and lock hand-offs, live, newest first, sortable and filterable', async () => {
    await ui.withPage('/ui/timeline', async (page) => {
      await page.waitForSelector('[data-view="timeline"]');
      expect(await subjects(page)).toEqual([]);
      await ok(ui.c.put('/v1/agent/check/pass/service:beta-1?note=up'), 'beta pass');
      await page.waitForSelector('tr[data-subject="node1/service:beta-1"][data-to="passing"]');
      await ok(ui.c.put('/v1/agent/check/pass/service:alpha-1?note=up'), 'alpha pass');
      await page.waitForSelector('tr[data-subject="node1/service:alpha-1"][data-to="passing"]');
      const a = await ui.c.session({ Name: 'a', TTL: '60s' });
      const b = await ui.c.session({ Name: 'b', TTL: '60s' });
      expect(await ok(ui.c.put(`/v1/kv/tl/lock?acquire=${a}`, 'a'), 'a acquires')).toBe('true');
      await page.waitForSelector(`tr[data-subject="tl/lock"][data-to="held by ${a}"]`);
      expect(await ok(ui.c.put(`/v1/kv/tl/lock?release=${a}`), 'a releases')).toBe('true');
      expect(await ok(ui.c.put(`/v1/kv/tl/lock?acquire=${b}`, 'b'), 'b acquires')).toBe('true');
      await page.waitForSelector(`tr[data-subject="tl/lock"][data-to="held by ${b}"]`);
      expect(await subjects(page)).toEqual([
        `tl/lock held by ${b}`, 'tl/lock released', `tl/lock held by ${a}`,
        'node1/service:alpha-1 passing', 'node1/service:beta-1 passing',
      ]);
      expect(await page.textContent('tr[data-subject="node1/service:alpha-1"]')).toContain('critical');

      // Sorted by Subject, then the other way; the order holds when a new transition arrives.
      await page.click('[data-view="timeline"] th:text-is("Subject")');
      expect(await subjects(page)).toEqual([
        'node1/service:alpha-1 passing', 'node1/service:beta-1 passing',
        `tl/lock held by ${b}`, 'tl/lock released', `tl/lock held by ${a}`,
      ]);
      await page.click('[data-view="timeline"] th:text-is("Subject")');
      expect(await page.getAttribute('[data-view="timeline"] th:text-is("Subject")', 'aria-sort')).toBe('descending');
      expect((await subjects(page))[0]).toBe(`tl/lock held by ${b}`);
      await ok(ui.c.put('/v1/agent/check/fail/service:alpha-1?note=down'), 'alpha fail');
      await page.waitForSelector('tr[data-subject="node1/service:alpha-1"][data-to="critical"]');
      expect((await subjects(page)).slice(-2)).toEqual(['node1/service:alpha-1 critical', 'node1/service:alpha-1 passing']);
      await page.fill('#filter', 'lock');
      expect(await subjects(page)).toEqual([`tl/lock held by ${b}`, 'tl/lock released', `tl/lock held by ${a}`]);
      await page.fill('#filter', 'down');
      expect(await subjects(page)).toEqual(['node1/service:alpha-1 critical']);
      await page.fill('#filter', '');
      await screenshot(page, 'ui-timeline');
    });
  });
});
