// Goal: deploy/grafana-dashboard.json is a Grafana dashboard model that imports (ids, grid, targets,
// variables in order) and is built on what the agent really exports: every series a PromQL expression
// names is in a started agent's Prometheus text (as the Prometheus parser reads it), every label it
// matches or groups by is one those series carry (or a label Prometheus adds: instance, job), and the
// contention series operators alert on each have a panel.
import { readFileSync } from 'node:fs';
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, test } from 'vitest';
import { call, client, repoRoot, startAgent, type Agent } from '../support/agent.ts';
import { parsePrometheus, type PromFamily } from '../support/prometheus.ts';
import { until } from '../support/until.ts';

interface Target { expr: string; refId: string; datasource?: { type: string; uid: string } }
interface Panel { id: number; type: string; title: string; gridPos: { x: number; y: number; w: number; h: number }; targets?: Target[]; panels?: Panel[] }
interface Dashboard {
  title: string; uid: string; schemaVersion: number; panels: Panel[];
  templating: { list: { name: string; type: string; query: unknown; datasource?: { uid: string } }[] };
}

const dashboard = JSON.parse(readFileSync(join(repoRoot, 'deploy/grafana-dashboard.json'), 'utf8')) as Dashboard;
const graphs = dashboard.panels.filter((p) => p.type !== 'row');
const exprs = graphs.flatMap((p) => (p.targets ?? []).map((t) => ({ panel: p.title, expr: t.expr })));

/** Labels Prometheus itself attaches to every scraped series, and the bucket label of histograms. */
const targetLabels = new Set(['instance', 'job', 'le']);
const keywords = new Set(['by', 'without', 'on', 'ignoring', 'group_left', 'group_right', 'and', 'or', 'unless', 'bool', 'offset', 'inf', 'nan']);

interface Selector { name: string; labels: string[] }

/**
 * The series and labels a PromQL expression names: selectors with their matchers' labels, and the labels
 * of its `by (...)`/`without (...)` clauses. Functions are the names followed by `(`; Grafana variables
 * (`$instance`) and numbers are not names.
 */
function namesIn(expr: string): { selectors: Selector[]; grouping: string[] } {
  const grouping: string[] = [];
  let rest = expr.replace(/\b(by|without|on|ignoring)\s*\(([^)]*)\)/g, (_, _kw: string, labels: string) => {
    grouping.push(...labels.split(',').map((l) => l.trim()).filter((l) => l !== ''));
    return ' ';
  });
  rest = rest.replace(/\[[^\]]*\]/g, ' ');
  const selectors: Selector[] = [];
  const token = /(\$?[a-zA-Z_:][a-zA-Z0-9_:]*)\s*(\{[^}]*\})?|\d+(?:\.\d+)?(?:e[+-]?\d+)?|"[^"]*"/g;
  for (let m = token.exec(rest); m !== null; m = token.exec(rest)) {
    const name = m[1];
    if (name === undefined || name.startsWith('$') || keywords.has(name)) continue;
    if (m[2] === undefined && rest.slice(token.lastIndex).trimStart().startsWith('(')) continue; // a function
    const labels = [...(m[2] ?? '').matchAll(/([a-zA-Z_]\w*)\s*(?:=~|!~|!=|=)/g)].map((x) => x[1]!);
    selectors.push({ name, labels });
  }
  return { selectors, grouping };
}

/** Series names the exposition declares (a histogram's `_bucket`/`_sum`/`_count`, a counter's `_total`), with their labels. */
function exported(families: PromFamily[]): Map<string, Set<string>> {
  const out = new Map<string, Set<string>>();
  for (const f of families) {
    const names = f.type === 'histogram' ? ['_bucket', '_sum', '_count'].map((s) => f.name + s) : f.type === 'counter' ? [`${f.name}_total`] : [f.name];
    for (const n of names) out.set(n, new Set());
    for (const s of f.samples) for (const l of Object.keys(s.labels)) out.get(s.name)?.add(l);
  }
  return out;
}

let agent: Agent;
let series: Map<string, Set<string>>;

beforeAll(async () => {
  agent = await startAgent();
  const c = client(agent);
  // Enough traffic that the labelled series have children: requests, a lock and a check.
  const session = await c.session();
  await c.put(`/v1/kv/grafana/lock?acquire=${session}`, 'x');
  await c.put('/v1/agent/check/register', { ID: 'grafana-ttl', Name: 'grafana', TTL: '10m' });
  // And enough garbage that the agent has collected some: the GC histogram has its `kind` label only then.
  const value = 'x'.repeat(64 * 1024);
  const families = await until('a garbage collection in the agent', async () => {
    await Promise.all(Array.from({ length: 20 }, (_, k) => c.put(`/v1/kv/grafana/garbage-${k}`, value)));
    const parsed = await parsePrometheus((await call(agent.url, 'GET', '/v1/agent/metrics?format=prometheus')).text);
    return parsed.some((f) => f.name === 'nodejs_gc_duration_seconds' && f.samples.length > 0) ? parsed : undefined;
  });
  series = exported(families);
});
afterAll(async () => { await agent?.stop(); agent?.cleanup(); });

describe('deploy/grafana-dashboard.json', () => {
  test('is a Grafana dashboard model: identity, unique ids, panels on the 24-column grid without overlap, targets with refIds', () => {
    expect(dashboard.title).toBe('Roster');
    expect(dashboard.uid).toMatch(/^[a-z0-9-]{1,40}$/);
    expect(Number.isInteger(dashboard.schemaVersion)).toBe(true);
    const ids = dashboard.panels.map((p) => p.id);
    expect(new Set(ids).size).toBe(ids.length);
    const cells = new Set<string>();
    for (const p of dashboard.panels) {
      const { x, y, w, h } = p.gridPos;
      expect(x >= 0 && w > 0 && x + w <= 24 && h > 0 && y >= 0, `${p.title} grid`).toBe(true);
      for (let col = x; col < x + w; col += 1) {
        for (let row = y; row < y + h; row += 1) {
          expect(cells.has(`${col},${row}`), `${p.title} overlaps another panel`).toBe(false);
          cells.add(`${col},${row}`);
        }
      }
    }
    for (const p of graphs) {
      expect(p.targets?.length, p.title).toBeGreaterThan(0);
      const refIds = p.targets!.map((t) => t.refId);
      expect(new Set(refIds).size, p.title).toBe(refIds.length);
      for (const t of p.targets!) expect(t.datasource, p.title).toEqual({ type: 'prometheus', uid: '${datasource}' });
    }
    const vars = dashboard.templating.list;
    expect(vars.map((v) => [v.name, v.type])).toEqual([['datasource', 'datasource'], ['instance', 'query']]);
  });

  test('every expression has balanced brackets and names only series and labels the agent exports', () => {
    expect(exprs.length).toBeGreaterThan(20);
    const variable = JSON.stringify(dashboard.templating.list[1]!.query).match(/label_values\((\w+), (\w+)\)/);
    expect(variable?.[1] && series.has(variable[1]), 'the instance variable\'s series').toBe(true);
    for (const { panel, expr } of exprs) {
      for (const [open, close] of [['(', ')'], ['{', '}'], ['[', ']']] as const) {
        expect(expr.split(open).length, `${panel}: ${open}${close} in ${expr}`).toBe(expr.split(close).length);
      }
      const { selectors, grouping } = namesIn(expr);
      expect(selectors.length, `${panel}: no series in ${expr}`).toBeGreaterThan(0);
      const labelsHere = new Set<string>(targetLabels);
      for (const s of selectors) {
        const known = series.get(s.name);
        expect(known, `${panel}: ${s.name} is not exported`).toBeDefined();
        for (const l of known!) labelsHere.add(l);
        for (const l of s.labels) expect(targetLabels.has(l) || known!.has(l), `${panel}: ${s.name} has no label ${l}`).toBe(true);
      }
      for (const l of grouping) expect(labelsHere.has(l), `${panel}: grouped by ${l}, which ${expr} does not carry`).toBe(true);
    }
  });

  test('the contention series each have a panel', () => {
    const named = new Set(exprs.flatMap(({ expr }) => namesIn(expr).selectors.map((s) => s.name.replace(/_(bucket|sum|count|total)$/, ''))));
    for (const name of ['roster_lock_acquires', 'roster_lock_acquire_failures', 'roster_lock_handoff_seconds', 'roster_lock_hold_seconds', 'roster_lock_queue_depth',
      'roster_lock_queue_wait_seconds', 'roster_session_invalidations', 'roster_check_transitions', 'roster_check_runs', 'roster_apply_lag_seconds',
      'roster_apply_lag_entries', 'roster_log_commit_duration_seconds', 'roster_http_request_duration_seconds', 'process_cpu_seconds', 'nodejs_heap_size_used_bytes']) {
      expect(named, name).toContain(name);
    }
  });

  test('the expression reader finds what it should, so the checks above can fail', () => {
    expect(namesIn('histogram_quantile(0.99, sum by (le, route) (rate(a_bucket{instance=~"$instance", x="1"}[$__rate_interval]))) / b')).toEqual({
      selectors: [{ name: 'a_bucket', labels: ['instance', 'x'] }, { name: 'b', labels: [] }], grouping: ['le', 'route'],
    });
    expect(namesIn('max(deriv(c[5m])) * 1e9').selectors).toEqual([{ name: 'c', labels: [] }]);
    expect(series.has('roster_not_a_series')).toBe(false);
  });
});
