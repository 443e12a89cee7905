// Goal: the hot-path counters and histograms in a prom-client Registry — bucket edges as Prometheus means
// them (`le` is inclusive), cumulative exposition that the Prometheus parser reads back with labels intact
// (escaping is prom-client's), children kept across resets, bounded label sets, the Consul JSON figures
// (go-metrics' sample standard deviation), and AgentMetrics' bounded method label.
import { Registry } from 'prom-client';
import { describe, expect, test } from 'vitest';
import { AgentMetrics } from '../../src/metrics/index.ts';
import { consulMetrics } from '../../src/metrics/consul-json.ts';
import { childrenPerFamilyMax, CounterFamily, HistogramFamily } from '../../src/metrics/instruments.ts';
import { parsePrometheus, sampleMap, seriesKey } from '../support/prometheus.ts';

function registryWith(...families: (CounterFamily | HistogramFamily)[]): Registry {
  const registry = new Registry();
  for (const f of families) registry.registerMetric(f as unknown as Parameters<Registry['registerMetric']>[0]);
  return registry;
}

describe('HistogramFamily', () => {
  test('a value equal to a bound counts in that bucket; above the last bound only in +Inf; non-finite values are ignored', async () => {
    const h = new HistogramFamily('t_seconds', 'test histogram', ['route'], [0.1, 1, 10]);
    const child = h.child('/a');
    for (const v of [0.1, 0.5, 1, 10, 11, Number.NaN, Infinity]) child.observe(v);
    expect([...child.counts]).toEqual([1, 2, 1, 1]);
    expect([child.count, child.sum, child.min, child.max]).toEqual([5, 22.6, 0.1, 11]);
    const families = await parsePrometheus(await registryWith(h).metrics());
    const samples = sampleMap(families);
    // By the bound's number: parser versions differ in how they write `le` back ("1" or "1.0").
    const buckets = families[0]!.samples.filter((x) => x.name === 't_seconds_bucket').map((x) => [x.labels.le === '+Inf' ? Infinity : Number(x.labels.le), x.value]);
    expect(buckets).toEqual([[0.1, 1], [1, 3], [10, 4], [Infinity, 5]]);
    expect(samples.get(seriesKey('t_seconds_count', { route: '/a' }))).toBe(5);
    expect(samples.get(seriesKey('t_seconds_sum', { route: '/a' }))).toBeCloseTo(22.6, 12);
  });

  test('bounds must increase; "le" is not a label of its own', () => {
    expect(() => new HistogramFamily('x', 'h', [], [1, 1])).toThrow(/increasing/);
    expect(() => new HistogramFamily('x', 'h', [], [])).toThrow(/increasing/);
    expect(() => new HistogramFamily('x', 'h', ['le'], [1])).toThrow(/"le"/);
  });
});

describe('families', () => {
  test('label values with quotes, backslashes and newlines come back unchanged through the Prometheus parser', async () => {
    const c = new CounterFamily('t_total', 'test counter', ['route']);
    const odd = 'a "quoted" \\ back\nslash';
    c.child(odd).inc();
    c.child(odd).inc();
    const families = await parsePrometheus(await registryWith(c).metrics());
    expect(families).toEqual([{ name: 't', type: 'counter', help: 'test counter', samples: [{ name: 't_total', labels: { route: odd }, value: 2 }] }]);
  });

  test('a child is made once per label set and survives a registry reset (zeroed in place)', async () => {
    const c = new CounterFamily('t_total', 'test counter', ['method', 'status']);
    const child = c.child('GET', '200');
    expect(c.child('GET', '200')).toBe(child);
    expect(c.child('GET', '404')).not.toBe(child);
    child.inc();
    const h = new HistogramFamily('t_seconds', 'h', [], [1]);
    const hc = h.child();
    hc.observe(2);
    registryWith(c, h).resetMetrics();
    expect([child.value, hc.count, hc.sum, [...hc.counts]]).toEqual([0, 0, 0, [0, 0]]);
    child.inc();
    expect((await c.get()).values.find((v) => v.labels.status === '200')?.value).toBe(1);
    expect(() => c.child('GET')).toThrow(/2 label values expected/);
  });

  test('label sets are bounded', () => {
    const c = new CounterFamily('t_total', 'test counter', ['k']);
    for (let k = 0; k < childrenPerFamilyMax; k += 1) c.child(String(k));
    expect(() => c.child('one more')).toThrow(/more than/);
    expect(c.child('0')).toBeDefined();
  });
});

describe('Consul JSON', () => {
  test('Samples carry count, sum, min, max, mean and the sample standard deviation; Counters their value', async () => {
    const h = new HistogramFamily('t_seconds', 'h', [], [10]);
    for (const v of [1, 2, 3, 4]) h.child().observe(v);
    const c = new CounterFamily('t_total', 'c', ['k']);
    c.child('x').inc();
    c.child('x').inc();
    const out = await consulMetrics(registryWith(h, c), Date.UTC(2026, 10, 23, 4, 5, 6), 2);
    expect(out.Timestamp).toBe('2026-11-23 04:05:06 +0000 UTC');
    expect(out.Samples).toHaveLength(1);
    const s = out.Samples[0]!;
    expect([s.Name, s.Count, s.Sum, s.Min, s.Max, s.Mean, s.Rate]).toEqual(['t_seconds', 4, 10, 1, 4, 2.5, 5]);
    expect(s.Stddev).toBeCloseTo(Math.sqrt(5 / 3), 12);
    expect(out.Counters).toEqual([{ Name: 't_total', Count: 2, Rate: 1, Sum: 2, Min: 1, Max: 1, Mean: 1, Stddev: 0, Labels: { k: 'x' } }]);
  });
});

describe('AgentMetrics', () => {
  test('methods outside the known set count as OTHER; statuses and routes label the request', async () => {
    const m = new AgentMetrics();
    m.request('BREW', '/v1/kv/*', 405, 0.001);
    m.request('GET', '/v1/kv/*', 200, 0.002);
    m.request('GET', '/v1/kv/*', 200, 0.003);
    const samples = sampleMap(await parsePrometheus((await m.prometheus()).text));
    expect(samples.get(seriesKey('roster_http_requests_total', { method: 'OTHER', route: '/v1/kv/*', status: '405' }))).toBe(1);
    expect(samples.get(seriesKey('roster_http_requests_total', { method: 'GET', route: '/v1/kv/*', status: '200' }))).toBe(2);
    expect(samples.get(seriesKey('roster_http_request_duration_seconds_count', { method: 'GET', route: '/v1/kv/*' }))).toBe(2);
    expect(samples.get(seriesKey('roster_http_request_duration_seconds_count', { method: 'OTHER', route: '/v1/kv/*' }))).toBe(1);
    // Before the agent's parts are tracked, state gauges are 0 or absent, never an error.
    expect(samples.get('roster_sessions{}')).toBe(0);
  });
});
