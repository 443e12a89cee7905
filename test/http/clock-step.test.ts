// Goal: a wall clock set back (an agent that ran an hour ahead, restarted on the right time) does not
// stretch lock delays by the step. Entries of the log carry a time that never goes back; before, it stood
// still until the wall clock caught up with the last entry, so a 2 s lock delay lasted the hour, restarts
// included. Now entry time goes on at half speed until the wall clock catches up: a lock delay lasts at
// most twice as long, for a plain acquire and for a queued one (`?acquire&wait=`).
import { existsSync, rmSync } from 'node:fs';
import { afterAll, beforeAll, describe, expect, test } from 'vitest';
import { client, expectError, sleep, startAgent, tempDataDir, type Agent } from '../support/agent.ts';

const libfaketime = '/usr/lib/x86_64-linux-gnu/faketime/libfaketime.so.1';
const dataDir = tempDataDir();
let agent: Agent;

beforeAll(async () => {
  if (!existsSync(libfaketime)) throw new Error(`this test needs libfaketime at ${libfaketime} (Debian: apt-get install -y faketime)`);
  // An hour ahead: its entries are stamped an hour into the future.
  const ahead = await startAgent({ dataDir, env: { LD_PRELOAD: libfaketime, FAKETIME: '+1h' } });
  const serverTime = Date.parse((await client(ahead).put('/v1/kv/written/ahead', 'x')).headers.get('x-server-time')!);
  expect(serverTime - Date.now()).toBeGreaterThan(3_500_000);
  await ahead.stop();
  agent = await startAgent({ dataDir });
}, 60_000);

afterAll(async () => {
  await agent?.stop();
  rmSync(dataDir, { recursive: true, force: true });
});

/** A lock on `key` whose holder was destroyed: the key is under a `delay` lock delay from now. */
async function delayedLock(key: string, delay: string): Promise<void> {
  const c = client(agent);
  const holder = await c.session({ LockDelay: delay });
  expect((await c.put(`/v1/kv/${key}?acquire=${holder}`, 'held')).text).toBe('true');
  expect((await c.put(`/v1/session/destroy/${holder}`)).status).toBe(200);
}

describe('after the wall clock was set back an hour', () => {
  test('a 2 s lock delay ends within twice its length, not after the hour', async () => {
    const c = client(agent);
    await delayedLock('delayed/plain', '2s');
    const next = await c.session({});
    expect(expectError(await c.put(`/v1/kv/delayed/plain?acquire=${next}`, 'mine'), 409, 1025).details.reason).toBe('lock-delay');
    const started = Date.now();
    let acquired = '';
    while (Date.now() - started < 10_000 && acquired !== 'true') {
      await sleep(250);
      acquired = (await c.put(`/v1/kv/delayed/plain?acquire=${next}`, 'mine')).text;
    }
    expect(acquired).toBe('true');
    expect(Date.now() - started).toBeLessThan(5_000);
  }, 30_000);

  test('a queued acquire gets the lock once its delay is over, well before its wait runs out', async () => {
    const c = client(agent);
    await delayedLock('delayed/queued', '2s');
    const next = await c.session({});
    const started = Date.now();
    const r = await c.put(`/v1/kv/delayed/queued?acquire=${next}&wait=20s`, 'mine');
    expect(r.text).toBe('true');
    expect(Date.now() - started).toBeLessThan(8_000);
  }, 30_000);

  test('a restart does not bring the stretched delay back', async () => {
    await delayedLock('delayed/restart', '2s');
    await agent.stop();
    agent = await startAgent({ dataDir });
    const c = client(agent);
    const next = await c.session({});
    const r = await c.put(`/v1/kv/delayed/restart?acquire=${next}&wait=20s`, 'mine');
    expect(r.text).toBe('true');
  }, 60_000);
});
