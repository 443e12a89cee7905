// Goal: the series that explain contention, against a started agent under a lock workload. Scraped with the
// Prometheus project's parser before and after: a contended key (a refused acquire, a queued acquire handed
// the lock by the holder's release, a queued acquire that times out), a lock delay, an unknown session, a
// session TTL expiry, a destroy, a bound check failing, a node deregistered and a failing probe move exactly
// the lock, session, check and apply series they should; a queued acquire's wait is measured apart from
// the HTTP service time; prom-client's process and Node.js series are there.
import { createServer } from 'node:net';
import { afterAll, beforeAll, describe, expect, test } from 'vitest';
import { call, client, sleep, startAgent, type Agent } from '../support/agent.ts';
import { parsePrometheus, sampleMap, seriesKey } from '../support/prometheus.ts';
import { registerNode, uniq } from '../support/sessions.ts';
import { until } from '../support/until.ts';

let agent: Agent;
let c: ReturnType<typeof client>;

beforeAll(async () => {
  agent = await startAgent({ args: ['--session-ttl-min', '1s'] });
  c = client(agent);
});
afterAll(async () => { await agent?.stop(); agent?.cleanup(); });

async function scrape(): Promise<Map<string, number>> {
  const r = await call(agent.url, 'GET', '/v1/agent/metrics?format=prometheus');
  expect(r.status, r.text).toBe(200);
  return sampleMap(await parsePrometheus(r.text));
}

const key = seriesKey;

/** A series' value once `ok` holds for it, scraping until then (bounded by `until`). */
async function scrapeUntil(series: string, ok: (v: number) => boolean): Promise<Map<string, number>> {
  return until(`${series} to move`, async () => {
    const samples = await scrape();
    return ok(samples.get(series) ?? 0) ? samples : undefined;
  });
}

async function acquire(k: string, session: string, query = ''): Promise<boolean> {
  const r = await c.put(`/v1/kv/${k}?acquire=${session}${query}`, 'v');
  if (r.status === 200) return r.json<boolean>();
  if (r.status === 409) return false;
  throw new Error(`acquire ${k}: ${r.status} ${r.text}`);
}

/** A TCP port nothing listens on. */
async function closedPort(): Promise<number> {
  const server = createServer();
  await new Promise<void>((res) => server.listen(0, '127.0.0.1', res));
  const port = (server.address() as { port: number }).port;
  await new Promise<void>((res) => server.close(() => res()));
  return port;
}

/**
 * The workload the first test measures; resolves with the scrape once the TTL expiry and the failing
 * probe (the two that take time) have shown up.
 */
async function lockWorkload(before: Map<string, number>): Promise<Map<string, number>> {
  // A contended key: s2 is refused, then queues; s1's release hands it the lock.
  const hot = uniq('metrics/hot');
  const s1 = await c.session({ LockDelay: '0s' });
  const s2 = await c.session({ LockDelay: '0s' });
  expect(await acquire(hot, s1)).toBe(true);
  expect(await acquire(hot, s2)).toBe(false);
  const queued = acquire(hot, s2, '&wait=30s');
  await scrapeUntil(key('roster_lock_queue_depth', {}), (v) => v === 1);
  expect((await c.put(`/v1/kv/${hot}?release=${s1}`)).json()).toBe(true);
  expect(await queued).toBe(true);
  // A queued acquire that gives up: s2 keeps the lock.
  expect(await acquire(hot, s1, '&wait=200ms')).toBe(false);
  // A lock taken by a transaction.
  const txn = await c.put('/v1/txn', [{ KV: { Verb: 'lock', Key: uniq('metrics/txn-lock'), Session: s1, Value: Buffer.from('v').toString('base64') } }]);
  expect(txn.status, txn.text).toBe(200);

  // A lock delay: s3's destroy releases its key, which stays unavailable for 10 s.
  const delayed = uniq('metrics/delayed');
  const s3 = await c.session({ LockDelay: '10s' });
  expect(await acquire(delayed, s3)).toBe(true);
  expect((await c.put(`/v1/session/destroy/${s3}`)).status).toBe(200);
  expect(await acquire(delayed, s1)).toBe(false);
  // An unknown session.
  const unknown = await c.put(`/v1/kv/${uniq('metrics/nobody')}?acquire=00000000-0000-4000-8000-000000000000`, 'v');
  expect(unknown.status, unknown.text).toBeGreaterThanOrEqual(400);

  // A bound TTL check failing invalidates its session.
  const checkId = uniq('metrics-ttl');
  expect((await c.put('/v1/agent/check/register', { ID: checkId, Name: 'metrics ttl', TTL: '10m', Status: 'passing' })).status).toBe(200);
  const bound = await c.session({ NodeChecks: ['gossipHealth', checkId], LockDelay: '0s' });
  expect((await c.put(`/v1/agent/check/fail/${checkId}`)).status).toBe(200);
  expect((await c.get(`/v1/session/info/${bound}`)).json()).toEqual([]);

  // A node deregistered takes its sessions with it.
  const node = uniq('metrics-node');
  await registerNode(c, node, [{ CheckID: 'alive', Status: 'passing' }]);
  await c.session({ Node: node, NodeChecks: ['alive'], LockDelay: '0s' });
  expect((await c.put('/v1/catalog/deregister', { Node: node })).status).toBe(200);

  // A probe that fails: registered passing, its first run turns it critical.
  const probeId = uniq('metrics-tcp');
  const port = await closedPort();
  expect((await c.put('/v1/agent/check/register', { ID: probeId, Name: 'closed port', TCP: `127.0.0.1:${port}`, Interval: '1s', Status: 'passing' })).status).toBe(200);

  // A session whose TTL lapses (its owner expires it after 2 × TTL).
  await c.session({ TTL: '1s', LockDelay: '0s' });
  const ttl = key('roster_session_invalidations_total', { cause: 'ttl' });
  await scrapeUntil(ttl, (v) => v > (before.get(ttl) ?? 0));
  const probed = key('roster_check_transitions_total', { kind: 'tcp', status: 'critical' });
  return scrapeUntil(probed, (v) => v > (before.get(probed) ?? 0));
}

describe('lock, session and check series', () => {
  test('a lock workload moves each series by what it did', async () => {
    const before = await scrape();
    const after = await lockWorkload(before);
    const delta = (now: Map<string, number>, series: string) => (now.get(series) ?? 0) - (before.get(series) ?? 0);
    const d = (name: string, labels: Record<string, string> = {}) => delta(after, key(name, labels));
    expect(d('roster_lock_acquires_total'), 'hot by s1, hot by s2 (handed), the transaction\'s lock, delayed by s3').toBe(4);
    expect(d('roster_lock_acquire_failures_total', { reason: 'held-by-other' }), 'a refusal, then each queued acquire\'s first try').toBeGreaterThanOrEqual(3);
    expect(d('roster_lock_acquire_failures_total', { reason: 'lock-delay' })).toBe(1);
    expect(d('roster_lock_acquire_failures_total', { reason: 'invalid-session' })).toBe(1);
    expect(d('roster_lock_handoff_seconds_count'), 'hot went from s1 to s2, who was waiting').toBe(1);
    expect(d('roster_lock_hold_seconds_count'), 's1 released hot; s3\'s destroy released delayed').toBe(2);
    expect(d('roster_lock_hold_seconds_sum')).toBeGreaterThan(0);
    expect(d('roster_lock_queue_wait_seconds_count', { result: 'acquired' })).toBe(1);
    expect(d('roster_lock_queue_wait_seconds_count', { result: 'not-acquired' })).toBe(1);
    // Its 200 ms ran from its arrival; it queued after its first try.
    expect(d('roster_lock_queue_wait_seconds_sum', { result: 'not-acquired' })).toBeGreaterThan(0);
    expect(after.get(key('roster_lock_queue_depth', {}))).toBe(0);

    expect(d('roster_session_invalidations_total', { cause: 'destroy' })).toBe(1);
    expect(d('roster_session_invalidations_total', { cause: 'check' })).toBe(1);
    expect(d('roster_session_invalidations_total', { cause: 'node' })).toBe(1);
    expect(d('roster_session_invalidations_total', { cause: 'ttl' })).toBe(1);
    expect(d('roster_session_invalidations_total', { cause: 'other' })).toBe(0);
    expect(d('roster_session_ttl_invalidate_seconds_count')).toBe(1);

    expect(d('roster_check_transitions_total', { kind: 'ttl', status: 'critical' })).toBe(1);
    expect(d('roster_check_transitions_total', { kind: 'tcp', status: 'critical' })).toBe(1);
    expect(d('roster_check_transitions_total', { kind: 'none', status: 'critical' }), 'the external node\'s check was never critical').toBe(0);
    expect(d('roster_check_runs_total', { kind: 'ttl', status: 'critical' }), 'the fail report').toBe(1);
    expect(d('roster_check_runs_total', { kind: 'tcp', status: 'critical' })).toBeGreaterThanOrEqual(1);
    expect(d('roster_check_run_duration_seconds_count', { kind: 'tcp' })).toBe(d('roster_check_runs_total', { kind: 'tcp', status: 'critical' }));

    // Every write applied here was an entry: each one's lag was observed; one node has nothing left to apply.
    expect(d('roster_apply_lag_seconds_count')).toBe(d('roster_apply_batch_entries_sum'));
    expect(d('roster_apply_lag_seconds_count')).toBeGreaterThan(10);
    expect(after.get(key('roster_apply_lag_entries', {}))).toBe(0);
    expect(d('roster_log_commit_duration_seconds_count', { log: 'wal' })).toBeGreaterThan(0);

    // HTTP latency by method and route; prom-client's default collectors.
    expect(d('roster_http_request_duration_seconds_count', { method: 'PUT', route: '/v1/kv/*' }), 'the workload\'s eight KV writes').toBe(8);
    expect(d('roster_http_request_duration_seconds_count', { method: 'GET', route: '/v1/session/info/*' })).toBe(1);
    expect(d('process_cpu_seconds_total')).toBeGreaterThan(0);
    expect(after.get(key('process_resident_memory_bytes', {}))).toBeGreaterThan(0);
    expect(after.get(key('nodejs_heap_size_used_bytes', {}))).toBeGreaterThan(0);
  });

  test('a queued acquire\'s wait is counted as queue wait, not as HTTP service time', async () => {
    const hot = uniq('metrics/service');
    const holder = await c.session({ LockDelay: '0s' });
    const waiter = await c.session({ LockDelay: '0s' });
    expect(await acquire(hot, holder)).toBe(true);
    const before = await scrape();
    const startedMs = performance.now();
    const queued = acquire(hot, waiter, '&wait=30s').then((ok) => ({ ok, ms: performance.now() - startedMs }));
    await scrapeUntil(key('roster_lock_queue_depth', {}), (v) => v === 1);
    await sleep(500);
    const releaseStartedMs = performance.now();
    expect((await c.put(`/v1/kv/${hot}?release=${holder}`)).json()).toBe(true);
    const releaseMs = performance.now() - releaseStartedMs;
    const { ok, ms: queuedMs } = await queued;
    expect(ok).toBe(true);
    const after = await scrape();
    const d = (name: string, labels: Record<string, string> = {}) => (after.get(key(name, labels)) ?? 0) - (before.get(key(name, labels)) ?? 0);

    // The waiter was seen queued, then left there 500 ms more.
    const waited = d('roster_lock_queue_wait_seconds_sum', { result: 'acquired' });
    expect(waited).toBeGreaterThanOrEqual(0.49);
    // The only two KV requests in between: the waiter's and the release. The client saw each one whole,
    // so their service times (what the histogram holds) are within what it saw, less the wait (1 ms of
    // rounding: the queue's clock counts whole milliseconds).
    expect(d('roster_http_request_duration_seconds_count', { method: 'PUT', route: '/v1/kv/*' })).toBe(2);
    const service = d('roster_http_request_duration_seconds_sum', { method: 'PUT', route: '/v1/kv/*' });
    expect(service).toBeGreaterThan(0);
    expect(service).toBeLessThanOrEqual((queuedMs + releaseMs) / 1000 - waited + 0.002);
  });
});

interface Sampled { Name: string; Count: number; Sum: number; Mean: number; Labels: Record<string, string> }
interface MetricsJson { Gauges: { Name: string; Value: number; Labels: Record<string, string> }[]; Counters: Sampled[]; Samples: Sampled[] }

describe('Consul\'s names in the JSON form', () => {
  test('are made from the Roster entries of the same answer, timers in milliseconds', async () => {
    const session = await c.session({ LockDelay: '0s' });
    expect((await c.put(`/v1/session/destroy/${session}`)).status).toBe(200);
    expect((await c.put('/v1/txn', [{ KV: { Verb: 'set', Key: uniq('metrics/txn'), Value: Buffer.from('x').toString('base64') } }])).status).toBe(200);
    const k = uniq('metrics/consul');
    expect((await c.put(`/v1/kv/${k}`, 'x')).status).toBe(200);
    expect((await c.del(`/v1/kv/${k}`)).status).toBe(200);
    const body = (await c.get('/v1/agent/metrics')).json<MetricsJson>();

    const one = (name: string, labels?: Record<string, string>): Sampled => {
      const found = body.Samples.filter((s) => s.Name === name && (labels === undefined || JSON.stringify(s.Labels) === JSON.stringify(labels)));
      expect(found, name).toHaveLength(1);
      return found[0]!;
    };
    const roster = (name: string, pick: (l: Record<string, string>) => boolean = () => true) => {
      const parts = body.Samples.filter((s) => s.Name === name && pick(s.Labels));
      return { count: parts.reduce((n, s) => n + s.Count, 0), sum: parts.reduce((n, s) => n + s.Sum, 0) };
    };
    const timed = (consul: string, name: string, pick?: (l: Record<string, string>) => boolean) => {
      const want = roster(name, pick);
      const got = one(consul);
      expect(got.Count, consul).toBe(want.count);
      expect(got.Sum, consul).toBeCloseTo(want.sum * 1000, 6);
      return got.Count;
    };
    const http = (method: string, ...routes: string[]) => (l: Record<string, string>) => l.method === method && routes.includes(l.route!);
    expect(timed('consul.kvs.apply', 'roster_http_request_duration_seconds', (l) => l.route === '/v1/kv/*' && (l.method === 'PUT' || l.method === 'DELETE'))).toBeGreaterThanOrEqual(2);
    expect(timed('consul.txn.apply', 'roster_http_request_duration_seconds', http('PUT', '/v1/txn'))).toBeGreaterThanOrEqual(1);
    expect(timed('consul.session.apply', 'roster_http_request_duration_seconds', http('PUT', '/v1/session/create', '/v1/session/destroy/*'))).toBeGreaterThanOrEqual(2);
    timed('consul.session_ttl.invalidate', 'roster_session_ttl_invalidate_seconds');
    expect(timed('consul.raft.commitTime', 'roster_log_commit_duration_seconds')).toBeGreaterThan(0);
    expect(timed('consul.raft.fsm.apply', 'roster_apply_duration_seconds')).toBeGreaterThan(0);
    const putKv = roster('roster_http_request_duration_seconds', http('PUT', '/v1/kv/*'));
    expect(one('consul.api.http', { method: 'PUT', path: 'v1.kv._' }).Count).toBe(putKv.count);

    const gauge = (name: string) => body.Gauges.filter((g) => g.Name === name).reduce((n, g) => n + g.Value, 0);
    expect(gauge('consul.raft.applied_index')).toBe(gauge('roster_registry_index'));
    expect(gauge('consul.raft.last_index')).toBe(gauge('roster_registry_index'));
    expect(gauge('consul.session_ttl.active')).toBe(gauge('roster_sessions'));
    expect(gauge('consul.runtime.alloc_bytes')).toBe(gauge('nodejs_heap_size_used_bytes'));
    expect(gauge('consul.runtime.sys_bytes')).toBe(gauge('process_resident_memory_bytes'));
    expect(gauge('consul.runtime.alloc_bytes')).toBeGreaterThan(0);
    const commits = roster('roster_log_commit_entries');
    expect(body.Counters.find((s) => s.Name === 'consul.raft.apply')?.Count).toBe(commits.sum);
  });
});
