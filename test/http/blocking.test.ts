// Goal: blocking queries and consistency modes (consul-compat §2) and the status/agent-self endpoints,
// over HTTP: what wakes a parked GET, what does not, and the index headers it answers with.
import { describe, expect, test } from 'vitest';
import { client, onFreshAgent, sleep, startAgent, type HttpResult, expectError, withAgent } from '../support/in-process.ts';
import type { Entry } from '../support/kv.ts';

type Client = ReturnType<typeof client>;

/** A blocking GET that should wake gets this long; it must answer well before it. */
const longWait = '10s';
const wellUnderLongWaitMs = 5_000;
/** A blocking GET that should NOT wake gets this long (lower bound checked, jitter may add up to wait/16). */
const shortWait = '500ms';
const shortWaitMs = 500;
/** Time given to a blocking GET to reach the server and park before the write that should wake it. */
const parkMs = 150;

let c: Client;
let seq = 0;
const uniq = (name: string) => `blk/${name}-${++seq}`;

withAgent((a) => { c = client(a); });

const index = (r: HttpResult) => Number(r.headers.get('x-consul-index'));
const b64 = (s: string) => Buffer.from(s).toString('base64');

async function ok(p: Promise<HttpResult>): Promise<void> {
  const r = await p;
  expect(r.status, r.text).toBe(200);
  expect(r.text).toBe('true');
}

/** Starts a GET and reports how long it took to answer. */
function timed(path: string): Promise<{ r: HttpResult; ms: number }> {
  const t0 = performance.now();
  return c.get(path).then((r) => ({ r, ms: performance.now() - t0 }));
}


/** Parks a GET of `path` at index n, then `write`s: the GET answers 200 well before the wait, with a higher index. */
async function expectWoken(path: string, n: number, write: () => Promise<unknown>): Promise<HttpResult> {
  const pending = timed(`${path}${path.includes('?') ? '&' : '?'}index=${n}&wait=${longWait}`);
  await sleep(parkMs);
  await write();
  const { r, ms } = await pending;
  expect(r.status).toBe(200);
  expect(ms).toBeLessThan(wellUnderLongWaitMs);
  expect(index(r)).toBeGreaterThan(n);
  return r;
}

// ------------------------------------------------------------------------------------------------
describe('blocking KV queries', () => {
  test('single key: a write to that key wakes the GET with the new value and a higher index', async () => {
    const key = uniq('wake');
    await ok(c.put(`/v1/kv/${key}`, 'old'));
    const first = await c.get(`/v1/kv/${key}`);
    const n = index(first);
    expect(n).toBe(first.json<Entry[]>()[0]!.ModifyIndex);

    const r = await expectWoken(`/v1/kv/${key}`, n, () => ok(c.put(`/v1/kv/${key}`, 'new')));
    const [e] = r.json<Entry[]>();
    expect(e!.Value).toBe(b64('new'));
    expect(index(r)).toBe(e!.ModifyIndex);
  });

  test('single key: a write to ANOTHER key does not wake it; it returns at the timeout with the same index', async () => {
    const key = uniq('nowake');
    await ok(c.put(`/v1/kv/${key}`, 'steady'));
    const first = await c.get(`/v1/kv/${key}`);
    const n = index(first);

    const pending = timed(`/v1/kv/${key}?index=${n}&wait=${shortWait}`);
    await sleep(parkMs);
    await ok(c.put(`/v1/kv/${uniq('other')}`, 'noise'));
    await ok(c.put(`/v1/kv/${key}-suffix`, 'noise')); // shares the string prefix, still another key
    const { r, ms } = await pending;
    expect(r.status).toBe(200);
    expect(ms).toBeGreaterThanOrEqual(shortWaitMs - 50);
    expect(index(r)).toBe(n);
    expect(r.text).toBe(first.text);
  });

  /**
   * Writes `<p>/a` under a new prefix p, parks a GET of `<p>/?<mode>` at its index, and writes `<p>/<key>`: the GET
   * answers 200 well before the wait with a higher index. Returns p and the answer.
   */
  async function expectPrefixWoken(name: string, mode: 'recurse' | 'keys', key: string): Promise<{ p: string; r: HttpResult }> {
    const p = uniq(name);
    await ok(c.put(`/v1/kv/${p}/a`, '1'));
    const first = await c.get(`/v1/kv/${p}/?${mode}`);
    const n = index(first);

    const r = await expectWoken(`/v1/kv/${p}/?${mode}`, n, () => ok(c.put(`/v1/kv/${p}/${key}`, '2')));
    return { p, r };
  }

  test('?recurse: a write under the prefix wakes the GET', async () => {
    const { p, r } = await expectPrefixWoken('rec', 'recurse', 'b');
    expect(r.json<Entry[]>().map((e) => e.Key)).toEqual([`${p}/a`, `${p}/b`]);
  });

  test('?keys: a write under the prefix wakes the GET', async () => {
    const { p, r } = await expectPrefixWoken('keys', 'keys', 'c/d');
    expect(r.json()).toEqual([`${p}/a`, `${p}/c/d`]);
  });

  test('?recurse: a delete under the prefix wakes the GET', async () => {
    const p = uniq('rec-del');
    await ok(c.put(`/v1/kv/${p}/a`, '1'));
    await ok(c.put(`/v1/kv/${p}/b`, '2'));
    const first = await c.get(`/v1/kv/${p}/?recurse`);
    const n = index(first);

    const pending = timed(`/v1/kv/${p}/?recurse&index=${n}&wait=${longWait}`);
    await sleep(parkMs);
    await ok(c.del(`/v1/kv/${p}/a`));
    const { r, ms } = await pending;
    expect(r.status).toBe(200);
    expect(ms).toBeLessThan(wellUnderLongWaitMs);
    expect(index(r)).toBeGreaterThan(n);
    expect(r.json<Entry[]>().map((e) => e.Key)).toEqual([`${p}/b`]);
  });

  test('missing key: a blocking GET wakes when the key is created', async () => {
    const key = uniq('missing');
    const first = await c.get(`/v1/kv/${key}`);
    expect(first.status).toBe(404);
    const n = index(first);
    expect(n).toBeGreaterThan(0);

    const r = await expectWoken(`/v1/kv/${key}`, n, () => ok(c.put(`/v1/kv/${key}`, 'born')));
    expect(r.json<Entry[]>()[0]!.Value).toBe(b64('born'));
  });

  /** A blocking GET of a new key at `at(n)` (n: its index) that nothing wakes: 200 after the wait, same data and index. */
  async function expectWaitsOut(name: string, at: (n: number) => number): Promise<void> {
    const key = uniq(name);
    await ok(c.put(`/v1/kv/${key}`, 'data'));
    const first = await c.get(`/v1/kv/${key}`);
    const n = index(first);
    const { r, ms } = await timed(`/v1/kv/${key}?index=${at(n)}&wait=${shortWait}`);
    expect(r.status).toBe(200);
    expect(ms).toBeGreaterThanOrEqual(shortWaitMs - 50);
    expect(index(r)).toBe(n);
    expect(r.text).toBe(first.text);
  }

  test('timeout with no change returns 200 with the current data and the unchanged index', async () => {
    await expectWaitsOut('timeout', (n) => n);
  });

  test('an index above the current one waits the full wait, then returns the current data', async () => {
    await expectWaitsOut('above', (n) => n + 1_000_000);
  });

  test('index=0 or no index answers at once; wait without index is ignored', async () => {
    const key = uniq('noblock');
    await ok(c.put(`/v1/kv/${key}`, 'now'));
    for (const q of ['?index=0&wait=10s', '?wait=10s']) {
      const { r, ms } = await timed(`/v1/kv/${key}${q}`);
      expect(r.status).toBe(200);
      expect(ms).toBeLessThan(wellUnderLongWaitMs);
      expect(r.json<Entry[]>()[0]!.Value).toBe(b64('now'));
    }
  });

  test('?index=abc → 400 1009 (details.index), also for a missing key', async () => {
    const key = uniq('badindex');
    await ok(c.put(`/v1/kv/${key}`, 'x'));
    for (const path of [`/v1/kv/${key}?index=abc`, `/v1/kv/${uniq('badindex-missing')}?index=abc`, `/v1/kv/${key}?recurse&index=-1`]) {
      const body = expectError(await c.get(path), 400, 1009);
      expect(body.details).toHaveProperty('index');
    }
  });

  test('?wait=abc → 400 1009 (details.wait), also for a missing key', async () => {
    const key = uniq('badwait');
    await ok(c.put(`/v1/kv/${key}`, 'x'));
    for (const path of [`/v1/kv/${key}?index=1&wait=abc`, `/v1/kv/${uniq('badwait-missing')}?index=1&wait=abc`, `/v1/kv/${key}?index=1&wait=20`]) {
      const body = expectError(await c.get(path), 400, 1009);
      expect(body.details).toHaveProperty('wait');
    }
  });

  test('?consistent returns the current data; ?stale alone works; ?stale&consistent → 400 1009', async () => {
    const key = uniq('consistent');
    await ok(c.put(`/v1/kv/${key}`, 'v1'));
    await ok(c.put(`/v1/kv/${key}`, 'v2'));
    const r = await c.get(`/v1/kv/${key}?consistent`);
    expect(r.status).toBe(200);
    const [e] = r.json<Entry[]>();
    expect(e!.Value).toBe(b64('v2'));
    expect(index(r)).toBe(e!.ModifyIndex);
    const stale = await c.get(`/v1/kv/${key}?stale`);
    expect(stale.status).toBe(200);
    expect(stale.json<Entry[]>()[0]!.Value).toBe(b64('v2'));
    expectError(await c.get(`/v1/kv/${key}?stale&consistent`), 400, 1009);
  });

  test('?consistent blocking GET wakes on a write like a default one', async () => {
    const key = uniq('consistent-block');
    await ok(c.put(`/v1/kv/${key}`, 'a'));
    const n = index(await c.get(`/v1/kv/${key}`));
    const pending = timed(`/v1/kv/${key}?consistent&index=${n}&wait=${longWait}`);
    await sleep(parkMs);
    await ok(c.put(`/v1/kv/${key}`, 'b'));
    const { r, ms } = await pending;
    expect(ms).toBeLessThan(wellUnderLongWaitMs);
    expect(r.json<Entry[]>()[0]!.Value).toBe(b64('b'));
  });

  test('query GETs carry X-Consul-Index (never 0), X-Consul-KnownLeader "true", X-Consul-LastContact "0"', async () => {
    // A fresh agent so the empty store and empty session table are covered too.
    await onFreshAgent(startAgent, async (f) => {
      const check = async (path: string, status = 200) => {
        const r = await f.get(path);
        expect(r.status, `${path}: ${r.text}`).toBe(status);
        const idx = r.headers.get('x-consul-index');
        expect(idx, path).toMatch(/^\d+$/);
        expect(Number(idx), path).toBeGreaterThan(0);
        expect(r.headers.get('x-consul-knownleader'), path).toBe('true');
        expect(r.headers.get('x-consul-lastcontact'), path).toBe('0');
      };
      await check('/v1/kv/?keys');
      await check('/v1/kv/nothing', 404);
      await check('/v1/kv/nothing/?recurse', 404);
      await check('/v1/session/list');
      await check('/v1/session/node/node1');
      await check('/v1/session/info/11111111-2222-3333-4444-555555555555');
      await check('/v1/catalog/nodes');
      const id = await f.session();
      await ok(f.put('/v1/kv/k', 'v'));
      await check('/v1/kv/k');
      await check('/v1/kv/k?raw');
      await check('/v1/kv/?recurse');
      await check(`/v1/session/info/${id}`);
      await check('/v1/session/list');
    });
  });
});

// ------------------------------------------------------------------------------------------------
describe('sessions wake blocking GETs on the keys they hold', () => {
  test('release of the held key wakes a blocking GET: Session cleared, LockIndex kept', async () => {
    const key = uniq('release');
    const s = await c.session();
    await ok(c.put(`/v1/kv/${key}?acquire=${s}`, 'held'));
    const first = await c.get(`/v1/kv/${key}`);
    const held = first.json<Entry[]>()[0]!;
    expect(held.Session).toBe(s);

    const r = await expectWoken(`/v1/kv/${key}`, index(first), () => ok(c.put(`/v1/kv/${key}?release=${s}`, 'held')));
    const e = r.json<Entry[]>()[0]!;
    expect(e.Session).toBeUndefined();
    expect(e.LockIndex).toBe(held.LockIndex);
  });

  test('destroy of a Behavior "release" session wakes a blocking GET: Session cleared, Value/Flags/LockIndex kept', async () => {
    const key = uniq('destroy');
    const s = await c.session({ Behavior: 'release' });
    await ok(c.put(`/v1/kv/${key}?acquire=${s}&flags=77`, 'held'));
    const first = await c.get(`/v1/kv/${key}`);
    const held = first.json<Entry[]>()[0]!;

    const r = await expectWoken(`/v1/kv/${key}`, index(first), () => ok(c.put(`/v1/session/destroy/${s}`)));
    const e = r.json<Entry[]>()[0]!;
    expect(e.Session).toBeUndefined();
    expect(e.Value).toBe(b64('held'));
    expect(e.Flags).toBe(77);
    expect(e.LockIndex).toBe(held.LockIndex);
    expect(e.ModifyIndex).toBeGreaterThan(held.ModifyIndex);
  });
});

// ------------------------------------------------------------------------------------------------
describe('status and agent self', () => {
  test('/v1/status/leader is a JSON string host:port', async () => {
    const r = await c.get('/v1/status/leader');
    expect(r.status).toBe(200);
    const leader = r.json();
    expect(typeof leader).toBe('string');
    expect(leader).toMatch(/^.+:\d+$/);
  });

  test('/v1/status/peers is an array containing the leader', async () => {
    const leader = (await c.get('/v1/status/leader')).json<string>();
    const r = await c.get('/v1/status/peers');
    expect(r.status).toBe(200);
    const peers = r.json();
    expect(Array.isArray(peers)).toBe(true);
    expect(peers).toContain(leader);
  });

  test('/v1/agent/self has Config.NodeName "node1", Datacenter "dc1", Server true and Member.Name', async () => {
    const r = await c.get('/v1/agent/self');
    expect(r.status).toBe(200);
    const self = r.json();
    expect(self.Config.NodeName).toBe('node1');
    expect(self.Config.Datacenter).toBe('dc1');
    expect(self.Config.Server).toBe(true);
    expect(typeof self.Member.Name).toBe('string');
    expect(self.Member.Name).toBe('node1');
  });

  test('/v1/agent/self Stats.runtime reports the process memory (what bench:memory reads)', async () => {
    const runtime = (await c.get('/v1/agent/self')).json().Stats.runtime;
    for (const k of ['rss_bytes', 'heap_used_bytes', 'heap_total_bytes', 'external_bytes']) expect(runtime[k], k).toMatch(/^[1-9]\d*$/);
    expect(Number(runtime.heap_used_bytes)).toBeLessThanOrEqual(Number(runtime.heap_total_bytes));
  });
});
