// Goal: the floor server bench:compare measures Roster against (bench/floor-server.ts) really is a durable
// lock server for the calls the bench makes: a lock is held by one session at a time, a release by anyone
// else is refused, a queued acquire is handed the lock by the release, a destroyed session lets go of its
// locks, and every answered write has gone through its log file (one group-commit frame, crc and all).
import { readFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { crc32 } from 'node:zlib';
import { afterAll, beforeAll, expect, test } from 'vitest';
import { startFloor, type FloorServer } from '../../bench/peers/floor.ts';

let floor: FloorServer;
beforeAll(async () => { floor = await startFloor(tmpdir()); }, 60_000);
afterAll(async () => { await floor?.stop(); });

const call = async (method: string, path: string, body?: string) => {
  const res = await fetch(`${floor.url}${path}`, { method, body });
  return { status: res.status, text: await res.text() };
};
const session = async () => (JSON.parse((await call('PUT', '/v1/session/create', '{}')).text) as { ID: string }).ID;

test('one holder at a time; only the holder releases; a destroyed session lets go', async () => {
  const [a, b] = [await session(), await session()];
  expect(await call('PUT', `/v1/kv/k1?acquire=${a}`, 'x')).toEqual({ status: 200, text: 'true' });
  expect(await call('PUT', `/v1/kv/k1?acquire=${a}`, 'x')).toEqual({ status: 200, text: 'true' });
  expect(await call('PUT', `/v1/kv/k1?acquire=${b}`, 'x')).toEqual({ status: 200, text: 'false' });
  expect(await call('PUT', `/v1/kv/k1?release=${b}`)).toEqual({ status: 200, text: 'false' });
  expect(await call('PUT', `/v1/kv/k1?release=${a}`)).toEqual({ status: 200, text: 'true' });
  expect(await call('PUT', `/v1/kv/k1?acquire=${b}`, 'x')).toEqual({ status: 200, text: 'true' });
  expect(await call('PUT', `/v1/session/destroy/${b}`)).toEqual({ status: 200, text: 'true' });
  expect(await call('PUT', `/v1/kv/k1?acquire=${a}`, 'x')).toEqual({ status: 200, text: 'true' });
  expect(await call('PUT', '/v1/kv/k1?acquire=nobody', 'x')).toMatchObject({ status: 400 });
  expect(await call('GET', '/v1/kv/k1')).toMatchObject({ status: 404 });
});

test('a queued acquire is handed the lock by the release, and refused when its wait ends first', async () => {
  const [a, b, c] = [await session(), await session(), await session()];
  expect((await call('PUT', `/v1/kv/k2?acquire=${a}`, 'x')).text).toBe('true');
  const waited = call('PUT', `/v1/kv/k2?acquire=${b}&wait=5000ms`, 'x');
  await new Promise((r) => setTimeout(r, 100));
  expect((await call('PUT', `/v1/kv/k2?release=${a}`)).text).toBe('true');
  expect(await waited).toEqual({ status: 200, text: 'true' });
  expect(await call('PUT', `/v1/kv/k2?acquire=${c}&wait=100ms`, 'x')).toEqual({ status: 200, text: 'false' });
  // A waiter whose session is destroyed meanwhile is answered when the lock is let go, not left waiting.
  const d = await session();
  const orphan = call('PUT', `/v1/kv/k2?acquire=${d}&wait=5000ms`, 'x');
  await new Promise((r) => setTimeout(r, 100));
  expect((await call('PUT', `/v1/session/destroy/${d}`)).text).toBe('true');
  expect((await call('PUT', `/v1/kv/k2?release=${b}`)).text).toBe('true');
  expect((await orphan).status).toBe(400);
});

test('every answered write is in the log file as a frame with its crc', async () => {
  const a = await session();
  expect((await call('PUT', `/v1/kv/logged-key?acquire=${a}`, 'x')).text).toBe('true');
  const log = readFileSync(join(floor.dataDir, 'floor.log'));
  const entries: { t: string; key?: string }[] = [];
  for (let at = 0; at + 8 <= log.length;) {
    const bytes = log.readUInt32LE(at);
    if (bytes === 0) break;
    const payload = log.subarray(at + 8, at + 8 + bytes);
    expect(crc32(payload)).toBe(log.readUInt32LE(at + 4));
    entries.push(...(JSON.parse(payload.toString()) as { t: string }[]));
    at += 8 + bytes;
  }
  expect(entries).toContainEqual(expect.objectContaining({ t: 'acquire', key: 'logged-key', session: a }));
});
