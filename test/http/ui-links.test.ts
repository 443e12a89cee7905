// Goal: the dashboard's files are served from its dir only, whatever links it holds: a symbolic link in
// it to a file or a dir elsewhere (/etc/passwd, say) serves nothing from there — a page path falls back to
// the dashboard's index.html as any unknown page does, an asset path is 404 — while a link inside the dir,
// and the dir itself being a link (as the build makes dist/server/dist/ui), are served.
import { mkdirSync, mkdtempSync, rmSync, symlinkSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, beforeAll, expect, test } from 'vitest';
import { call, startAgent, type Agent } from '../support/agent.ts';

const index = '<!doctype html><title>dashboard</title>';
let dir: string;
let agent: Agent;

beforeAll(async () => {
  dir = mkdtempSync(join(tmpdir(), 'roster-ui-links-'));
  const real = join(dir, 'real');
  mkdirSync(join(real, 'assets'), { recursive: true });
  writeFileSync(join(real, 'index.html'), index);
  writeFileSync(join(real, 'assets', 'app-1234.js'), 'console.log(1)');
  mkdirSync(join(dir, 'outside'));
  writeFileSync(join(dir, 'outside', 'secret.txt'), 'SECRET-OUTSIDE');
  symlinkSync(join(dir, 'outside', 'secret.txt'), join(real, 'notes.txt'));
  symlinkSync(join(dir, 'outside', 'secret.txt'), join(real, 'assets', 'leak.js'));
  symlinkSync(join(dir, 'outside'), join(real, 'elsewhere'));
  symlinkSync(join(real, 'assets', 'app-1234.js'), join(real, 'assets', 'app.js'));
  symlinkSync(real, join(dir, 'linked'));
  agent = await startAgent({ args: ['--ui-dir', join(dir, 'linked')] });
});

afterAll(async () => {
  await agent?.stop();
  agent?.cleanup();
  rmSync(dir, { recursive: true, force: true });
});

test('a link leading out of the dashboard\'s dir serves nothing from there', async () => {
  for (const path of ['/ui/notes.txt', '/ui/elsewhere/secret.txt']) {
    const r = await call(agent.url, 'GET', path);
    expect(r.text, path).not.toContain('SECRET-OUTSIDE');
    expect(r.text, path).toBe(index);
  }
  const asset = await call(agent.url, 'GET', '/ui/assets/leak.js');
  expect(asset.status).toBe(404);
  expect(asset.text).not.toContain('SECRET-OUTSIDE');
});

test('a link inside the dir, and the dir itself a link, are served', async () => {
  expect((await call(agent.url, 'GET', '/ui/assets/app.js')).text).toBe('console.log(1)');
  expect((await call(agent.url, 'GET', '/ui/assets/app-1234.js')).text).toBe('console.log(1)');
  expect((await call(agent.url, 'GET', '/ui/')).text).toBe(index);
});
