// Goal: settledInTime ends any probe: one that never settles is settled critical probeStopGraceMs after its
// timeout, or after its caller's abort; one that settles by itself keeps its own result; its timer does not
// outlive the probe.
import { expect, test } from 'vitest';
import { settledInTime } from '../../src/probes/deadline.ts';
import { probeStopGraceMs } from '../../src/probes/limits.ts';
import type { Probe } from '../../src/probes/index.ts';

const never: Probe = () => new Promise(() => {});

test('a probe that never settles is settled critical a grace after its timeout', async () => {
  const started = performance.now();
  expect(await settledInTime(never, 200)()).toEqual({ status: 'critical', output: 'Timed out (200ms) running check' });
  const tookMs = performance.now() - started;
  expect(tookMs).toBeGreaterThanOrEqual(200 + probeStopGraceMs - 5);
  expect(tookMs).toBeLessThan(200 + probeStopGraceMs + 1000);
});

test("a probe that never settles is settled a grace after its caller's abort, also without a timeout", async () => {
  const controller = new AbortController();
  const pending = settledInTime(never, undefined)(controller.signal);
  setTimeout(() => controller.abort(), 50);
  expect(await pending).toEqual({ status: 'critical', output: 'Canceled running check' });
});

test('a probe that settles by itself, at its deadline too, keeps its own result', async () => {
  const own: Probe = () => new Promise((resolve) => setTimeout(() => resolve({ status: 'critical', output: 'own text' }), 250));
  expect(await settledInTime(own, 200)()).toEqual({ status: 'critical', output: 'own text' });
  const fast: Probe = () => Promise.resolve({ status: 'passing', output: 'ok' });
  expect(await settledInTime(fast, 60_000)()).toEqual({ status: 'passing', output: 'ok' });
});
