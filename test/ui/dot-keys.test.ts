// Goal: keys with `.` and `..` segments, which the API keeps as written (`tmp/../secret/db` beside
// `secret/db`), in Debian's Chromium against a started agent. A browser resolves such segments in a URL
// (`%2E%2E` too), so the dashboard writes them escaped (`~..`): every link to such a key, folder or lock
// lands on that key and no other, the address opens it again when loaded afresh, and Edit and Delete act
// on it while the key its segments would resolve to stays untouched.
import type { Page } from 'playwright-core';
import { describe, expect, test } from 'vitest';
import { confirm, ok, useAgentAndBrowser } from './browser.ts';

const ui = useAgentAndBrowser();

/** One KV operation through `PUT /v1/txn`: the key travels in the body, so no URL resolves its dots. */
async function txn(op: Record<string, unknown>): Promise<{ status: number; text: string }> {
  return ui.c.put('/v1/txn', [{ KV: op }]);
}

/** The key's value as text, or undefined when it does not exist. */
async function value(key: string): Promise<string | undefined> {
  const r = await txn({ Verb: 'get-or-empty', Key: key });
  const kv = (JSON.parse(r.text) as { Results: { KV: { Value: string | null; ModifyIndex: number } }[] }).Results[0]!.KV;
  return kv.ModifyIndex === 0 ? undefined : Buffer.from(kv.Value ?? '', 'base64').toString('utf8');
}

const b64 = (s: string) => Buffer.from(s).toString('base64');
const pathname = (page: Page) => new URL(page.url()).pathname;

describe('keys with `.` and `..` segments', () => {
  test('links, a fresh load, Edit and Delete reach the key itself, never the one its dots resolve to', async () => {
    await ok(ui.c.put('/v1/kv/secret/db', 'REAL'), 'secret/db');
    await ok(txn({ Verb: 'set', Key: 'tmp/../secret/db', Value: b64('junk') }), 'tmp/../secret/db');
    await ok(txn({ Verb: 'set', Key: 'tmp/./x', Value: b64('dot') }), 'tmp/./x');
    await ui.withPage('/ui/kv/tmp/', async (page) => {
      await page.waitForSelector('tr[data-kv="tmp/../"]');
      expect(await page.locator('tr[data-kv="tmp/./"]').count()).toBe(1);
      await page.click('tr[data-kv="tmp/../"] a');
      await page.waitForSelector('tr[data-kv="tmp/../secret/"]');
      expect(pathname(page)).toBe('/ui/kv/tmp/~../');
      await page.click('tr[data-kv="tmp/../secret/"] a');
      await page.click('tr[data-kv="tmp/../secret/db"] a');
      await page.waitForSelector('#kv-value:text-is("junk")');
      expect(pathname(page)).toBe('/ui/kv/tmp/~../secret/db');
      expect(await page.getAttribute('[data-key]', 'data-key')).toBe('tmp/../secret/db');
      // The crumbs lead back to the `..` folder, not to the root.
      await page.click('.crumbs a:text-is("..")');
      await page.waitForSelector('tr[data-kv="tmp/../secret/"]');
      expect(pathname(page)).toBe('/ui/kv/tmp/~../');
      // A fresh load of the address opens the same key.
      await page.goto(`${ui.agent.url}/ui/kv/tmp/~../secret/db`);
      await page.waitForSelector('#kv-value:text-is("junk")');
      await page.click('#kv-edit-button');
      await page.waitForSelector('#kv-edit:not([hidden])');
      expect(await page.inputValue('#kv-edit')).toBe('junk');
      await page.fill('#kv-edit', 'edited');
      await page.click('#kv-save');
      await confirm(page, 'Save tmp/../secret/db');
      await page.waitForSelector('#kv-value:text-is("edited")');
      expect(await value('tmp/../secret/db')).toBe('edited');
      expect(await value('secret/db')).toBe('REAL');
      await page.click('[data-action="delete-key"]');
      await confirm(page, 'Delete the key tmp/../secret/db');
      await page.waitForURL('**/ui/kv/tmp/~../secret/');
      expect(await value('tmp/../secret/db')).toBeUndefined();
      expect(await value('secret/db')).toBe('REAL');
    });
    await ui.withPage('/ui/kv/tmp/~./', async (page) => {
      await page.waitForSelector('tr[data-kv="tmp/./x"]');
      await page.click('tr[data-kv="tmp/./x"] a');
      await page.waitForSelector('#kv-value:text-is("dot")');
      expect(pathname(page)).toBe('/ui/kv/tmp/~./x');
    });
  });

  test('a session\'s lock on `a/../../services` leads to that lock, not to the Services page', async () => {
    const sid = await ui.c.session({ Name: 'dots', TTL: '60s' });
    await ok(txn({ Verb: 'lock', Key: 'a/../../services', Value: b64('held'), Session: sid }), 'lock');
    await ui.withPage('/ui/sessions', async (page) => {
      await page.click('[data-lock="a/../../services"]');
      await page.waitForSelector('[data-page="lock"]');
      expect(pathname(page)).toBe('/ui/locks/a/~../~../services');
      expect(await page.getAttribute('[data-page="lock"]', 'data-key')).toBe('a/../../services');
      await page.waitForSelector(`[data-page="lock"] [data-holder="${sid}"]`);
      await page.waitForSelector('[data-no-queue]');
      await page.click('[data-page="lock"] a:text-is("a/../../services")');
      await page.waitForSelector('[data-key="a/../../services"] #kv-value:text-is("held")');
    });
  });

  test('a key whose segment is `~..` stays apart from `..`; ordinary keys keep their addresses', async () => {
    await ok(txn({ Verb: 'set', Key: 'esc/~../k', Value: b64('tilde') }), 'esc/~../k');
    await ok(txn({ Verb: 'set', Key: 'esc/../k', Value: b64('dots') }), 'esc/../k');
    await ok(ui.c.put('/v1/kv/esc/plain.txt', 'plain'), 'plain');
    await ui.withPage('/ui/kv/esc/~~../k', async (page) => {
      await page.waitForSelector('#kv-value:text-is("tilde")');
    });
    await ui.withPage('/ui/kv/esc/~../k', async (page) => {
      await page.waitForSelector('#kv-value:text-is("dots")');
    });
    await ui.withPage('/ui/kv/esc/plain.txt', async (page) => {
      await page.waitForSelector('#kv-value:text-is("plain")');
    });
  });
});
