// Goal: a refused KV write says what refused it, in Debian's Chromium against a started agent with
// authentication on. Keys with `.` or `..` segments are written through a one-operation `PUT /v1/txn`,
// whose refusal by a rule comes back as a failed operation ("Permission denied") beside the ones a stale
// check-and-set gives: Save, Create, Delete and Delete folder on such a key that the token may only read
// say permission denied (never "changed since it was opened" or "exists already"), while a real
// check-and-set conflict on a key it may write still says the key changed, and an existing key that it
// creates again says it exists. Nothing is written in any of them.
import type { Page } from 'playwright-core';
import { describe, expect, test } from 'vitest';
import { TokenAuthority, type Rule } from '../../src/auth/index.ts';
import { call } from '../support/agent.ts';
import { confirmRefused, ok, useAgentAndBrowser } from './browser.ts';

const secret = 'a-dashboard-kv-refusals-secret-long-enough-0123456789';
const authority = new TokenAuthority({ secret });
let admin: Record<string, string> = {};
/** Read on everything; write on keys under `mine/` only. */
let token = '';

const b64 = (s: string) => Buffer.from(s).toString('base64');

/** One KV operation as the admin, through `PUT /v1/txn` (no URL resolves the key's dots). */
function txn(op: Record<string, unknown>): Promise<{ status: number; text: string }> {
  return call(ui.agent.url, 'PUT', '/v1/txn', [{ KV: op }], admin);
}

/** The key's value as text, or undefined when it does not exist. */
async function value(key: string): Promise<string | undefined> {
  const r = await txn({ Verb: 'get-or-empty', Key: key });
  const kv = (JSON.parse(r.text) as { Results: { KV: { Value: string | null; ModifyIndex: number } }[] }).Results[0]!.KV;
  return kv.ModifyIndex === 0 ? undefined : Buffer.from(kv.Value ?? '', 'base64').toString('utf8');
}

const ui = useAgentAndBrowser(async () => {
  const all = (access: Rule['access']) => (['service', 'node', 'session', 'key', 'agent'] as const).map((resource): Rule => ({ resource, prefix: '', access }));
  admin = { Authorization: `Bearer ${await authority.mint({ subject: 'admin', rules: all('write'), ttlSeconds: 600 })}` };
  token = await authority.mint({ subject: 'reader', rules: [...all('read'), { resource: 'key', prefix: 'mine/', access: 'write' }], ttlSeconds: 600 });
  await ok(txn({ Verb: 'set', Key: 'tmp/../secret/db', Value: b64('kept') }), 'tmp/../secret/db');
  await ok(txn({ Verb: 'set', Key: 'mine/../app', Value: b64('one') }), 'mine/../app');
}, { env: { ROSTER_AUTH_SECRET: secret } });

/** Opens the editor on the key page shown, types `text` and asks to save. */
async function editAndSave(page: Page, text: string): Promise<void> {
  await page.click('#kv-edit-button');
  await page.waitForSelector('#kv-editor:not([hidden])');
  await page.fill('#kv-edit', text);
  await page.click('#kv-save');
}

describe('refused KV writes through a transaction', () => {
  test('a key the token may only read: every write says permission denied and nothing changes', async () => {
    await ui.withPage('/ui/kv/tmp/~../secret/db', async (page) => {
      await page.waitForSelector('#kv-value:text-is("kept")');
      await editAndSave(page, 'changed');
      const saved = await confirmRefused(page, 'Save tmp/../secret/db', 'permission denied');
      expect(saved).toContain('may not write tmp/../secret/db');
      expect(saved).not.toContain('changed since');
      await page.click('#kv-cancel');
      await page.click('[data-action="delete-key"]');
      expect(await confirmRefused(page, 'Delete the key tmp/../secret/db', 'permission denied')).toContain('may not write tmp/../secret/db');
    }, token);
    await ui.withPage('/ui/kv/tmp/~../', async (page) => {
      await page.waitForSelector('tr[data-kv="tmp/../secret/"]');
      await page.fill('#kv-new-name', 'new');
      await page.fill('#kv-new-value', 'fresh');
      await page.click('#kv-new button[type="submit"]');
      const created = await confirmRefused(page, 'Create the key tmp/../new', 'permission denied');
      expect(created).not.toContain('exists already');
      await page.click('[data-action="delete-folder"]');
      expect(await confirmRefused(page, 'Delete tmp/../ and everything under it', 'permission denied')).toContain('may not write every key under tmp/../');
    }, token);
    expect(await value('tmp/../secret/db')).toBe('kept');
    expect(await value('tmp/../new')).toBeUndefined();
  });

  test('a key the token may write: a stale save says the key changed, a second create that it exists', async () => {
    await ui.withPage('/ui/kv/mine/~../app', async (page) => {
      await page.waitForSelector('#kv-value:text-is("one")');
      await ok(txn({ Verb: 'set', Key: 'mine/../app', Value: b64('theirs') }), 'their write');
      await page.waitForSelector('#kv-value:text-is("theirs")');
      // Opened after their write, then written again by them: the save is a stale check-and-set.
      await page.click('#kv-edit-button');
      await page.waitForSelector('#kv-editor:not([hidden])');
      await ok(txn({ Verb: 'set', Key: 'mine/../app', Value: b64('theirs again') }), 'their second write');
      await page.waitForSelector('#kv-stale:not([hidden])');
      await page.fill('#kv-edit', 'mine');
      await page.click('#kv-save');
      const saved = await confirmRefused(page, 'Save mine/../app', 'changed since it was opened');
      expect(saved).not.toContain('permission denied');
    }, token);
    await ui.withPage('/ui/kv/mine/~../', async (page) => {
      await page.waitForSelector('tr[data-kv="mine/../app"]');
      await page.fill('#kv-new-name', 'app');
      await page.fill('#kv-new-value', 'again');
      await page.click('#kv-new button[type="submit"]');
      expect(await confirmRefused(page, 'Create the key mine/../app', 'exists already')).not.toContain('permission denied');
    }, token);
    expect(await value('mine/../app')).toBe('theirs again');
  });
});
