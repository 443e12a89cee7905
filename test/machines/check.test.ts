// Goal: machines/check.ts against the health-check rules of spec/registry.md (status values,
// success_before_passing / failures_before_critical, "the status does not change until the threshold
// is reached") and consul-compat.md §4 (counters start at the threshold, warning counts as success,
// failures_before_warning, TTL lapse, DeregisterCriticalServiceAfter) — one case per rule.
import { describe, expect, test } from 'vitest';
import { stepCheck, type CheckContext } from '../../machines/index.ts';
import type { CheckStatus } from '../../src/domain/types.ts';

function ctx(over: Partial<CheckContext> = {}): CheckContext {
  // failures_before_warning defaults to failures_before_critical, as in a registration.
  const critical = over.failuresBeforeCritical ?? 0;
  const t = { successBeforePassing: 0, failuresBeforeWarning: critical, failuresBeforeCritical: critical, ...over };
  return {
    ...t, successCounter: t.successBeforePassing, failuresCounter: Math.max(t.failuresBeforeCritical, t.failuresBeforeWarning),
    ttlMs: 0, ttlUpdateIndex: 1, deregisterAfterMs: 0, criticalSinceMs: 0, ...over,
  };
}

/** Feeds probe results and returns the status after each. */
function run(start: CheckStatus, context: CheckContext, results: CheckStatus[]): CheckStatus[] {
  let status = start;
  let c = context;
  const seen: CheckStatus[] = [];
  for (const [i, r] of results.entries()) {
    const next = stepCheck(status, c, { type: 'result', status: r, atMs: 1_000 * (i + 1) });
    status = next.value as CheckStatus;
    c = next.context;
    seen.push(status);
  }
  return seen;
}

describe('probe results without thresholds', () => {
  test('each result sets the status at once: passing, warning, critical', () => {
    expect(run('critical', ctx(), ['passing', 'warning', 'critical', 'passing'])).toEqual(['passing', 'warning', 'critical', 'passing']);
  });
  test('a result reports the status and its output', () => {
    const next = stepCheck('critical', ctx(), { type: 'result', status: 'passing', atMs: 1 });
    expect(next.effects).toContainEqual({ type: 'report', params: { status: 'passing' } });
  });
});

describe('success_before_passing', () => {
  test('counters start at the threshold: the first result after registration applies at once', () => {
    expect(run('critical', ctx({ successBeforePassing: 3 }), ['passing'])).toEqual(['passing']);
  });
  test('after failing, N consecutive successes are needed; the status does not change before', () => {
    expect(run('passing', ctx({ successBeforePassing: 3 }), ['critical', 'passing', 'passing', 'passing']))
      .toEqual(['critical', 'critical', 'critical', 'passing']);
  });
  test('below the threshold nothing is reported (output unchanged too)', () => {
    const failed = stepCheck('passing', ctx({ successBeforePassing: 2 }), { type: 'result', status: 'critical', atMs: 1 });
    const once = stepCheck('critical', failed.context, { type: 'result', status: 'passing', atMs: 2 });
    expect(once.value).toBe('critical');
    expect(once.effects).toEqual([]);
  });
  test('a warning result counts as a success', () => {
    expect(run('passing', ctx({ successBeforePassing: 2 }), ['critical', 'warning', 'passing'])).toEqual(['critical', 'critical', 'passing']);
  });
});

describe('failures_before_critical and failures_before_warning', () => {
  test('after passing, N consecutive failures are needed for critical', () => {
    expect(run('critical', ctx({ failuresBeforeCritical: 3 }), ['passing', 'critical', 'critical', 'critical']))
      .toEqual(['passing', 'passing', 'passing', 'critical']);
  });
  test('one success in between starts the count again', () => {
    expect(run('passing', ctx({ failuresBeforeCritical: 2 }), ['passing', 'critical', 'passing', 'critical', 'critical']))
      .toEqual(['passing', 'passing', 'passing', 'passing', 'critical']);
  });
  test('failures_before_warning below the critical threshold gives warning first', () => {
    expect(run('passing', ctx({ failuresBeforeWarning: 1, failuresBeforeCritical: 3 }), ['passing', 'critical', 'critical', 'critical']))
      .toEqual(['passing', 'warning', 'warning', 'critical']);
  });
});

describe('TTL', () => {
  const ttl = ctx({ ttlMs: 10_000, ttlUpdateIndex: 5 });
  test('pass, warn, fail and update set the status directly and restart the TTL', () => {
    for (const status of ['passing', 'warning', 'critical'] as const) {
      const next = stepCheck('passing', ttl, { type: 'set', status, index: 9, atMs: 1, restartsTtl: true });
      expect(next.value).toBe(status);
      expect(next.context.ttlUpdateIndex).toBe(9);
      expect(next.effects.map((e) => e.type)).toContain('restartTtlTimer');
    }
  });
  test('no update within the TTL: critical, with the TTL-expired effect', () => {
    const next = stepCheck('passing', ttl, { type: 'ttl.lapse', ttlUpdateIndex: 5, atMs: 20_000 });
    expect(next.value).toBe('critical');
    expect(next.effects.map((e) => e.type)).toEqual(['ttlExpired', 'report']);
  });
  test('a lapse timer from before the last update is a no-op', () => {
    const next = stepCheck('passing', ttl, { type: 'ttl.lapse', ttlUpdateIndex: 4, atMs: 20_000 });
    expect(next.value).toBe('passing');
    expect(next.effects).toEqual([]);
  });
});

describe('DeregisterCriticalServiceAfter', () => {
  const reapable = ctx({ deregisterAfterMs: 60_000 });
  test('the time a check became critical is kept while it stays critical', () => {
    const first = stepCheck('passing', reapable, { type: 'result', status: 'critical', atMs: 1_000 });
    const again = stepCheck('critical', first.context, { type: 'result', status: 'critical', atMs: 5_000 });
    expect(again.context.criticalSinceMs).toBe(1_000);
    const healed = stepCheck('critical', again.context, { type: 'result', status: 'passing', atMs: 6_000 });
    expect(healed.context.criticalSinceMs).toBe(0);
  });
  test('critical longer than the limit: the service is to be deregistered', () => {
    const c = { ...reapable, criticalSinceMs: 1_000 };
    expect(stepCheck('critical', c, { type: 'reap', criticalSinceMs: 1_000, atMs: 61_000 }).effects.map((e) => e.type)).toEqual(['deregisterService']);
  });
  test('not yet, not for a check that recovered since, and never without the setting', () => {
    const c = { ...reapable, criticalSinceMs: 1_000 };
    expect(stepCheck('critical', c, { type: 'reap', criticalSinceMs: 1_000, atMs: 60_999 }).effects).toEqual([]);
    expect(stepCheck('critical', { ...c, criticalSinceMs: 30_000 }, { type: 'reap', criticalSinceMs: 1_000, atMs: 99_000 }).effects).toEqual([]);
    expect(stepCheck('critical', { ...c, deregisterAfterMs: 0 }, { type: 'reap', criticalSinceMs: 1_000, atMs: 999_000 }).effects).toEqual([]);
  });
});
