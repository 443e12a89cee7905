// Goal: an acknowledged write is never lost — SIGKILL during a write load, restart on the same data
// dir: every acknowledged write is there, held locks are still held, and indexes keep growing.
import { afterEach, describe, expect, test } from 'vitest';
import { client, sleep, startAgent, tempDataDir, type Agent } from '../support/agent.ts';
import { rmSync } from 'node:fs';

const dirs: string[] = [];
const agents: Agent[] = [];
afterEach(async () => {
  for (const a of agents.splice(0)) await a.kill9();
  for (const d of dirs.splice(0)) rmSync(d, { recursive: true, force: true });
});

/**
 * Runs `writers` concurrent writers and SIGKILLs the agent once `killAfterAcked` writes were acknowledged
 * (or `loadMsMax` passed, on a machine too busy for that), so the kill lands in the middle of a load of a
 * known size however fast the machine is.
 */
async function loadUntilKilled(agent: Agent, writers: number, killAfterAcked: number, loadMsMax = 15_000) {
  const c = client(agent);
  const acked = new Map<string, string>();
  let maxIndexSeen = 0;
  let stop = false;
  const writer = async (w: number) => {
    for (let i = 0; i < 100_000 && !stop; i++) {
      const key = `dur/${w}/${i}`;
      const value = `value-${w}-${i}`;
      try {
        const r = await c.put(`/v1/kv/${key}`, value);
        if (r.status === 200 && r.text === 'true') acked.set(key, value);
        if (i % 25 === 0) {
          const g = await c.get(`/v1/kv/${key}`);
          maxIndexSeen = Math.max(maxIndexSeen, Number(g.headers.get('x-consul-index') ?? 0));
        }
      } catch {
        return; // the process died under us: this write was never acknowledged
      }
    }
  };
  const running = Array.from({ length: writers }, (_, w) => writer(w));
  for (const deadline = Date.now() + loadMsMax; acked.size < killAfterAcked && Date.now() < deadline;) await sleep(20);
  await agent.kill9();
  stop = true;
  await Promise.all(running);
  return { acked, maxIndexSeen };
}

describe('crash recovery', () => {
  test('SIGKILL during writes: every acknowledged write survives and indexes keep growing', async () => {
    const dataDir = tempDataDir();
    dirs.push(dataDir);
    const first = await startAgent({ dataDir });
    agents.push(first);
    const c1 = client(first);
    const sid = await c1.session({ Name: 'holder' });
    expect((await c1.put(`/v1/kv/dur-lock?acquire=${sid}`, 'mine')).text).toBe('true');

    const { acked, maxIndexSeen } = await loadUntilKilled(first, 16, 400);
    expect(acked.size).toBeGreaterThan(100);

    const second = await startAgent({ dataDir });
    agents.push(second);
    const c2 = client(second);
    const all = await c2.get('/v1/kv/dur/?recurse');
    expect(all.status).toBe(200);
    const stored = new Map(all.json<{ Key: string; Value: string }[]>().map((e) => [e.Key, Buffer.from(e.Value, 'base64').toString()]));
    const lost = [...acked].filter(([k, v]) => stored.get(k) !== v);
    expect(lost).toEqual([]);
    expect(Number(all.headers.get('x-consul-index'))).toBeGreaterThanOrEqual(maxIndexSeen);

    const lock = (await c2.get('/v1/kv/dur-lock')).json()[0];
    expect(lock.Session).toBe(sid);
    expect((await c2.get(`/v1/session/info/${sid}`)).json()).toHaveLength(1);

    expect((await c2.put('/v1/kv/after-restart', 'x')).text).toBe('true');
    const after = (await c2.get('/v1/kv/after-restart')).json()[0];
    const maxStored = Math.max(...all.json<{ ModifyIndex: number }[]>().map((e) => e.ModifyIndex));
    expect(after.ModifyIndex).toBeGreaterThan(maxStored);
  });

  test('SIGKILL with snapshots taken during the load recovers snapshot + tail', async () => {
    const dataDir = tempDataDir();
    dirs.push(dataDir);
    const first = await startAgent({ dataDir, args: ['--snapshot-every', '200'] });
    agents.push(first);
    const { acked } = await loadUntilKilled(first, 8, 600);
    expect(acked.size).toBeGreaterThan(200);
    expect(first.output()).toMatch(/snapshot saved/);

    const second = await startAgent({ dataDir, args: ['--snapshot-every', '200'] });
    agents.push(second);
    const stored = (await client(second).get('/v1/kv/dur/?recurse')).json<{ Key: string; Value: string }[]>();
    const byKey = new Map(stored.map((e) => [e.Key, Buffer.from(e.Value, 'base64').toString()]));
    expect([...acked].filter(([k, v]) => byKey.get(k) !== v)).toEqual([]);
  });

  test('SIGTERM shuts down cleanly (exit 0) and a restart serves the same state', async () => {
    const dataDir = tempDataDir();
    dirs.push(dataDir);
    const first = await startAgent({ dataDir });
    const c1 = client(first);
    await c1.put('/v1/kv/clean/a', 'A');
    const sid = await c1.session({ TTL: '' });
    const before = (await c1.get('/v1/kv/clean/a')).json()[0];
    expect(await first.stop()).toBe(0);
    expect(first.output()).toMatch(/snapshot saved/);

    const second = await startAgent({ dataDir });
    agents.push(second);
    const c2 = client(second);
    expect((await c2.get('/v1/kv/clean/a')).json()[0]).toEqual(before);
    expect((await c2.get(`/v1/session/info/${sid}`)).json()).toHaveLength(1);
  });
});
