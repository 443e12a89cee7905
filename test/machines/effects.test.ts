// Goal: a step's effects are looked up by their type (machines/effects.ts): `hasEffect` says whether a
// step named one, `effectOf` hands it back with its params, and a step that names none yields nothing.
import { describe, expect, test } from 'vitest';
import { effectOf, hasEffect, stepCheck, stepLock, stepSession, type CheckContext } from '../../machines/index.ts';

describe('typed effects', () => {
  test('effectOf returns the named effect with its params', () => {
    const failed = stepLock({ holder: 'A', lockIndex: 1, delayUntilMs: 0 }, { type: 'acquire', session: 'B', atMs: 0 });
    expect(effectOf(failed, 'acquireFailed')?.params.reason).toBe('held-by-other');
    expect(effectOf(failed, 'acquired')).toBeUndefined();
  });

  test('hasEffect tells whether a step named an effect', () => {
    const created = stepSession({ behavior: 'release', ttlMs: 10_000, renewIndex: 1, renewedAtMs: 0 }, { type: 'create', index: 2, atMs: 5 });
    expect(hasEffect(created, 'restartTtlTimer')).toBe(true);
    expect(hasEffect(created, 'handleLocksByBehavior')).toBe(false);
  });

  test('the check machine reports its status through a typed effect', () => {
    const context: CheckContext = {
      successBeforePassing: 0, failuresBeforeWarning: 0, failuresBeforeCritical: 0, successCounter: 0, failuresCounter: 0,
      ttlMs: 0, ttlUpdateIndex: 1, deregisterAfterMs: 0, criticalSinceMs: 0,
    };
    const next = stepCheck('critical', context, { type: 'result', status: 'warning', atMs: 1 });
    expect(effectOf(next, 'report')?.params.status).toBe('warning');
    expect(hasEffect(next, 'deregisterService')).toBe(false);
  });
});
