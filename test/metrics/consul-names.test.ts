// Goal: Consul's names in the JSON form are made from Roster's entries of the same answer: merged samples
// are those of the union of their observations (count, sum, extremes, sample standard deviation), timers
// are in milliseconds, route patterns become Consul's `v1.kv._` paths, and a Consul name whose source is
// absent is left out rather than made up.
import { Registry } from 'prom-client';
import { describe, expect, test } from 'vitest';
import { consulMetrics, type ConsulSampled } from '../../src/metrics/consul-json.ts';
import { addConsulNames, consulPath, merge } from '../../src/metrics/consul-names.ts';
import { HistogramFamily } from '../../src/metrics/instruments.ts';

async function samplesOf(...groups: number[][]): Promise<ConsulSampled[]> {
  const h = new HistogramFamily('t_seconds', 'h', ['k'], [1]);
  groups.forEach((values, k) => { for (const v of values) h.child(String(k)).observe(v); });
  const registry = new Registry();
  registry.registerMetric(h as unknown as Parameters<Registry['registerMetric']>[0]);
  return (await consulMetrics(registry, 0, 1)).Samples;
}

describe('merge', () => {
  test('two samples merged are the sample of all their observations', async () => {
    const parts = await samplesOf([0.5, 1.5, 4], [2, 7]);
    const [whole] = await samplesOf([0.5, 1.5, 4, 2, 7]);
    const merged = merge('m', parts, {}, 1);
    expect([merged.Count, merged.Sum, merged.Min, merged.Max, merged.Mean]).toEqual([whole!.Count, whole!.Sum, whole!.Min, whole!.Max, whole!.Mean]);
    expect(merged.Stddev).toBeCloseTo(whole!.Stddev, 12);
  });

  test('empty parts count for nothing; nothing at all is a zero sample', async () => {
    const [one] = await samplesOf([3]);
    const empty = { ...one!, Count: 0, Sum: 0, Min: 0, Max: 0, Mean: 0 };
    expect(merge('m', [empty, one!], {}, 1)).toMatchObject({ Count: 1, Sum: 3, Min: 3, Max: 3, Stddev: 0 });
    expect(merge('m', [empty], {}, 1)).toMatchObject({ Count: 0, Sum: 0, Min: 0, Max: 0, Mean: 0, Stddev: 0 });
  });
});

describe('addConsulNames', () => {
  test('timers in ms from the routes Consul times; consul.api.http per route; gauges; absent sources left out', () => {
    const sample = (name: string, labels: Record<string, string>, values: number[]): ConsulSampled => {
      const sum = values.reduce((a, b) => a + b, 0);
      const mean = sum / values.length;
      const sd = values.length < 2 ? 0 : Math.sqrt(values.reduce((a, v) => a + (v - mean) ** 2, 0) / (values.length - 1));
      return { Name: name, Count: values.length, Rate: sum, Sum: sum, Min: Math.min(...values), Max: Math.max(...values), Mean: mean, Stddev: sd, Labels: labels };
    };
    const out = {
      Timestamp: '', Points: [] as never[], Counters: [],
      Gauges: [{ Name: 'roster_registry_index', Value: 40, Labels: {} }, { Name: 'roster_apply_lag_entries', Value: 2, Labels: {} }],
      Samples: [
        sample('roster_http_request_duration_seconds', { method: 'PUT', route: '/v1/kv/*' }, [0.001, 0.003]),
        sample('roster_http_request_duration_seconds', { method: 'DELETE', route: '/v1/kv/*' }, [0.002]),
        sample('roster_http_request_duration_seconds', { method: 'GET', route: '/v1/kv/*' }, [0.5]),
        sample('roster_log_commit_entries', { log: 'wal' }, [1, 3]),
      ],
    };
    addConsulNames(out, 2);
    const kvs = out.Samples.find((s) => s.Name === 'consul.kvs.apply')!;
    expect([kvs.Count, kvs.Min, kvs.Max, kvs.Labels]).toEqual([3, 1, 3, {}]);
    expect(kvs.Sum).toBeCloseTo(6, 9);
    expect(kvs.Mean).toBeCloseTo(2, 9);
    expect(kvs.Rate).toBeCloseTo(3, 9);
    const api = out.Samples.filter((s) => s.Name === 'consul.api.http').map((s) => [s.Labels, s.Count]);
    expect(api).toEqual([[{ method: 'PUT', path: 'v1.kv._' }, 2], [{ method: 'DELETE', path: 'v1.kv._' }, 1], [{ method: 'GET', path: 'v1.kv._' }, 1]]);
    expect(out.Gauges.filter((g) => g.Name.startsWith('consul.'))).toEqual([
      { Name: 'consul.raft.applied_index', Value: 40, Labels: {} },
      { Name: 'consul.raft.last_index', Value: 42, Labels: {} },
    ]);
    expect(out.Counters).toEqual([{ Name: 'consul.raft.apply', Count: 4, Rate: 2, Sum: 4, Min: 1, Max: 1, Mean: 1, Stddev: 0, Labels: {} }]);
    // No transactions, sessions or commits timed: their Consul names are absent, not zero-filled guesses.
    for (const name of ['consul.txn.apply', 'consul.session.apply', 'consul.raft.commitTime', 'consul.session_ttl.active']) {
      expect([...out.Samples, ...out.Gauges].map((s) => s.Name)).not.toContain(name);
    }
  });

  test('route patterns become Consul paths', () => {
    expect(consulPath('/v1/kv/*')).toBe('v1.kv._');
    expect(consulPath('/v1/session/destroy/*')).toBe('v1.session.destroy._');
    expect(consulPath('/v1/status/leader')).toBe('v1.status.leader');
    expect(consulPath('unmatched')).toBe('unmatched');
  });
});
