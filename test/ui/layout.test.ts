// Goal: the dashboard is usable on a phone: at a 420 px wide viewport, in Debian's Chromium against a
// started agent, no page's main content overflows sideways (wide tables scroll inside their own box),
// the header's links all stay on screen, and a page's action still works.
import { describe, expect, test } from 'vitest';
import { confirm, ok, openPage, screenshot, useAgentAndBrowser } from './browser.ts';

const width = 420;
const ui = useAgentAndBrowser(async ({ c }) => {
  await ok(c.put('/v1/agent/service/register', { Name: 'payments-gateway-with-a-long-name', ID: 'payments-gateway-with-a-long-name-1', Port: 8443,
    Tags: ['primary', 'pci', 'eu-west-1'], Check: { TTL: '10m' } }), 'service');
  await ok(c.put('/v1/agent/check/fail/service:payments-gateway-with-a-long-name-1?note=' + encodeURIComponent('x'.repeat(300))), 'output');
  await ok(c.put('/v1/kv/config/very/deeply/nested/folder/with/a/long/key-name-for-a-narrow-screen', JSON.stringify({ a: 'y'.repeat(200) })), 'key');
  const sid = await c.session({ Name: 'narrow', TTL: '60s' });
  await ok(c.put(`/v1/kv/config/lock?acquire=${sid}`, 'x'), 'lock');
});

describe('at 420 px', () => {
  test('no page overflows sideways; the header links stay on screen; an action works', async () => {
    const paths = ['/ui/services', '/ui/nodes', '/ui/checks', '/ui/sessions', '/ui/kv/', '/ui/kv/config/very/deeply/nested/folder/with/a/long/key-name-for-a-narrow-screen',
      '/ui/services/payments-gateway-with-a-long-name', '/ui/nodes/node1', '/ui/locks/config/lock', '/ui/timeline', '/ui/cluster', '/ui/log', '/ui/nope'];
    const page = await openPage(ui.browser, ui.agent.url, '/ui/services', width);
    try {
      for (const path of paths) {
        await page.goto(ui.agent.url + path);
        await page.waitForSelector('#connection[data-state="live"]');
        await page.waitForSelector('#view > :not([data-waiting])');
        // The log page keeps its request open: it is ready once the log's first line is in.
        if (path === '/ui/log') await page.waitForSelector('#log-lines:has-text("monitor started")');
        else await page.waitForLoadState('networkidle');
        const sizes = await page.evaluate(`(() => {
          const main = document.querySelector('main');
          const links = [...document.querySelectorAll('header a')].map((a) => a.getBoundingClientRect().right);
          return { page: document.documentElement.scrollWidth, main: main.scrollWidth, mainBox: main.clientWidth, links: Math.max(...links) };
        })()`) as { page: number; main: number; mainBox: number; links: number };
        expect(sizes.page, path).toBeLessThanOrEqual(width);
        expect(sizes.main, path).toBeLessThanOrEqual(sizes.mainBox);
        expect(sizes.links, path).toBeLessThanOrEqual(width);
      }
      await page.goto(`${ui.agent.url}/ui/services/payments-gateway-with-a-long-name`);
      await page.waitForSelector('[data-action="check-pass"]');
      await screenshot(page, 'ui-narrow');
      await page.click('[data-action="check-pass"]');
      await confirm(page, 'passing');
      await page.waitForSelector('[data-view="service-checks"] tr[data-status="passing"]');
    } finally {
      await page.close();
    }
  });
});
