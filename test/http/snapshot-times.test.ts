// Goal: a snapshot restores the same whatever the clock of the node that wrote it. The file's time (atMs)
// is that log's, on that node's clock; the restored state takes the restore entry's time instead, so a file
// written an hour ahead (or dated in the year 2200) does not hold the restoring agent's log time there:
// lock delays armed after the restore last their length, not until the log catches up with the file. A
// lock delay the file holds keeps what was left of it at the file's time, and a file whose delay ends
// more than the longest lock delay after its time is refused as a record no agent writes.
import { rmSync } from 'node:fs';
import { afterAll, beforeAll, describe, expect, test } from 'vitest';
import { client, expectError, sleep, startAgent, tempDataDir, type Agent } from '../support/agent.ts';
import { resignedSnapshot } from '../support/snapshot.ts';

type Data = Record<string, any>;

const hourMs = 3_600_000;
let source: Agent;
let target: Agent;
let file: Buffer;
const targetDir = tempDataDir();

beforeAll(async () => {
  [source, target] = await Promise.all([startAgent(), startAgent({ dataDir: targetDir })]);
  const c = client(source);
  const holder = await c.session({ Name: 'gone', LockDelay: '6s' });
  expect((await c.put(`/v1/kv/pending/a?acquire=${holder}`, 'held')).text).toBe('true');
  expect((await c.put(`/v1/session/destroy/${holder}`)).status).toBe(200); // a lock delay on pending/a
  const saved = await c.get('/v1/snapshot');
  expect(saved.status, saved.text).toBe(200);
  file = saved.body;
}, 60_000);

afterAll(async () => {
  for (const a of [source, target]) { await a?.stop(); a?.cleanup(); }
  rmSync(targetDir, { recursive: true, force: true });
});

/** The file as an agent whose clock put its log's time at `to(atMs)` would have written it. */
function shifted(to: (atMs: number) => number): Buffer {
  return resignedSnapshot(file, (d: Data) => {
    const at = to(d.atMs);
    d.lockDelays = d.lockDelays.map(([key, until]: [string, number]) => [key, until - d.atMs + at]);
    d.atMs = at;
  });
}

/** How long after its holder's session is destroyed a `delay` lock delay keeps a new session from `key`. */
async function delayLasts(key: string, delay: string): Promise<number> {
  const c = client(target);
  const holder = await c.session({ LockDelay: delay });
  expect((await c.put(`/v1/kv/${key}?acquire=${holder}`, 'held')).text).toBe('true');
  const next = await c.session({});
  expect((await c.put(`/v1/session/destroy/${holder}`)).status).toBe(200);
  return freeAfter(key, next);
}

/** Ms until `session` acquires `key`, retried every 100 ms for at most 20 s; each refusal must be the lock delay. */
async function freeAfter(key: string, session: string): Promise<number> {
  const c = client(target);
  const started = Date.now();
  while (Date.now() - started < 20_000) {
    const r = await c.put(`/v1/kv/${key}?acquire=${session}`, 'mine');
    if (r.text === 'true') return Date.now() - started;
    expect(expectError(r, 409, 1025).details.reason).toBe('lock-delay');
    await sleep(100);
  }
  return Infinity;
}

async function restore(body: Buffer): Promise<void> {
  const r = await client(target).put('/v1/snapshot', body);
  expect(r.status, r.text).toBe(200);
}

describe('restoring a file written by a clock that was ahead', () => {
  test('an hour ahead: a 1 s lock delay armed after the restore lasts a second, not the hour; the file\'s own delay keeps what was left', async () => {
    await restore(shifted((at) => at + hourMs));
    const next = await client(target).session({});
    const pendingLeft = await freeAfter('pending/a', next);
    expect(pendingLeft).toBeGreaterThan(3_000); // still under the 6 s delay it had at the file's time
    expect(pendingLeft).toBeLessThan(6_500);
    const lasted = await delayLasts('ld/hour', '1s');
    expect(lasted).toBeGreaterThanOrEqual(800);
    expect(lasted).toBeLessThan(3_000);
  }, 60_000);

  test('dated in the year 2200: the same, and the time survives a restart', async () => {
    await restore(shifted(() => Date.UTC(2200, 0, 1)));
    const lasted = await delayLasts('ld/2200', '1s');
    expect(lasted).toBeLessThan(3_000);
    await target.stop();
    target = await startAgent({ dataDir: targetDir });
    expect(await delayLasts('ld/restart', '1s')).toBeLessThan(3_000);
  }, 60_000);

  test('a lock delay ending far past the file\'s time is refused, naming it, and changes nothing', async () => {
    const c = client(target);
    const index = (await c.get('/v1/kv/?recurse')).headers.get('x-consul-index');
    const pinned = resignedSnapshot(file, (d: Data) => { d.lockDelays[0][1] = Date.UTC(2200, 0, 1); });
    const body = expectError(await c.put('/v1/snapshot', pinned), 400, 1022);
    expect(body.message).toMatch(/lockDelays\[0\] \(key "pending\/a"\): ends \d+ ms after the snapshot's time \(atMs \d+\), more than the longest lock delay \(60000 ms\)$/);
    expect((await c.get('/v1/kv/?recurse')).headers.get('x-consul-index')).toBe(index);
  });
});
