/**
 * Consul's metric names in the JSON form of /v1/agent/metrics, where Roster has an equivalent series, so
 * that dashboards and checks written against Consul's JSON carry over. Each Consul entry is made from
 * the Roster entries of the same answer (never measured twice), in Consul's units: timers in
 * milliseconds (the runtime's GC pause in nanoseconds), gauges and counters as they are. The mapping is
 * listed in docs/metrics.md.
 */
import type { ConsulGauge, ConsulMetrics, ConsulSampled } from './consul-json.ts';

type Labels = Record<string, string>;

/** A timer of Consul made from Roster duration samples (in seconds) that `from` selects, merged. */
interface TimerRule {
  name: string;
  source: string;
  from?: (labels: Labels) => boolean;
  /** Seconds to Consul's unit. @default 1000 (milliseconds) */
  scale?: number;
}

const kvRoute = '/v1/kv/*';

/** Request service times by method and route pattern. */
const request = (method: string, ...routes: string[]) => (l: Labels) => l.method === method && routes.includes(l.route ?? '');

const timers: readonly TimerRule[] = [
  { name: 'consul.kvs.apply', source: 'roster_http_request_duration_seconds', from: (l) => l.route === kvRoute && (l.method === 'PUT' || l.method === 'DELETE') },
  { name: 'consul.txn.apply', source: 'roster_http_request_duration_seconds', from: request('PUT', '/v1/txn') },
  { name: 'consul.session.apply', source: 'roster_http_request_duration_seconds', from: request('PUT', '/v1/session/create', '/v1/session/destroy/*') },
  { name: 'consul.catalog.register', source: 'roster_http_request_duration_seconds', from: request('PUT', '/v1/catalog/register') },
  { name: 'consul.catalog.deregister', source: 'roster_http_request_duration_seconds', from: request('PUT', '/v1/catalog/deregister') },
  { name: 'consul.session_ttl.invalidate', source: 'roster_session_ttl_invalidate_seconds' },
  { name: 'consul.raft.commitTime', source: 'roster_log_commit_duration_seconds' },
  { name: 'consul.raft.fsm.apply', source: 'roster_apply_duration_seconds' },
  { name: 'consul.runtime.gc_pause_ns', source: 'nodejs_gc_duration_seconds', scale: 1e9 },
];

/** Consul's gauges made from Roster gauges (summed over label sets), each as is or from a function of them. */
const gauges: readonly { name: string; value: (g: (name: string) => number | undefined) => number | undefined }[] = [
  { name: 'consul.raft.applied_index', value: (g) => g('roster_registry_index') },
  { name: 'consul.raft.last_index', value: (g) => sumOf(g('roster_registry_index'), g('roster_apply_lag_entries')) },
  { name: 'consul.session_ttl.active', value: (g) => g('roster_sessions') },
  { name: 'consul.runtime.alloc_bytes', value: (g) => g('nodejs_heap_size_used_bytes') },
  { name: 'consul.runtime.sys_bytes', value: (g) => g('process_resident_memory_bytes') },
];

function sumOf(a: number | undefined, b: number | undefined): number | undefined {
  return a === undefined || b === undefined ? undefined : a + b;
}

/** Adds Consul's names to `out` (which holds Roster's), made from Roster's entries. */
export function addConsulNames(out: ConsulMetrics, uptimeSeconds: number): void {
  const seconds = Math.max(uptimeSeconds, 1e-9);
  const samples = out.Samples;
  const added: ConsulSampled[] = [];
  for (const rule of timers) {
    const picked = samples.filter((s) => s.Name === rule.source && (rule.from === undefined || rule.from(s.Labels)));
    if (picked.length > 0) added.push(scaled(merge(rule.name, picked, {}, seconds), rule.scale ?? 1000, seconds));
  }
  // consul.api.http: every route's service time, labelled as Consul labels it (path `v1.kv._`).
  for (const s of samples) {
    if (s.Name !== 'roster_http_request_duration_seconds') continue;
    added.push(scaled({ ...s, Name: 'consul.api.http', Labels: { method: s.Labels.method ?? '', path: consulPath(s.Labels.route ?? '') } }, 1000, seconds));
  }
  out.Samples.push(...added);
  out.Gauges.push(...consulGauges(out.Gauges, samples));
  const commits = samples.filter((s) => s.Name === 'roster_log_commit_entries');
  if (commits.length > 0) {
    // consul.raft.apply: entries committed by this node, each an increment of one.
    const entries = commits.reduce((n, s) => n + s.Sum, 0);
    const one = entries > 0 ? 1 : 0;
    out.Counters.push({ Name: 'consul.raft.apply', Count: entries, Rate: entries / seconds, Sum: entries, Min: one, Max: one, Mean: one, Stddev: 0, Labels: {} });
  }
}

function consulGauges(roster: readonly ConsulGauge[], samples: readonly ConsulSampled[]): ConsulGauge[] {
  const totals = new Map<string, number>();
  for (const g of roster) totals.set(g.Name, (totals.get(g.Name) ?? 0) + g.Value);
  const out: ConsulGauge[] = [];
  for (const rule of gauges) {
    const value = rule.value((name) => totals.get(name));
    if (value !== undefined) out.push({ Name: rule.name, Value: value, Labels: {} });
  }
  const gc = samples.filter((s) => s.Name === 'nodejs_gc_duration_seconds');
  if (gc.length > 0) {
    out.push({ Name: 'consul.runtime.total_gc_pause_ns', Value: gc.reduce((n, s) => n + s.Sum, 0) * 1e9, Labels: {} });
    out.push({ Name: 'consul.runtime.total_gc_runs', Value: gc.reduce((n, s) => n + s.Count, 0), Labels: {} });
  }
  return out;
}

/** A route pattern as Consul's consul.api.http labels its path: `/v1/kv/*` → `v1.kv._`. */
export function consulPath(route: string): string {
  return route.replace(/^\//, '').replaceAll('/', '.').replaceAll('*', '_');
}

/**
 * Several samples as one: counts and sums add up, extremes combine, and the sample standard deviation
 * is recomputed from each part's sum of squares (recovered from its count, mean and deviation).
 */
export function merge(name: string, parts: readonly ConsulSampled[], labels: Labels, seconds: number): ConsulSampled {
  let count = 0;
  let sum = 0;
  let squares = 0;
  let min = Infinity;
  let max = -Infinity;
  for (const p of parts) {
    if (p.Count === 0) continue;
    count += p.Count;
    sum += p.Sum;
    squares += p.Stddev * p.Stddev * (p.Count - 1) + p.Count * p.Mean * p.Mean;
    min = Math.min(min, p.Min);
    max = Math.max(max, p.Max);
  }
  if (count === 0) return { Name: name, Count: 0, Rate: 0, Sum: 0, Min: 0, Max: 0, Mean: 0, Stddev: 0, Labels: labels };
  const variance = count < 2 ? 0 : Math.max(0, (count * squares - sum * sum) / (count * (count - 1)));
  return { Name: name, Count: count, Rate: sum / seconds, Sum: sum, Min: min, Max: max, Mean: sum / count, Stddev: Math.sqrt(variance), Labels: labels };
}

function scaled(s: ConsulSampled, scale: number, seconds: number): ConsulSampled {
  return {
    ...s, Sum: s.Sum * scale, Rate: (s.Sum * scale) / seconds, Min: s.Min * scale, Max: s.Max * scale, Mean: s.Mean * scale, Stddev: s.Stddev * scale,
    Labels: { ...s.Labels },
  };
}
