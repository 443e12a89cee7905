// Goal: a small file that inflates to more than a snapshot can hold (a gzip bomb: more than V8's longest
// string, which the payload is read back as) is refused, never inflated whole: PUT /v1/snapshot answers 400
// in each dialect's words and changes nothing, and `roster snapshot inspect` / `restore` refuse it offline
// (exit 1).
import { constants } from 'node:buffer';
import { mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { gzipSync } from 'node:zlib';
import { afterAll, beforeAll, describe, expect, test } from 'vitest';
import { client, startAgent, type Agent } from '../support/agent.ts';
import { roster } from '../cli/support.ts';

/** Zeros 64 MiB past the longest string, as gzip members of 1 MiB each (some 600 KB in all). */
function bomb(): Buffer {
  const member = gzipSync(Buffer.alloc(1 << 20), { level: 9 });
  return Buffer.concat(Array<Buffer>(Math.ceil(constants.MAX_STRING_LENGTH / (1 << 20)) + 64).fill(member));
}

const tooLarge = 'too large: it inflates to more than \\d+ bytes, more than a snapshot can hold \\(its payload is read back as one string\\)';
let seed: Agent;
let consul: Agent;
let dir: string;
let file: string;
beforeAll(async () => {
  [seed, consul] = await Promise.all([startAgent(), startAgent({ args: ['--dialect', 'consul'] })]);
  dir = mkdtempSync(join(tmpdir(), 'roster-snap-bomb-'));
  file = join(dir, 'bomb.snap');
  writeFileSync(file, bomb());
}, 60_000);
afterAll(async () => {
  for (const a of [seed, consul]) { await a?.stop(); a?.cleanup(); }
  if (dir) rmSync(dir, { recursive: true, force: true });
});

describe('a snapshot that inflates past the limit', () => {
  test('PUT /v1/snapshot: 400 in the seed dialect, nothing changed, the agent still serves', async () => {
    const c = client(seed);
    expect((await c.put('/v1/kv/before', 'kept')).status).toBe(200);
    const r = await c.put('/v1/snapshot', bomb());
    expect(r.status).toBe(400);
    expect(r.json()).toMatchObject({ code: 1022, message: expect.stringMatching(new RegExp(`^snapshot refused, nothing changed: ${tooLarge}$`)) });
    expect((await c.get('/v1/kv/before?raw')).text).toBe('kept');
  }, 60_000);

  test('PUT /v1/snapshot: 400 in Consul\'s words with --dialect consul', async () => {
    const r = await client(consul).put('/v1/snapshot', bomb());
    expect(r.status).toBe(400);
    expect(r.text).toMatch(new RegExp(`^Error restoring snapshot: ${tooLarge}`));
  }, 60_000);

  test('roster snapshot inspect and restore refuse the file offline, exit 1', async () => {
    const inspect = await roster(['snapshot', 'inspect', file], { timeoutMs: 60_000 });
    expect([inspect.code, inspect.stdout]).toEqual([1, '']);
    expect(inspect.stderr).toMatch(new RegExp(`^roster: ${file}: ${tooLarge}\\n$`));
    const restore = await roster(['snapshot', 'restore', file], { agent: seed.url, timeoutMs: 60_000 });
    expect([restore.code, restore.stderr]).toEqual([1, expect.stringMatching(new RegExp(tooLarge))]);
    expect((await client(seed).get('/v1/kv/before?raw')).text).toBe('kept');
  }, 60_000);
});
