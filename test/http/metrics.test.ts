// Goal: /v1/agent/metrics against a started agent. The Prometheus text parses with the Prometheus project's
// own parser and its counters move by exactly what the test did, labelled by route pattern and status;
// histograms are consistent; the state gauges follow sessions, locks, the index, checks and stream
// subscribers; the Consul-shaped JSON carries the same figures; a bad format is refused and changes nothing.
// Request ids: a sane x-request-id comes back and is in the request's log line; a bad one is replaced;
// request lines are debug (absent at info) and 5xx lines are warn.
import { writeFileSync } from 'node:fs';
import { join } from 'node:path';
import * as grpc from '@grpc/grpc-js';
import { service as healthService } from 'grpc-health-check';
import { afterAll, beforeAll, describe, expect, test } from 'vitest';
import WebSocket from 'ws';
import { TokenAuthority } from '../../src/auth/index.ts';
import { call, client, expectError, sleep, startAgent, type Agent } from '../support/agent.ts';
import { parsePrometheus, sampleMap, seriesKey, type PromFamily } from '../support/prometheus.ts';

let agent: Agent;
let c: ReturnType<typeof client>;
const uuid = /^[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}$/;
/** Bound of every wait for a log line or a gauge. */
const waitMs = 5_000;

beforeAll(async () => {
  agent = await startAgent({ args: ['--log-level', 'debug'] });
  c = client(agent);
});
afterAll(async () => { await agent?.stop(); agent?.cleanup(); });

async function scrape(a: Agent = agent): Promise<{ families: PromFamily[]; samples: Map<string, number>; text: string }> {
  const r = await call(a.url, 'GET', '/v1/agent/metrics?format=prometheus');
  expect(r.status, r.text).toBe(200);
  expect(r.headers.get('content-type')).toBe('text/plain; version=0.0.4; charset=utf-8');
  const families = await parsePrometheus(r.text);
  return { families, samples: sampleMap(families), text: r.text };
}

const requests = (method: string, route: string, status: number) => seriesKey('roster_http_requests_total', { method, route, status: String(status) });
const gauge = (name: string, labels: Record<string, string> = {}) => seriesKey(name, labels);

/** Series whose value differs between two scrapes (new series count from 0), with the difference. */
function moved(before: Map<string, number>, after: Map<string, number>, prefix: string): Map<string, number> {
  const out = new Map<string, number>();
  for (const [k, v] of after) if (k.startsWith(prefix) && v !== (before.get(k) ?? 0)) out.set(k, v - (before.get(k) ?? 0));
  return out;
}

/** Cumulative buckets that never decrease, in increasing `le` order, ending with +Inf equal to `_count`; a finite `_sum`. */
function checkHistograms(families: PromFamily[]): number {
  let checked = 0;
  for (const f of families.filter((x) => x.type === 'histogram')) {
    const series = new Map<string, { les: number[]; counts: number[]; sum?: number; count?: number }>();
    for (const s of f.samples) {
      const { le, ...rest } = s.labels;
      const key = JSON.stringify(rest);
      const one = series.get(key) ?? { les: [], counts: [] };
      series.set(key, one);
      if (s.name === `${f.name}_bucket`) { one.les.push(le === '+Inf' ? Infinity : Number(le)); one.counts.push(s.value); }
      else if (s.name === `${f.name}_sum`) one.sum = s.value;
      else if (s.name === `${f.name}_count`) one.count = s.value;
      else throw new Error(`unexpected sample ${s.name} in ${f.name}`);
    }
    for (const [key, one] of series) {
      const what = `${f.name}${key}`;
      expect(one.les.at(-1), `${what}: last bucket is +Inf`).toBe(Infinity);
      for (let k = 1; k < one.les.length; k += 1) {
        expect(one.les[k]!, `${what}: bounds increase`).toBeGreaterThan(one.les[k - 1]!);
        expect(one.counts[k]!, `${what}: buckets are cumulative`).toBeGreaterThanOrEqual(one.counts[k - 1]!);
      }
      expect(one.counts.at(-1), `${what}: +Inf bucket equals _count`).toBe(one.count);
      expect(Number.isFinite(one.sum), `${what}: _sum`).toBe(true);
      expect(one.sum!, `${what}: _sum`).toBeGreaterThanOrEqual(0);
      checked += 1;
    }
  }
  return checked;
}

describe('Prometheus format', () => {
  test('parses with the Prometheus parser; request counters move by what was done, by route pattern and status', async () => {
    const before = await scrape();
    expect(await c.put('/v1/kv/metrics/a', 'one')).toMatchObject({ status: 200 });
    expect(await c.put('/v1/kv/metrics/a', 'two')).toMatchObject({ status: 200 });
    expect((await c.get('/v1/kv/metrics/a')).status).toBe(200);
    expectError(await c.get('/v1/kv/metrics/missing'), 404, 1006);
    const session = await c.session();
    const acquired = await c.put(`/v1/kv/metrics/lock?acquire=${session}`, 'held');
    expect([acquired.status, acquired.text]).toEqual([200, 'true']);
    expectError(await c.get('/v1/no/such/endpoint'), 404, 1006);
    expect((await c.req('POST', '/v1/agent/self')).status).toBe(405);
    const after = await scrape();

    // Exactly these series moved: the scrape before counts itself; the scrape after is not in its own answer.
    expect(Object.fromEntries(moved(before.samples, after.samples, 'roster_http_requests_total'))).toEqual(Object.fromEntries([
      [requests('PUT', '/v1/kv/*', 200), 3],
      [requests('GET', '/v1/kv/*', 200), 1],
      [requests('GET', '/v1/kv/*', 404), 1],
      [requests('PUT', '/v1/session/create', 200), 1],
      [requests('GET', 'unmatched', 404), 1],
      [requests('POST', '/v1/agent/self', 405), 1],
      [requests('GET', '/v1/agent/metrics', 200), 1],
    ]));
    // Route labels are patterns: no raw path appears anywhere in the output.
    expect(after.text).not.toContain('/v1/kv/metrics');
    expect(after.text).not.toContain('/v1/no/such');
    const durationCounts = moved(before.samples, after.samples, 'roster_http_request_duration_seconds_count');
    expect(Object.fromEntries(durationCounts)).toEqual(Object.fromEntries([
      [seriesKey('roster_http_request_duration_seconds_count', { method: 'PUT', route: '/v1/kv/*' }), 3],
      [seriesKey('roster_http_request_duration_seconds_count', { method: 'GET', route: '/v1/kv/*' }), 2],
      [seriesKey('roster_http_request_duration_seconds_count', { method: 'PUT', route: '/v1/session/create' }), 1],
      [seriesKey('roster_http_request_duration_seconds_count', { method: 'GET', route: 'unmatched' }), 1],
      [seriesKey('roster_http_request_duration_seconds_count', { method: 'POST', route: '/v1/agent/self' }), 1],
      [seriesKey('roster_http_request_duration_seconds_count', { method: 'GET', route: '/v1/agent/metrics' }), 1],
    ]));
    expect(checkHistograms(after.families)).toBeGreaterThanOrEqual(8);

    // Four writes (two puts, a session, an acquire), each its own append; every entry committed and applied once.
    const delta = (key: string) => (after.samples.get(key) ?? 0) - (before.samples.get(key) ?? 0);
    expect(delta('roster_log_append_duration_seconds_count{}')).toBe(4);
    expect(delta(seriesKey('roster_log_commit_entries_sum', { log: 'wal' }))).toBe(4);
    expect(delta(seriesKey('roster_log_commit_entries_count', { log: 'wal' }))).toBeGreaterThanOrEqual(1);
    expect(delta(seriesKey('roster_log_commit_duration_seconds_count', { log: 'wal' }))).toBe(delta(seriesKey('roster_log_commit_entries_count', { log: 'wal' })));
    expect(delta('roster_apply_batch_entries_sum{}')).toBe(4);
    expect(delta('roster_apply_duration_seconds_count{}')).toBe(delta('roster_apply_batch_entries_count{}'));
    expect(delta(gauge('roster_registry_index'))).toBe(4);
    expect(delta(gauge('roster_sessions'))).toBe(1);
    expect(delta(gauge('roster_locks_held'))).toBe(1);
    expect(delta(gauge('roster_kv_keys'))).toBe(2);

    // The gauges are the state the API shows.
    const index = Number((await c.get('/v1/kv/metrics/lock')).headers.get('x-consul-index'));
    expect(after.samples.get(gauge('roster_registry_index'))).toBe(index);
    const sessions = (await c.get('/v1/session/list')).json<unknown[]>();
    expect(after.samples.get(gauge('roster_sessions'))).toBe(sessions.length);
    expect(after.samples.get(gauge('roster_gossip_members', { status: 'alive' }))).toBe(1);

    // Releasing and destroying bring the gauges back.
    expect((await c.put(`/v1/kv/metrics/lock?release=${session}`, 'x')).text).toBe('true');
    expect((await c.put(`/v1/session/destroy/${session}`)).status).toBe(200);
    const last = await scrape();
    expect(last.samples.get(gauge('roster_locks_held'))).toBe(before.samples.get(gauge('roster_locks_held')));
    expect(last.samples.get(gauge('roster_sessions'))).toBe(before.samples.get(gauge('roster_sessions')));
  });

  test('every family has help and a type, names start with roster_ (or prom-client\'s process_ and nodejs_), counters are cumulative across scrapes', async () => {
    const one = await scrape();
    for (const f of one.families) {
      expect(f.name, f.name).toMatch(/^(roster|process|nodejs)_[a-z0-9_]+$/);
      expect(f.help.length, `${f.name} help`).toBeGreaterThan(10);
      expect(['counter', 'gauge', 'histogram']).toContain(f.type);
    }
    const names = one.families.map((f) => f.name);
    for (const name of ['roster_http_requests', 'roster_http_request_duration_seconds', 'roster_log_append_duration_seconds', 'roster_log_commit_duration_seconds',
      'roster_log_commit_entries', 'roster_apply_duration_seconds', 'roster_apply_batch_entries', 'roster_registry_index', 'roster_sessions', 'roster_locks_held',
      'roster_checks', 'roster_stream_connections', 'roster_stream_subscriptions', 'roster_grpc_watchers', 'roster_gossip_members',
      // prom-client's default collectors.
      'process_cpu_seconds', 'process_resident_memory_bytes', 'process_start_time_seconds', 'nodejs_heap_size_used_bytes', 'nodejs_eventloop_lag_seconds',
      'nodejs_gc_duration_seconds', 'nodejs_version_info']) {
      expect(names, name).toContain(name);
    }
    const two = await scrape();
    const key = requests('GET', '/v1/agent/metrics', 200);
    expect(two.samples.get(key)).toBe(one.samples.get(key)! + 1);
  });

  test('checks by status and stream subscribers follow the registry', async () => {
    const before = await scrape();
    expect((await c.put('/v1/agent/service/register', { ID: 'metrics-svc', Name: 'metrics-svc' })).status).toBe(200);
    expect((await c.put('/v1/agent/check/register', { ID: 'metrics-ttl', Name: 'metrics ttl', ServiceID: 'metrics-svc', TTL: '10m' })).status).toBe(200);
    expect((await c.put('/v1/agent/check/warn/metrics-ttl')).status).toBe(200);
    const ws = new WebSocket(`ws://127.0.0.1:${new URL(agent.url).port}/v1/stream`, ['registry.stream.v1']);
    try {
      const messages: string[] = [];
      ws.on('message', (d) => messages.push(d.toString()));
      await new Promise<void>((res, rej) => { ws.once('open', () => res()); ws.once('error', rej); });
      ws.send(JSON.stringify({ op: 'subscribe', id: 's1', topic: 'kv_prefix', key: 'metrics/' }));
      const deadline = Date.now() + waitMs;
      while (!messages.some((m) => m.includes('end_of_snapshot')) && Date.now() < deadline) await sleep(10);
      expect(messages.some((m) => m.includes('end_of_snapshot')), messages.join('\n')).toBe(true);
      const during = await scrape();
      const delta = (key: string) => (during.samples.get(key) ?? 0) - (before.samples.get(key) ?? 0);
      expect(delta(gauge('roster_checks', { status: 'warning' }))).toBe(1);
      expect(delta(gauge('roster_checks', { status: 'critical' }))).toBe(0);
      expect(delta(gauge('roster_stream_connections'))).toBe(1);
      expect(delta(gauge('roster_stream_subscriptions'))).toBe(1);
    } finally {
      ws.terminate();
    }
    const deadline = Date.now() + waitMs;
    let after = await scrape();
    while (after.samples.get(gauge('roster_stream_connections')) !== before.samples.get(gauge('roster_stream_connections')) && Date.now() < deadline) {
      await sleep(50);
      after = await scrape();
    }
    expect(after.samples.get(gauge('roster_stream_connections'))).toBe(before.samples.get(gauge('roster_stream_connections')));
    expect(after.samples.get(gauge('roster_stream_subscriptions'))).toBe(before.samples.get(gauge('roster_stream_subscriptions')));
  });

  test('open gRPC Health/Watch calls are counted while they last', async () => {
    const Health = grpc.makeClientConstructor(healthService as grpc.ServiceDefinition, 'grpc.health.v1.Health');
    const health = new Health(agent.grpc, grpc.credentials.createInsecure()) as unknown as grpc.Client & {
      watch(req: { service: string }): grpc.ClientReadableStream<{ status: string }>;
    };
    const key = gauge('roster_grpc_watchers');
    const before = (await scrape()).samples.get(key)!;
    try {
      const call = health.watch({ service: '' });
      call.on('error', () => { /* the cancel below ends it */ });
      const first = await new Promise<string>((res, rej) => {
        const timer = setTimeout(() => rej(new Error('no Watch message within the bound')), waitMs);
        call.once('data', (m: { status: string }) => { clearTimeout(timer); res(m.status); });
      });
      expect(first).toBe('SERVING');
      expect((await scrape()).samples.get(key)).toBe(before + 1);
      call.cancel();
      const deadline = Date.now() + waitMs;
      let now = (await scrape()).samples.get(key);
      while (now !== before && Date.now() < deadline) {
        await sleep(50);
        now = (await scrape()).samples.get(key);
      }
      expect(now).toBe(before);
    } finally {
      health.close();
    }
  });
});

describe('JSON (Consul shape)', () => {
  test('carries the same figures as the Prometheus text', async () => { // once a gRPC connection closed earlier is counted out
    await expect.poll(async () => (await scrape()).samples.get(gauge('roster_grpc_connections')), { timeout: waitMs }).toBe(0);
    await c.put('/v1/kv/metrics/json', 'x');
    const r = await c.get('/v1/agent/metrics');
    expect(r.status).toBe(200);
    expect(r.headers.get('content-type')).toBe('application/json');
    const body = r.json<{ Timestamp: string; Gauges: any[]; Points: unknown[]; Counters: any[]; Samples: any[] }>();
    const prom = await scrape(); // counts the JSON request above, not itself
    expect(body.Timestamp).toMatch(/^\d{4}-\d{2}-\d{2} \d{2}:\d{2}:\d{2} \+0000 UTC$/);
    expect(Math.abs(Date.parse(body.Timestamp.replace(' +0000 UTC', 'Z').replace(' ', 'T')) - Date.now())).toBeLessThan(60_000);
    expect(body.Points).toEqual([]);

    // Roster's own series must agree exactly; prom-client's process and Node.js series move between two
    // scrapes (memory, lag), so those are only looked up by name; Consul-named ones are another test's.
    const ours = (name: string) => name.startsWith('roster_');
    const familyNames = new Set(prom.families.map((f) => f.name));
    for (const g of body.Gauges) {
      expect(Object.keys(g).sort()).toEqual(['Labels', 'Name', 'Value']);
      if (ours(g.Name)) expect(prom.samples.get(seriesKey(g.Name, g.Labels)), `${g.Name} ${JSON.stringify(g.Labels)}`).toBe(g.Value);
      else if (!g.Name.startsWith('consul.')) expect(familyNames, g.Name).toContain(g.Name);
    }
    const promGauges = prom.families.filter((f) => f.type === 'gauge' && ours(f.name)).reduce((n, f) => n + f.samples.length, 0);
    expect(body.Gauges.filter((g) => ours(g.Name)).length).toBe(promGauges);
    expect(body.Gauges.map((g) => g.Name)).toEqual(expect.arrayContaining(['process_resident_memory_bytes', 'nodejs_heap_size_used_bytes']));

    const jsonRequest = requests('GET', '/v1/agent/metrics', 200);
    let counters = 0;
    for (const s of body.Counters) {
      expect(Object.keys(s).sort()).toEqual(['Count', 'Labels', 'Max', 'Mean', 'Min', 'Name', 'Rate', 'Stddev', 'Sum']);
      if (!ours(s.Name)) continue;
      const key = seriesKey(s.Name, s.Labels);
      const expected = key === jsonRequest ? prom.samples.get(key)! - 1 : prom.samples.get(key);
      expect(s.Count, key).toBe(expected);
      expect(s.Sum, key).toBe(expected);
      expect([s.Min, s.Max, s.Mean, s.Stddev], key).toEqual(s.Count > 0 ? [1, 1, 1, 0] : [0, 0, 0, 0]);
      counters += 1;
    }
    // Every counter series of the text but the JSON request's own (absent before it was answered, when it was the first).
    const promCounters = prom.families.filter((f) => f.type === 'counter' && ours(f.name)).reduce((n, f) => n + f.samples.length, 0);
    expect(counters).toBeGreaterThanOrEqual(promCounters - 1);
    expect(counters).toBeGreaterThan(3);

    expect(body.Counters.map((s) => s.Name)).toContain('process_cpu_seconds_total');
    const jsonRoute = JSON.stringify({ method: 'GET', route: '/v1/agent/metrics' });
    for (const s of body.Samples) {
      expect(Object.keys(s).sort()).toEqual(['Count', 'Labels', 'Max', 'Mean', 'Min', 'Name', 'Rate', 'Stddev', 'Sum']);
      if (!ours(s.Name)) continue;
      if (s.Name === 'roster_http_request_duration_seconds' && JSON.stringify(s.Labels) === jsonRoute) continue;
      expect(s.Count, s.Name).toBe(prom.samples.get(seriesKey(`${s.Name}_count`, s.Labels)));
      expect(s.Sum, s.Name).toBe(prom.samples.get(seriesKey(`${s.Name}_sum`, s.Labels)));
      if (s.Count > 0) {
        expect(s.Min).toBeLessThanOrEqual(s.Mean);
        expect(s.Mean).toBeLessThanOrEqual(s.Max);
        expect(s.Mean).toBeCloseTo(s.Sum / s.Count, 12);
      }
    }
    const names = new Set(body.Samples.map((s) => s.Name));
    for (const name of ['roster_http_request_duration_seconds', 'roster_log_commit_entries', 'roster_apply_batch_entries']) expect(names).toContain(name);
    // Batch sizes are whole entries: the smallest commit held at least one.
    const commits = body.Samples.find((s) => s.Name === 'roster_log_commit_entries')!;
    expect(commits.Min).toBeGreaterThanOrEqual(1);
    expect(Number.isInteger(commits.Max)).toBe(true);
  });

  test('?format=json names the default; an unknown format is 400 code 1009 and changes nothing', async () => {
    const explicit = await c.get('/v1/agent/metrics?format=json');
    expect(explicit.status).toBe(200);
    expect(Object.keys(explicit.json()).sort()).toEqual(['Counters', 'Gauges', 'Points', 'Samples', 'Timestamp']);
    const before = await scrape();
    for (const format of ['xml', 'PROMETHEUS', 'openmetrics']) {
      const body = expectError(await c.get(`/v1/agent/metrics?format=${format}`), 400, 1009);
      expect(body.details).toEqual({ format: ['Enum:must be prometheus or json'] });
    }
    const after = await scrape();
    expect(after.samples.get(gauge('roster_registry_index'))).toBe(before.samples.get(gauge('roster_registry_index')));
    expect(after.samples.get(requests('GET', '/v1/agent/metrics', 400))).toBe((before.samples.get(requests('GET', '/v1/agent/metrics', 400)) ?? 0) + 3);
  });
});

describe('authentication', () => {
  test('with auth on, the metrics need agent read, as /v1/agent/self does', async () => {
    const secret = 'metrics-test-secret-that-is-long-enough-0123';
    const secured = await startAgent({ env: { ROSTER_AUTH_SECRET: secret } });
    try {
      const tokens = new TokenAuthority({ secret });
      const agentRead = await tokens.mint({ subject: 'scraper', rules: [{ resource: 'agent', prefix: '', access: 'read' }], ttlSeconds: 600 });
      const keysOnly = await tokens.mint({ subject: 'other', rules: [{ resource: 'key', prefix: '', access: 'write' }], ttlSeconds: 600 });
      for (const path of ['/v1/agent/metrics', '/v1/agent/metrics?format=prometheus']) {
        expectError(await call(secured.url, 'GET', path), 401, 1002);
        expectError(await call(secured.url, 'GET', path, undefined, { authorization: `Bearer ${keysOnly}` }), 403, 1004);
        expect((await call(secured.url, 'GET', path, undefined, { authorization: `Bearer ${agentRead}` })).status).toBe(200);
        expect((await call(secured.url, 'GET', '/v1/agent/self', undefined, { authorization: `Bearer ${agentRead}` })).status).toBe(200);
      }
      // The refused scrapes are counted too, against the route they asked for.
      const text = (await call(secured.url, 'GET', '/v1/agent/metrics?format=prometheus', undefined, { 'x-consul-token': agentRead })).text;
      const samples = sampleMap(await parsePrometheus(text));
      expect(samples.get(requests('GET', '/v1/agent/metrics', 401))).toBe(2);
      expect(samples.get(requests('GET', '/v1/agent/metrics', 403))).toBe(2);
    } finally {
      await secured.stop();
      secured.cleanup();
    }
  });
});

/** The agent's JSON log lines that say `request` with this reqId, waiting (bounded) for at least one. */
async function requestLines(a: Agent, reqId: string): Promise<any[]> {
  const deadline = Date.now() + waitMs;
  for (;;) {
    const lines = a.output().split('\n').filter((l) => l.includes(reqId)).map((l) => JSON.parse(l)).filter((o) => o.msg === 'request' && o.reqId === reqId);
    if (lines.length > 0 || Date.now() > deadline) return lines;
    await sleep(20);
  }
}

describe('request ids and request logs', () => {
  test('a sane x-request-id comes back and is the id of the request\'s log line', async () => {
    const sane = 'trace-7f.A:9_z';
    const r = await c.put('/v1/kv/metrics/traced', 'x', { 'x-request-id': sane });
    expect(r.headers.get('x-request-id')).toBe(sane);
    const lines = await requestLines(agent, sane);
    expect(lines).toHaveLength(1);
    expect(lines[0]).toMatchObject({ level: 20, reqId: sane, method: 'PUT', route: '/v1/kv/*', path: '/v1/kv/metrics/traced', status: 200, node: 'node1' });
    expect(typeof lines[0].ms).toBe('number');
    expect(lines[0].ms).toBeGreaterThanOrEqual(0);
  });

  test('an id that is too long, empty or has other characters is replaced by a fresh one, which the log line carries', async () => {
    for (const bad of ['', 'x'.repeat(129), 'has space', 'quote"d', 'semi;colon', 'slash/ed', 'ünïcode']) {
      const r = await c.get('/v1/no/such', { 'x-request-id': bad });
      const id = r.headers.get('x-request-id')!;
      expect(id, bad).toMatch(uuid);
      const lines = await requestLines(agent, id);
      expect(lines, bad).toHaveLength(1);
      expect(lines[0]).toMatchObject({ route: 'unmatched', status: 404, path: '/v1/no/such' });
    }
    const longest = 'a'.repeat(128);
    expect((await c.get('/v1/status/leader', { 'x-request-id': longest })).headers.get('x-request-id')).toBe(longest);
    const fresh = new Set<string>();
    for (let k = 0; k < 3; k += 1) fresh.add((await c.get('/v1/status/leader')).headers.get('x-request-id')!);
    expect(fresh.size).toBe(3);
  });

  test('at info no request line is written; a 5xx is written at warn and counted against its route', async () => {
    const configFile = join(agent.dataDir, 'info-agent.json');
    // One write in flight at a time: concurrent writes are answered 503 before routing.
    writeFileSync(configFile, JSON.stringify({ writes_in_flight_max: 1 }));
    const info = await startAgent({ args: ['--config-file', configFile] });
    try {
      const ok = await call(info.url, 'GET', '/v1/status/leader', undefined, { 'x-request-id': 'info-level-ok' });
      expect(ok.status).toBe(200);
      let busy: { id: string } | undefined;
      for (let round = 0; round < 20 && busy === undefined; round += 1) {
        const answers = await Promise.all(Array.from({ length: 24 }, (_, k) =>
          call(info.url, 'PUT', `/v1/kv/busy/${round}-${k}`, 'x', { 'x-request-id': `busy-${round}-${k}` })));
        const refused = answers.find((a) => a.status === 503);
        if (refused) busy = { id: refused.headers.get('x-request-id')! };
      }
      expect(busy, 'no write was answered 503 with one write in flight allowed').toBeDefined();
      const lines = await requestLines(info, busy!.id);
      expect(lines).toHaveLength(1);
      expect(lines[0]).toMatchObject({ level: 40, method: 'PUT', route: '/v1/kv/*', status: 503 });
      expect(info.output()).not.toContain('info-level-ok');
      const prom = await scrape(info);
      expect(prom.samples.get(requests('PUT', '/v1/kv/*', 503))).toBeGreaterThanOrEqual(1);
      expect(prom.samples.get(requests('GET', '/v1/status/leader', 200))).toBe(1);
    } finally {
      await info.stop();
      info.cleanup();
    }
  });
});
