// Goal: a data dir removed or moved away while the agent runs loses nothing acknowledged also when the
// next commit rolls to a new segment (the current one is full): the roll does not make its file in a dir
// that is gone (nor fail the log for good on it), the dir is made again within seconds and writes resume,
// and after a SIGKILL and a start on the same path every acknowledged write is there.
import { closeSync, openSync, readdirSync, readSync, renameSync, rmSync, statSync } from 'node:fs';
import { join } from 'node:path';
import { afterEach, describe, expect, test } from 'vitest';
import { call, expectError, startAgent, tempDataDir, type Agent } from '../support/agent.ts';

const started: Agent[] = [];
const dirs: string[] = [];
afterEach(async () => {
  for (const a of started.splice(0)) await a.kill9();
  for (const d of dirs.splice(0)) rmSync(d, { recursive: true, force: true });
});

/** The agent's segment size (src/wal/wal.ts): the commit after one that reaches it rolls first. */
const segmentBytesMax = 64 * 1024 * 1024;
/** Below kv_max_value_size (512 KiB); stored base64, so about 100 of them fill a segment. */
const valueBytes = 500_000;
const keys = 20;

async function agentOn(dataDir: string): Promise<Agent> {
  const agent = await startAgent({ dataDir });
  started.push(agent);
  return agent;
}

/** Bytes of commits in the newest segment: the offset past its last byte that is not zero (the rest is reserved space). */
function segmentUsed(dataDir: string): number {
  const wal = join(dataDir, 'wal');
  const path = join(wal, readdirSync(wal).filter((n) => n.endsWith('.seg')).sort().at(-1)!);
  const fd = openSync(path, 'r');
  try {
    const chunk = Buffer.alloc(1 << 20);
    for (let end = statSync(path).size; end > 0;) {
      const start = Math.max(0, end - chunk.length);
      const n = readSync(fd, chunk, 0, end - start, start);
      for (let k = n - 1; k >= 0; k--) if (chunk[k] !== 0) return start + k + 1;
      end = start;
    }
    return 0;
  } finally {
    closeSync(fd);
  }
}

const valueOf = (i: number) => `${i}:`.padEnd(valueBytes, String.fromCharCode(97 + (i % 26)));

describe.each(['removed', 'moved'] as const)('a data dir %s just before a segment roll', (how) => {
  test('the roll meets it as a lost dir: made again, writes resume, nothing acknowledged lost after a SIGKILL', async () => {
    const parent = tempDataDir();
    dirs.push(parent);
    const dataDir = join(parent, 'data');
    const agent = await agentOn(dataDir);
    /** The last acknowledged value of each key. */
    const last = new Map<string, string>();
    let i = 0;
    const put = async () => {
      const key = `big/${i % keys}`;
      const value = valueOf(i++);
      const r = await call(agent.url, 'PUT', `/v1/kv/${key}`, value);
      if (r.status === 200) last.set(key, value);
      return r;
    };
    while (segmentUsed(dataDir) < segmentBytesMax) expect((await put()).status).toBe(200);

    if (how === 'removed') rmSync(dataDir, { recursive: true, force: true, maxRetries: 5, retryDelay: 20 });
    else renameSync(dataDir, join(parent, 'data.moved'));
    // The write that meets it rolls first: refused as for any lost dir, not as a failed log.
    expect(expectError(await put(), 503, 1016).message).toMatch(/data dir was removed or moved/);
    const deadline = Date.now() + 15_000;
    let answer = await put();
    while (answer.status !== 200 && Date.now() < deadline) {
      expectError(answer, 503, 1016);
      await new Promise((r) => setTimeout(r, 200));
      answer = await put();
    }
    expect(answer.status).toBe(200);
    for (let k = 0; k < keys; k++) expect((await put()).status).toBe(200);
    expect(agent.output()).not.toMatch(/WAL failed/);

    await agent.kill9();
    const again = await agentOn(dataDir);
    const wrong: string[] = [];
    for (const [key, value] of last) if ((await call(again.url, 'GET', `/v1/kv/${key}?raw`)).text !== value) wrong.push(key);
    expect(wrong).toEqual([]);
    expect(last.size).toBe(keys);
  }, 180_000);
});
