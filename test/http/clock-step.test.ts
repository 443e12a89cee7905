// Goal: a wall clock set back or forward does not stretch or cut lock delays by the step. Entries of the
// log carry a time that never goes back; stamped straight from the wall clock, it stood still after a step
// back until the wall clock caught up with the last entry (a 2 s lock delay lasted the hour, restarts
// included), and jumped with a step forward (ending every lock delay at once). Now entry time follows the
// interval clock, slewed towards the wall clock: a lock delay lasts from two thirds to twice its length,
// for a plain acquire and for a queued one (`?acquire&wait=`); both are shown on an agent restarted on a
// clock an hour behind its log, and on a running agent whose clock is stepped (libfaketime, which leaves
// the monotonic clock alone). There, a service whose check stays critical is also deregistered after its
// DeregisterCriticalServiceAfter, not after the step.
import { existsSync, mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
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
async function delayedLock(key: string, delay: string, on: Agent = agent): Promise<void> {
  const c = client(on);
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
    expect(Date.now() - started).toBeLessThan(6_000); // twice the delay, and the polling
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

describe('a running agent whose wall clock is stepped', () => {
  const dir = mkdtempSync(join(tmpdir(), 'roster-clock-step-'));
  const offset = join(dir, 'offset');
  let stepped: Agent;

  beforeAll(async () => {
    writeFileSync(offset, '+0');
    const config = join(dir, 'config.json');
    writeFileSync(config, JSON.stringify({ check_reap_interval: '500ms', check_deregister_min: '1s' }));
    stepped = await startAgent({
      args: ['--config-file', config],
      env: { LD_PRELOAD: libfaketime, FAKETIME_TIMESTAMP_FILE: offset, FAKETIME_NO_CACHE: '1', FAKETIME_DONT_FAKE_MONOTONIC: '1' },
    });
  }, 60_000);

  afterAll(async () => {
    await stepped?.stop();
    stepped?.cleanup();
    rmSync(dir, { recursive: true, force: true });
  });

  /** Seconds from now until `session` acquires `key` (polling every 250 ms, at most 15 s); -1 if it never does. */
  async function secondsToAcquire(key: string, session: string): Promise<number> {
    const c = client(stepped);
    const started = Date.now();
    while (Date.now() - started < 15_000) {
      if ((await c.put(`/v1/kv/${key}?acquire=${session}`, 'mine')).text === 'true') return (Date.now() - started) / 1000;
      await sleep(250);
    }
    return -1;
  }

  test('set back an hour: a service whose check stays critical is deregistered after DeregisterCriticalServiceAfter, not the hour', async () => {
    const c = client(stepped);
    const service = { ID: 'reaped', Name: 'reaped', Check: { CheckID: 'reaped-ttl', TTL: '60s', Status: 'critical', DeregisterCriticalServiceAfter: '2s' } };
    expect((await c.put('/v1/agent/service/register', service)).status).toBe(200);
    writeFileSync(offset, '-1h');
    const started = Date.now();
    while (Date.now() - started < 15_000 && 'reaped' in (await c.get('/v1/agent/services')).json()) await sleep(250);
    expect((await c.get('/v1/agent/services')).json()).not.toHaveProperty('reaped');
    expect(Date.now() - started).toBeLessThan(10_000);
  }, 30_000);

  test('set back an hour: a 2 s lock delay ends within twice its length', async () => {
    writeFileSync(offset, '-1h');
    await delayedLock('stepped/back', '2s', stepped);
    const next = await client(stepped).session({});
    const took = await secondsToAcquire('stepped/back', next);
    expect(took).toBeGreaterThan(0);
    expect(took).toBeLessThan(6); // twice the delay, and the polling
  }, 30_000);

  test('then two hours forward, during a 4 s lock delay: the delay still holds, and ends within its bounds', async () => {
    const c = client(stepped);
    await delayedLock('stepped/forward', '4s', stepped);
    writeFileSync(offset, '+1h');
    const next = await c.session({});
    expect(expectError(await c.put(`/v1/kv/stepped/forward?acquire=${next}`, 'mine'), 409, 1025).details.reason).toBe('lock-delay');
    const took = await secondsToAcquire('stepped/forward', next);
    expect(took).toBeGreaterThan(1.5); // two thirds of the delay, less the time since it began
    expect(took).toBeLessThan(6);
  }, 30_000);
});
