// Goal: in a three-node cluster (JetStream log) an event is counted once, on the node that proposed it,
// though every node applies it: a lock taken through n1 and, after a wait, through n2, a session
// destroyed through n3. Summed over the nodes, each lock series moves by what was done, and each node's
// share is its own; every node observes its own apply lag; commits are labelled `jetstream`.
import { afterAll, beforeAll, describe, expect, test } from 'vitest';
import { call, client } from '../support/agent.ts';
import { TestCluster } from '../support/cluster-node.ts';
import { parsePrometheus, sampleMap, seriesKey } from '../support/prometheus.ts';
import { until } from '../support/until.ts';

const names = ['n1', 'n2', 'n3'];
const cluster = new TestCluster(names);

beforeAll(async () => {
  await cluster.prepare();
  await Promise.all(names.map((n) => cluster.start(n)));
}, 120_000);
afterAll(() => cluster.stop());

const node = (name: string) => cluster.nodes.get(name)!;

async function scrape(name: string): Promise<Map<string, number>> {
  const r = await call(node(name).url, 'GET', '/v1/agent/metrics?format=prometheus');
  expect(r.status, r.text).toBe(200);
  return sampleMap(await parsePrometheus(r.text));
}

async function scrapeAll(): Promise<Map<string, Map<string, number>>> {
  return new Map(await Promise.all(names.map(async (n) => [n, await scrape(n)] as const)));
}

describe('metrics in a cluster', () => {
  test('lock and session events are counted once, where they were proposed; apply lag on every node', async () => {
    const [c1, c2, c3] = names.map((n) => client(node(n)));
    const k = `metrics/cluster-${Date.now().toString(36)}`;
    const s1 = await c1!.session({ LockDelay: '0s' });
    const s2 = await c2!.session({ LockDelay: '0s' });
    const before = await scrapeAll();

    expect((await c1!.put(`/v1/kv/${k}?acquire=${s1}`, 'x')).json()).toBe(true);
    // The acquire reaches n2's state before n2 tries: a refusal, then a queued acquire there.
    await until('the lock at n2', async () => ((await c2!.get(`/v1/kv/${k}`)).json<{ Session?: string }[]>()[0]?.Session === s1 ? true : undefined));
    expect((await c2!.put(`/v1/kv/${k}?acquire=${s2}`, 'x')).status).toBe(409);
    const queued = c2!.put(`/v1/kv/${k}?acquire=${s2}&wait=30s`, 'x');
    await until('the acquire queued at n2', async () => ((await scrape('n2')).get(seriesKey('roster_lock_queue_depth', {})) === 1 ? true : undefined));
    expect((await c1!.put(`/v1/kv/${k}?release=${s1}`)).json()).toBe(true);
    expect((await queued).json()).toBe(true);
    expect((await c3!.put(`/v1/session/destroy/${s1}`)).status).toBe(200);
    // Every node has applied the destroy before the scrape.
    for (const c of [c1!, c2!, c3!]) {
      await until('the destroy applied everywhere', async () => ((await c.get(`/v1/session/info/${s1}`)).json<unknown[]>().length === 0 ? true : undefined));
    }
    const after = await scrapeAll();

    const d = (n: string, name: string, labels: Record<string, string> = {}) =>
      (after.get(n)!.get(seriesKey(name, labels)) ?? 0) - (before.get(n)!.get(seriesKey(name, labels)) ?? 0);
    const byNode = (name: string, labels: Record<string, string> = {}) => names.map((n) => d(n, name, labels));
    expect(byNode('roster_lock_acquires_total'), 'n1 took it, n2 got it after its wait').toEqual([1, 1, 0]);
    const refused = byNode('roster_lock_acquire_failures_total', { reason: 'held-by-other' });
    expect(refused[0]).toBe(0);
    expect(refused[1]).toBeGreaterThanOrEqual(2);
    expect(refused[2]).toBe(0);
    expect(byNode('roster_lock_hold_seconds_count'), 's1 held it, acquired through n1').toEqual([1, 0, 0]);
    expect(byNode('roster_lock_handoff_seconds_count'), 'the new holder\'s node').toEqual([0, 1, 0]);
    expect(byNode('roster_lock_queue_wait_seconds_count', { result: 'acquired' })).toEqual([0, 1, 0]);
    expect(byNode('roster_session_invalidations_total', { cause: 'destroy' })).toEqual([0, 0, 1]);
    for (const n of names) {
      expect(d(n, 'roster_apply_lag_seconds_count'), `${n} applied the entries`).toBeGreaterThanOrEqual(5);
      expect(after.get(n)!.get(seriesKey('roster_apply_lag_entries', {})), n).toBeGreaterThanOrEqual(0);
    }
    expect(d('n1', 'roster_log_commit_duration_seconds_count', { log: 'jetstream' })).toBeGreaterThanOrEqual(1);
    expect(d('n2', 'roster_log_commit_duration_seconds_count', { log: 'jetstream' })).toBeGreaterThanOrEqual(1);
  }, 120_000);
});
