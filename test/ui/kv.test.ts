// Goal: the dashboard's KV browser in Debian's Chromium against a started agent. Folders by `/` with
// their keys, live as keys come and go; a key's value as text, JSON and base64, its exact uint64 flags,
// its lock holder and LockIndex (live as a session acquires and releases it); editing with a CAS-safe
// save (a save after someone else's write is refused, shows why, and overwrites nothing; bad JSON or
// flags are refused before anything is sent); creating a key never overwrites one; deleting a key and a
// folder (recursive) ask first, and Cancel deletes nothing. With authentication on, a token that may
// read only part of the store gets the agent's refusal for the rest, and its own part.
import type { Page } from 'playwright-core';
import { describe, expect, test } from 'vitest';
import { TokenAuthority, type Rule } from '../../src/auth/index.ts';
import { call, startAgent } from '../support/agent.ts';
import { confirm, confirmRefused, ok, openPage, screenshot, useAgentAndBrowser } from './browser.ts';

const ui = useAgentAndBrowser();

/** The key's entry over HTTP, or undefined when it does not exist. */
async function entry(key: string): Promise<{ value: string; flags: string; index: number } | undefined> {
  const r = await ui.c.get(`/v1/kv/${key}`);
  if (r.status === 404) return undefined;
  const e = r.json<{ Value: string | null; ModifyIndex: number }[]>()[0]!;
  return { value: Buffer.from(e.Value ?? '', 'base64').toString('utf8'), flags: /"Flags":(\d+)/.exec(r.text)![1]!, index: e.ModifyIndex };
}

const rows = (page: Page) => page.$$eval('tr[data-kv]', (trs) => trs.map((r) => r.getAttribute('data-kv')));

describe('the KV browser', () => {
  test('folders by `/`: sub-folders first, then keys, with lock counts; live as keys come and go', async () => {
    await ok(ui.c.put('/v1/kv/app/config', '{"replicas":3,"image":"web:1.4"}'), 'config');
    await ok(ui.c.put('/v1/kv/app/db/host', 'db.internal'), 'host');
    await ok(ui.c.put('/v1/kv/app/db/port', '5432'), 'port');
    await ok(ui.c.put('/v1/kv/top', 'level'), 'top');
    await ui.withPage('/ui/kv/', async (page) => {
      await page.waitForSelector('tr[data-kv="app/"]');
      expect(await rows(page)).toEqual(['app/', 'top']);
      expect(await page.textContent('tr[data-kv="app/"]')).toContain('3 keys');
      await page.click('tr[data-kv="app/"] a');
      await page.waitForSelector('tr[data-kv="app/db/"]');
      expect(new URL(page.url()).pathname).toBe('/ui/kv/app/');
      expect(await rows(page)).toEqual(['app/db/', 'app/config']);
      expect(await page.textContent('.crumbs')).toContain('(root)');
      // A key written elsewhere appears; a deleted one goes.
      await ok(ui.c.put('/v1/kv/app/feature', 'on'), 'feature');
      await page.waitForSelector('tr[data-kv="app/feature"]');
      await ok(ui.c.del('/v1/kv/app/feature'), 'delete feature');
      await page.waitForSelector('tr[data-kv="app/feature"]', { state: 'detached' });
      await page.click('tr[data-kv="app/db/"] a');
      await page.waitForSelector('tr[data-kv="app/db/port"]');
      expect(await rows(page)).toEqual(['app/db/host', 'app/db/port']);
      expect(await page.textContent('tr[data-kv="app/db/host"]')).toContain('11 B');
      await screenshot(page, 'ui-kv');
      // The crumbs lead back up.
      await page.click('.crumbs a:text-is("(root)")');
      await page.waitForSelector('tr[data-kv="top"]');
    });
  });

  test('a key as text, JSON and base64; exact uint64 flags; a binary value offers base64', async () => {
    await ok(ui.c.put('/v1/kv/app/flagged?flags=3304740253564472344', '{"a":[1,2]}'), 'flagged');
    await ok(ui.c.put('/v1/kv/app/blob', Buffer.from([0xff, 0x00, 0xfe])), 'blob');
    await ui.withPage('/ui/kv/app/flagged', async (page) => {
      await page.waitForSelector('#kv-value[data-mode="json"]');
      expect(await page.textContent('#kv-value')).toBe('{\n  "a": [\n    1,\n    2\n  ]\n}');
      expect(await page.textContent('#kv-flags-shown')).toBe('3304740253564472344');
      await screenshot(page, 'ui-kv-key');
      await page.click('#view-text');
      await page.waitForSelector('#kv-value[data-mode="text"]');
      expect(await page.textContent('#kv-value')).toBe('{"a":[1,2]}');
      await page.click('#view-base64');
      expect(await page.textContent('#kv-value')).toBe(Buffer.from('{"a":[1,2]}').toString('base64'));
    });
    await ui.withPage('/ui/kv/app/blob', async (page) => {
      await page.waitForSelector('#kv-value[data-mode="base64"]');
      expect(await page.textContent('#kv-value')).toBe('/wD+');
      await page.click('#view-text');
      expect(await page.textContent('#kv-value-note')).toContain('not UTF-8');
    });
  });

  test('edit and save with CAS; a save after another write is refused and overwrites nothing', async () => {
    await ok(ui.c.put('/v1/kv/app/edit', 'one'), 'edit');
    await ui.withPage('/ui/kv/app/edit', async (page) => {
      await page.waitForSelector('#kv-value');
      await page.click('#kv-edit-button');
      await page.waitForSelector('#kv-editor:not([hidden])');
      expect(await page.inputValue('#kv-edit')).toBe('one');
      await page.fill('#kv-edit', 'two');
      await page.fill('#kv-flags', '18446744073709551615');
      await page.click('#kv-save');
      await confirm(page, 'check-and-set');
      await page.waitForSelector('#flash:text("Saved app/edit")');
      expect(await entry('app/edit')).toMatchObject({ value: 'two', flags: '18446744073709551615' });
      await page.waitForSelector('#kv-value:text-is("two")');

      // Opened at one index, written by someone else, then saved: refused, and the other write stays.
      await page.click('#kv-edit-button');
      await page.fill('#kv-edit', 'mine');
      await ok(ui.c.put('/v1/kv/app/edit', 'theirs'), 'their write');
      await page.waitForSelector('#kv-stale:not([hidden])');
      await page.click('#kv-save');
      await confirmRefused(page, 'check-and-set', 'Not saved');
      expect((await entry('app/edit'))?.value).toBe('theirs');
      expect(await page.inputValue('#kv-edit')).toBe('mine');
    });
  });

  test('bad JSON or flags are refused in the page, before anything is sent', async () => {
    await ok(ui.c.put('/v1/kv/app/json', '{"ok":true}'), 'json');
    const before = await entry('app/json');
    await ui.withPage('/ui/kv/app/json', async (page) => {
      await page.click('#kv-edit-button');
      await page.waitForSelector('#kv-editor:not([hidden])');
      expect(await page.getAttribute('#edit-json', 'class')).toContain('active');
      await page.fill('#kv-edit', '{"ok": tru');
      await page.click('#kv-save');
      await page.waitForSelector('#kv-edit-error:not([hidden])');
      expect(await page.textContent('#kv-edit-error')).toContain('Not valid JSON');
      expect(await page.isVisible('#confirm')).toBe(false);
      await page.fill('#kv-edit', '{"ok": false}');
      await page.fill('#kv-flags', '-1');
      await page.click('#kv-save');
      expect(await page.textContent('#kv-edit-error')).toContain('Flags must be');
      expect(await page.isVisible('#confirm')).toBe(false);
      // Base64 mode takes base64 only.
      await page.fill('#kv-flags', '0');
      await page.click('#edit-base64');
      await page.fill('#kv-edit', 'not base64!');
      await page.click('#kv-save');
      expect(await page.textContent('#kv-edit-error')).toContain('Not valid base64');
    });
    expect(await entry('app/json')).toEqual(before);
  });

  test('creating a key never overwrites one; deleting a key asks first and Cancel keeps it', async () => {
    await ui.withPage('/ui/kv/app/', async (page) => {
      await page.waitForSelector('tr[data-kv="app/config"]');
      await page.fill('#kv-new-name', 'created');
      await page.fill('#kv-new-value', 'fresh');
      await page.click('#kv-new button[type="submit"]');
      await confirm(page, 'Create the key app/created');
      await page.waitForURL('**/ui/kv/app/created');
      expect((await entry('app/created'))?.value).toBe('fresh');
      await page.goBack();
      await page.waitForSelector('tr[data-kv="app/created"]');
      await page.fill('#kv-new-name', 'created');
      await page.fill('#kv-new-value', 'again');
      await page.click('#kv-new button[type="submit"]');
      await confirmRefused(page, 'Create the key app/created', 'exists already');
      expect((await entry('app/created'))?.value).toBe('fresh');

      await page.click('tr[data-kv="app/created"] [data-action="delete-key"]');
      await page.waitForSelector('#confirm[open]');
      await page.click('#confirm-cancel');
      expect(await entry('app/created')).toBeDefined();
      await page.click('tr[data-kv="app/created"] [data-action="delete-key"]');
      await confirm(page, 'Delete the key app/created');
      await page.waitForSelector('tr[data-kv="app/created"]', { state: 'detached' });
      expect(await entry('app/created')).toBeUndefined();
    });
  });

  test('deleting a folder deletes everything under it, after a confirmation that counts the keys', async () => {
    for (const k of ['a', 'b', 'deep/c']) await ok(ui.c.put(`/v1/kv/gone/${k}`, k), k);
    await ok(ui.c.put('/v1/kv/gonespare', 'stays'), 'spare');
    await ui.withPage('/ui/kv/gone/', async (page) => {
      await page.waitForSelector('tr[data-kv="gone/deep/"]');
      await page.click('[data-action="delete-folder"]');
      await confirm(page, 'Delete gone/ and everything under it (3 keys)');
      await page.waitForURL(/\/ui\/kv\/$/);
      await page.waitForSelector('tr[data-kv="gonespare"]');
      expect(await rows(page)).not.toContain('gone/');
    });
    expect((await ui.c.get('/v1/kv/gone/?recurse')).status).toBe(404);
    expect((await entry('gonespare'))?.value).toBe('stays');
  });

  test('the lock holder and LockIndex, live as a session acquires, releases and acquires again', async () => {
    await ok(ui.c.put('/v1/kv/locks/leader', 'none'), 'leader');
    const sid = await ui.c.session({ Name: 'kv-ui', TTL: '60s' });
    await ui.withPage('/ui/kv/locks/leader', async (page) => {
      await page.waitForSelector('#kv-lockindex:text-is("0")');
      expect(await ok(ui.c.put(`/v1/kv/locks/leader?acquire=${sid}`, 'me'), 'acquire')).toBe('true');
      await page.waitForSelector(`[data-holder="${sid}"]`);
      expect(await page.textContent('#kv-lockindex')).toBe('1');
      await page.click(`[data-holder="${sid}"] a`);
      await page.waitForURL(`**/ui/sessions/${sid}`);
      await page.goBack();
      await page.waitForSelector(`[data-holder="${sid}"]`);
      expect(await ok(ui.c.put(`/v1/kv/locks/leader?release=${sid}`), 'release')).toBe('true');
      await page.waitForSelector('[data-holder]', { state: 'detached' });
      expect(await ok(ui.c.put(`/v1/kv/locks/leader?acquire=${sid}`, 'me'), 'again')).toBe('true');
      await page.waitForSelector('#kv-lockindex:text-is("2")');
    });
    await ui.withPage('/ui/kv/locks/', async (page) => {
      await page.waitForSelector(`tr[data-kv="locks/leader"] [data-holder="${sid}"]`);
      expect(await page.textContent('tr[data-kv="locks/leader"]')).toContain('LockIndex 2');
    });
  });

  test('a token that may read only app/: the root shows the refusal, app/ its keys', async () => {
    const secret = 'a-dashboard-kv-secret-long-enough-0123456789';
    const secured = await startAgent({ env: { ROSTER_AUTH_SECRET: secret } });
    try {
      const authority = new TokenAuthority({ secret });
      const writer = { Authorization: `Bearer ${await authority.mint({ subject: 'w', rules: [{ resource: 'key', prefix: '', access: 'write' }], ttlSeconds: 600 })}` };
      await ok(call(secured.url, 'PUT', '/v1/kv/app/mine', 'yes', writer), 'app/mine');
      await ok(call(secured.url, 'PUT', '/v1/kv/secret/theirs', 'no', writer), 'secret/theirs');
      const rules: Rule[] = [...(['service', 'node', 'session', 'agent'] as const).map((resource): Rule => ({ resource, prefix: '', access: 'read' })),
        { resource: 'key', prefix: 'app/', access: 'read' }];
      const token = await authority.mint({ subject: 'partial', rules, ttlSeconds: 600 });
      const page = await openPage(ui.browser, secured.url, '/ui/kv/', 1280, token);
      try {
        await page.waitForSelector('[data-kv-error]');
        expect(await page.textContent('[data-kv-error]')).toContain('forbidden');
        expect(await page.locator('tr[data-kv]').count()).toBe(0);
        await page.goto(`${secured.url}/ui/kv/app/`);
        await page.waitForSelector('tr[data-kv="app/mine"]');
        expect(await page.locator('[data-kv-error]').count()).toBe(0);
      } finally {
        await page.close();
      }
    } finally {
      await secured.stop();
      secured.cleanup();
    }
  });
});
