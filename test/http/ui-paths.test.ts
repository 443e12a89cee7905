// Goal: a dashboard address is split into segments as sent and each is decoded on its own, so the page of
// a service or node whose name holds `/../` (`/ui/services/a%2F..%2Fb`) loads when reloaded or shared, as
// any page of the dashboard does (its index.html); while a segment that is `..` once decoded is still
// refused, and no encoded separator reaches a file outside the dashboard's dir.
import { mkdirSync, mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, beforeAll, expect, test } from 'vitest';
import { startAgent, type Agent } from '../support/agent.ts';
import { rawExchange } from '../support/raw-http.ts';

const index = '<!doctype html><title>dashboard</title>';
let dir: string;
let agent: Agent;

beforeAll(async () => {
  dir = mkdtempSync(join(tmpdir(), 'roster-ui-paths-'));
  mkdirSync(join(dir, 'ui', 'assets'), { recursive: true });
  writeFileSync(join(dir, 'ui', 'index.html'), index);
  writeFileSync(join(dir, 'ui', 'assets', 'a b.js'), 'console.log(1)');
  writeFileSync(join(dir, 'secret.txt'), 'SECRET-OUTSIDE');
  agent = await startAgent({ args: ['--ui-dir', join(dir, 'ui')] });
});

afterAll(async () => {
  await agent?.stop();
  agent?.cleanup();
  rmSync(dir, { recursive: true, force: true });
});

/** A GET with the path sent exactly as written (fetch would resolve `..` and `%2E%2E` itself). */
async function rawGet(path: string): Promise<{ status: number; body: string }> {
  const got = await rawExchange(agent.url, `GET ${path} HTTP/1.1\r\nHost: localhost\r\n\r\n`);
  expect(got.answers, path).toHaveLength(1);
  return got.answers[0]!;
}

test('the page of a service or node named with an encoded /../ reloads as the dashboard', async () => {
  for (const path of ['/ui/services/a%2F..%2Fb', '/ui/nodes/x%2F..%2Fy', '/ui/services/%2E%2E%2Fb', '/ui/kv/a%5Cb', '/ui/services/a%2f.']) {
    const r = await rawGet(path);
    expect(r.status, path).toBe(200);
    expect(r.body, path).toBe(index);
  }
});

test('a file is found by its segments decoded one by one', async () => {
  expect((await rawGet('/ui/assets/a%20b.js')).body).toBe('console.log(1)');
  expect((await rawGet('/ui/./assets/%2E/a%20b.js')).body).toBe('console.log(1)');
});

test('a segment that is .. once decoded is refused; an encoded separator reaches no file outside the dir', async () => {
  for (const path of ['/ui/../secret.txt', '/ui/assets/../../secret.txt', '/ui/%2e%2e/secret.txt', '/ui/services/%2E%2E/%2E%2E/secret.txt']) {
    const r = await rawGet(path);
    expect(r.status, path).toBe(400);
    expect(JSON.parse(r.body).code, path).toBe(1022);
  }
  for (const path of ['/ui/..%2Fsecret.txt', '/ui/..%5Csecret.txt', '/ui/%2E%2E%2F%2E%2E%2Fsecret.txt', '/ui/secret.txt%00']) {
    const r = await rawGet(path);
    expect([r.status, r.body], path).toEqual([200, index]);
  }
  // Under assets/ a name that is no file is 404, as any missing script is.
  for (const path of ['/ui/assets/..%2F..%2Fsecret.txt', '/ui/assets/x%5Cy.js']) {
    const r = await rawGet(path);
    expect(r.status, path).toBe(404);
    expect(r.body, path).not.toContain('SECRET');
  }
});
