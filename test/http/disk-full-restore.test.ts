// Goal: a restore (PUT /v1/snapshot) of a snapshot file large enough to be stored beside the WAL (an
// attachment) answers, when the data dir's disk is full, as every other write does then: 503 with
// Retry-After and code 1016 in both dialects, a message without paths, nothing logged as a failed request,
// nothing of it applied and no file of it left in the data dir, whether the attachment's write runs out of
// space part way or the log already refuses writes. Once space is freed the same restore succeeds. The
// disk is a small tmpfs filled and freed with test/support/disk.ts.
import { randomBytes } from 'node:crypto';
import { existsSync, readdirSync, rmSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, test } from 'vitest';
import { call, client, expectError, startAgent, type Agent, type HttpResult } from '../support/agent.ts';
import { mountSmallDisk, type SmallDisk } from '../support/disk.ts';
import { until } from '../support/until.ts';

const mounted = mountSmallDisk(8 * 1024);
const disk: SmallDisk | undefined = typeof mounted === 'string' ? undefined : mounted;
if (typeof mounted === 'string') console.warn(`disk-full restore tests skipped: ${mounted}`);

/** Keys of 1 KB random text in the snapshot file: about 400 KB of JSON (past the 256 KiB kept inline), as much gzipped. */
const keysInFile = 300;
/** Space left free on the filled disk: the attachment's write gets this far, then runs out. */
const leftFreeBytes = 64 * 1024;

/** The files of the agent's attachments dir (none when it was never made). */
const attachmentsOf = (agent: Agent) => {
  const dir = join(agent.dataDir, 'attachments');
  return existsSync(dir) ? readdirSync(dir) : [];
};

function expectDiskFullAnswer(agent: Agent, r: HttpResult, dialect: 'seed' | 'consul'): void {
  if (dialect === 'seed') expect(expectError(r, 503, 1016).message).toMatch(/no space left on its disk; retry later/);
  else expect(r.status, r.text).toBe(503);
  expect(r.headers.get('retry-after')).toBe('1');
  expect(r.text).toMatch(/no space left/);
  expect(r.text).not.toMatch(/ENOSPC|internal error/);
  expect(r.text).not.toContain(agent.dataDir);
}

describe.skipIf(disk === undefined)('restore on a full disk', () => {
  const agents: Agent[] = [];
  let file: Buffer;
  let seed: Agent;
  let consul: Agent;
  const targets = () => [[seed, 'seed'], [consul, 'consul']] as const;

  beforeAll(async () => {
    const source = await startAgent();
    agents.push(source);
    const c = client(source);
    for (let k = 0; k < keysInFile; k += 20) {
      await Promise.all(Array.from({ length: 20 }, (_, j) => c.put(`/v1/kv/big/${k + j}`, randomBytes(768).toString('base64'))));
    }
    const saved = await c.get('/v1/snapshot');
    expect(saved.status).toBe(200);
    file = saved.body;
    expect(file.length).toBeGreaterThan(4 * leftFreeBytes);
    seed = await startAgent({ dataDir: join(disk!.dir, 'seed') });
    consul = await startAgent({ dataDir: join(disk!.dir, 'consul'), args: ['--dialect', 'consul'] });
    agents.push(seed, consul);
    for (const [agent] of targets()) expect((await call(agent.url, 'PUT', '/v1/kv/marker', 'before')).status).toBe(200);
  }, 60_000);
  afterAll(async () => {
    disk?.free();
    for (const a of agents) { await a.stop(); a.cleanup(); }
    disk?.unmount();
  });

  test('an attachment that runs out of space part way: 503 + Retry-After, nothing applied, no file left', async () => {
    const pad = join(disk!.dir, 'pad');
    writeFileSync(pad, Buffer.alloc(leftFreeBytes));
    expect(disk!.fill()).toBeGreaterThan(0);
    rmSync(pad);
    for (const [agent, dialect] of targets()) {
      const r = await call(agent.url, 'PUT', '/v1/snapshot', file);
      expectDiskFullAnswer(agent, r, dialect);
      expect(attachmentsOf(agent)).toEqual([]);
      expect((await call(agent.url, 'GET', '/v1/kv/marker?raw')).text).toBe('before');
      expect((await call(agent.url, 'GET', '/v1/kv/big/0')).status).toBe(404);
      // The log's own reserved space still takes small writes.
      expect((await call(agent.url, 'PUT', '/v1/kv/small', 'x')).status).toBe(200);
      expect(agent.output()).not.toMatch(/request failed/);
    }
  });

  test('while the log refuses writes: the restore is refused the same way before anything is written', async () => {
    for (const [agent, dialect] of targets()) {
      let refused: HttpResult | undefined;
      for (let k = 0; k < 60 && refused === undefined; k++) {
        const r = await call(agent.url, 'PUT', `/v1/kv/fill/${k}`, 'x'.repeat(100_000));
        if (r.status !== 200) refused = r;
      }
      expect(refused?.status).toBe(503);
      disk!.fill();
      expectDiskFullAnswer(agent, await call(agent.url, 'PUT', '/v1/snapshot', file), dialect);
      expect(attachmentsOf(agent)).toEqual([]);
      expect((await call(agent.url, 'GET', '/v1/kv/marker?raw')).text).toBe('before');
      expect(agent.output()).not.toMatch(/request failed/);
    }
  });

  test('once space is freed, the same restore succeeds and leaves its one attachment', async () => {
    disk!.free();
    for (const [agent] of targets()) {
      const r = await until('the restore to succeed after space was freed', async () => {
        const put = await call(agent.url, 'PUT', '/v1/snapshot', file);
        return put.status === 200 ? put : undefined;
      }, 15_000);
      expect(r.json<{ Index: number }>().Index).toBeGreaterThan(0);
      expect((await call(agent.url, 'GET', '/v1/kv/marker')).status).toBe(404);
      expect((await call(agent.url, 'GET', `/v1/kv/big/${keysInFile - 1}`)).status).toBe(200);
      expect(attachmentsOf(agent)).toEqual([expect.stringMatching(/^[0-9a-f]{64}\.bin$/)]);
    }
  });
});
