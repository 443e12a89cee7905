// Goal: a client cannot grow the registry until the agent runs out of heap (V8 ends the process) or its
// snapshot passes the longest string a restart can read. Past `limits.state_bytes_max` (an estimate of the
// state's size), a started agent refuses the writes that would grow the state with 503/1016 naming the
// limit and changing nothing, and takes everything else: deletes, shorter values, releases, re-registrations,
// so the space can be freed through the API. Deletes or a reload with a higher limit make room; a restart
// counts the state again from its snapshot and log. Items are counted by what they hold: large sessions,
// services and nodes fill it as large values do.
import { writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { afterAll, beforeAll, expect, test } from 'vitest';
import { client, startAgent, tempDataDir, type Agent } from '../support/agent.ts';

const limit = 200_000;
/** 50,000 bytes, about 66,700 as stored (base64): three of them pass the limit. */
const value = 'q'.repeat(50_000);

let agent: Agent;
let configFile: string;
const dataDir = tempDataDir();

const writeLimits = (stateBytesMax: number) => writeFileSync(configFile, JSON.stringify({ limits: { state_bytes_max: stateBytesMax } }));

beforeAll(async () => {
  configFile = join(tempDataDir(), 'agent.json');
  writeLimits(limit);
  agent = await startAgent({ dataDir, args: ['--config-file', configFile] });
});

afterAll(async () => {
  await agent?.stop();
  agent?.cleanup();
});

function expectFull(r: { status: number; text: string }): void {
  expect(r.status).toBe(503);
  const body = JSON.parse(r.text) as { code: number; message: string; details: { stateBytes: number; stateBytesMax: number } };
  expect(body.code).toBe(1016);
  expect(body.message).toMatch(/^the registry is full: its state takes about \d+ bytes, at or past limits\.state_bytes_max \(200000\); delete keys/);
  expect(body.details.stateBytesMax).toBe(limit);
  expect(body.details.stateBytes).toBeGreaterThanOrEqual(limit);
}

test('past the quota, writes that grow the state are refused and change nothing; the rest goes through; deletes make room', async () => {
  const c = client(agent);
  const session = (JSON.parse((await c.put('/v1/session/create', { Name: 'holder' })).text) as { ID: string }).ID;
  expect((await c.put('/v1/agent/service/register', { Name: 'web', ID: 'web-1', Port: 80 })).status).toBe(200);
  for (let i = 0; i < 3; i++) expect((await c.put(`/v1/kv/big/${i}`, value)).status).toBe(200);
  // The state is past the limit now: a new key, a longer value, a lock with a value, a new session, a
  // new service and a transaction that sets are refused.
  expectFull(await c.put('/v1/kv/big/3', value));
  expectFull(await c.put('/v1/kv/small', 'x'));
  expectFull(await c.put('/v1/kv/big/0', `${value}more`));
  expectFull(await c.put('/v1/session/create', { Name: 'another' }));
  expectFull(await c.put('/v1/agent/service/register', { Name: 'api', ID: 'api-1', Port: 81 }));
  const setB64 = Buffer.from('x').toString('base64');
  expectFull(await c.put('/v1/txn', [{ KV: { Verb: 'set', Key: 'txn/new', Value: setB64 } }]));
  expect((await c.get('/v1/kv/big/3')).status).toBe(404);
  expect((await c.get('/v1/kv/small')).status).toBe(404);
  expect((await c.get('/v1/kv/big/0?raw')).text).toBe(value);
  // What does not grow it goes through: a shorter value, a lock step on an existing key with a shorter
  // value, its release, renewing the session, re-registering the same service, a delete.
  expect((await c.put('/v1/kv/big/1', 'short')).status).toBe(200);
  expect((await c.put(`/v1/kv/big/1?acquire=${session}`, 'tiny')).text).toBe('true');
  expect((await c.put(`/v1/kv/big/1?release=${session}`, 'tiny')).text).toBe('true');
  expect((await c.put(`/v1/session/renew/${session}`)).status).toBe(200);
  expect((await c.put('/v1/agent/service/register', { Name: 'web', ID: 'web-1', Port: 8080 })).status).toBe(200);
  // big/1 shrank by about 66,700: under the limit again, so writes are taken again.
  expect((await c.put('/v1/kv/small', 'x')).status).toBe(200);
  expect((await c.put('/v1/kv/big/3', value)).status).toBe(200);
  expectFull(await c.put('/v1/kv/big/4', value));
  expect((await c.del('/v1/kv/big/?recurse')).status).toBe(200);
  expect((await c.put('/v1/kv/big/4', value)).status).toBe(200);
});

test('a restart counts the state again; a reload with a higher limit makes room', async () => {
  const c0 = client(agent);
  for (let i = 5; i < 8; i++) await c0.put(`/v1/kv/big/${i}`, value);
  expectFull(await c0.put('/v1/kv/after', 'x'));
  expect(await agent.stop()).toBe(0);
  agent = await startAgent({ dataDir, args: ['--config-file', configFile] });
  const c = client(agent);
  expectFull(await c.put('/v1/kv/after', 'x'));
  writeLimits(10 * limit);
  expect((await c.put('/v1/agent/reload')).status).toBe(200);
  expect((await c.put('/v1/kv/after', 'x')).status).toBe(200);
});

test('a bad state_bytes_max stops the start with a clear error', async () => {
  const file = join(tempDataDir(), 'bad.json');
  writeFileSync(file, JSON.stringify({ limits: { state_bytes_max: -1 } }));
  await expect(startAgent({ args: ['--config-file', file] })).rejects.toThrow(/limits\.state_bytes_max/);
});

test('sessions, services, nodes and deleted keys count by what they hold: large ones fill the quota too', async () => {
  const file = join(tempDataDir(), 'agent.json');
  writeFileSync(file, JSON.stringify({ limits: { state_bytes_max: limit } }));
  const own = await startAgent({ args: ['--config-file', file] });
  try {
    const c = client(own);
    const big = 'n'.repeat(60_000);
    // Four take about 240,000 bytes, past the limit: the fifth is refused.
    for (let i = 0; i < 5; i++) {
      const r = await c.put('/v1/session/create', { Name: `${big}${i}` });
      if (i < 4) expect(r.status, r.text).toBe(200);
      else expectFull(r);
    }
    expectFull(await c.put('/v1/agent/service/register', { Name: 'tagged', Tags: [big] }));
    expectFull(await c.put('/v1/catalog/register', { Node: 'meta-node', Address: '10.0.0.1', NodeMeta: { m: big.slice(0, 512) } }));
    const sessions = (await c.get('/v1/session/list')).json<{ ID: string }[]>();
    expect(sessions).toHaveLength(4);
    // Destroying them makes room again.
    for (const s of sessions) expect((await c.put(`/v1/session/destroy/${s.ID}`)).status).toBe(200);
    expect((await c.put('/v1/agent/service/register', { Name: 'tagged', Tags: [big] })).status).toBe(200);
    const metrics = await c.get('/v1/agent/metrics?format=prometheus');
    const bytes = Number(/^roster_state_bytes (\d+)/m.exec(metrics.text)?.[1]);
    expect(bytes).toBeGreaterThan(60_000);
    expect(bytes).toBeLessThan(limit);
  } finally {
    await own.stop();
    own.cleanup();
  }
});
