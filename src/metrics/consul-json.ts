/**
 * The JSON form of /v1/agent/metrics in Consul's shape (go-metrics' in-memory sink): `Timestamp`,
 * `Gauges` [{Name, Value, Labels}], `Points`, `Counters` and `Samples` [{Name, Count, Rate, Sum, Min,
 * Max, Mean, Stddev, Labels}]. It is read from the same registry as the Prometheus text, so the two
 * always agree. Unlike Consul's sink, which keeps one 10-second interval, the figures run from the
 * agent's start, as the Prometheus ones do; `Rate` is `Sum` per second over that time.
 */
import { Counter, Gauge, Histogram, type MetricObjectWithValues, type MetricValue, type Registry } from 'prom-client';
import { CounterFamily, HistogramFamily, type HistogramChild } from './instruments.ts';

export interface ConsulGauge {
  Name: string;
  Value: number;
  Labels: Record<string, string>;
}

export interface ConsulSampled {
  Name: string;
  Count: number;
  Rate: number;
  Sum: number;
  Min: number;
  Max: number;
  Mean: number;
  Stddev: number;
  Labels: Record<string, string>;
}

export interface ConsulMetrics {
  /** UTC, as Go prints a time: `2026-11-23 04:55:10 +0000 UTC`. */
  Timestamp: string;
  Gauges: ConsulGauge[];
  /** Consul's key/value points; Roster has none. */
  Points: never[];
  Counters: ConsulSampled[];
  Samples: ConsulSampled[];
}

export async function consulMetrics(registry: Registry, nowMs: number, uptimeSeconds: number): Promise<ConsulMetrics> {
  const out: ConsulMetrics = { Timestamp: goTime(nowMs), Gauges: [], Points: [], Counters: [], Samples: [] };
  const seconds = Math.max(uptimeSeconds, 1e-9);
  for (const metric of registry.getMetricsAsArray()) {
    const m: unknown = metric;
    if (m instanceof CounterFamily) {
      // Every increment is one: Count and Sum are the counter's value, each increment's size is 1.
      for (const c of m.children()) {
        const one = c.value > 0 ? 1 : 0;
        out.Counters.push({ Name: m.name, Count: c.value, Rate: c.value / seconds, Sum: c.value, Min: one, Max: one, Mean: one, Stddev: 0, Labels: { ...c.labels } });
      }
    } else if (m instanceof HistogramFamily) {
      for (const c of m.children()) out.Samples.push(sampled(m.name, c, seconds));
    } else if (m instanceof Gauge) {
      const data = await m.get();
      for (const v of data.values) out.Gauges.push({ Name: data.name, Value: v.value, Labels: stringLabels(v.labels) });
    } else if (m instanceof Counter) {
      // prom-client's own counters (process_cpu_seconds_total) grow by any amount: Count and Sum are their value.
      const data = await m.get();
      for (const v of data.values) {
        out.Counters.push({ Name: data.name, Count: v.value, Rate: v.value / seconds, Sum: v.value, Min: 0, Max: 0, Mean: 0, Stddev: 0, Labels: stringLabels(v.labels) });
      }
    } else if (m instanceof Histogram) {
      out.Samples.push(...promHistogramSamples(await m.get(), seconds));
    } else {
      // Every metric is made in this module; another kind would be a bug, not something to skip.
      throw new Error(`metrics: ${metric.name} is of a kind the JSON form does not know`);
    }
  }
  return out;
}

function sampled(name: string, c: HistogramChild, seconds: number): ConsulSampled {
  const empty = c.count === 0;
  return {
    Name: name, Count: c.count, Rate: c.sum / seconds, Sum: c.sum,
    Min: empty ? 0 : c.min, Max: empty ? 0 : c.max, Mean: empty ? 0 : c.sum / c.count, Stddev: stddev(c),
    Labels: { ...c.labels },
  };
}

/**
 * prom-client's own histograms (nodejs_gc_duration_seconds) keep buckets, count and sum: Count, Sum and
 * Mean come from those; they keep no extremes or squares, so Min, Max and Stddev are 0.
 */
function promHistogramSamples(data: MetricObjectWithValues<MetricValue<string>>, seconds: number): ConsulSampled[] {
  const byLabels = new Map<string, ConsulSampled>();
  for (const v of data.values) {
    const metricName = (v as { metricName?: string }).metricName ?? '';
    if (!metricName.endsWith('_sum') && !metricName.endsWith('_count')) continue;
    const labels = stringLabels(v.labels);
    const key = JSON.stringify(labels);
    let s = byLabels.get(key);
    if (s === undefined) byLabels.set(key, (s = { Name: data.name, Count: 0, Rate: 0, Sum: 0, Min: 0, Max: 0, Mean: 0, Stddev: 0, Labels: labels }));
    if (metricName.endsWith('_sum')) s.Sum = v.value;
    else s.Count = v.value;
  }
  for (const s of byLabels.values()) {
    s.Rate = s.Sum / seconds;
    s.Mean = s.Count > 0 ? s.Sum / s.Count : 0;
  }
  return [...byLabels.values()];
}

/** The sample standard deviation, as go-metrics computes it from the count, sum and sum of squares. */
function stddev(c: HistogramChild): number {
  if (c.count < 2) return 0;
  const num = c.count * c.sumSquares - c.sum * c.sum;
  return Math.sqrt(Math.max(0, num) / (c.count * (c.count - 1)));
}

function stringLabels(labels: Partial<Record<string, string | number>>): Record<string, string> {
  return Object.fromEntries(Object.entries(labels).filter(([, v]) => v !== undefined).map(([k, v]) => [k, String(v)]));
}

function goTime(ms: number): string {
  return `${new Date(ms).toISOString().slice(0, 19).replace('T', ' ')} +0000 UTC`;
}
