// Goal: a step's effects are looked up by their type (machines/effects.ts): `hasEffect` says whether a
// step named one, `effectOf` hands it back with its params, and a step that names none yields nothing.
// Every action of a machine that is not an `assign` is one of its declared effects, so the typed
// effects a step hands back are exactly what its actions named.
import type { AnyStateMachine } from 'xstate';
import { describe, expect, test } from 'vitest';
import {
  checkMachine, effectOf, hasEffect, lockMachine, sessionMachine, stepCheck, stepLock, stepSession,
  type CheckContext, type CheckEffect, type LockEffect, type SessionEffect,
} from '../../machines/index.ts';

/** The names of a machine's actions that are not `assign`s: the effects it can name. */
function effectActionNames(machine: AnyStateMachine): string[] {
  const actions = machine.implementations.actions as Record<string, { type?: string }>;
  return Object.entries(actions).filter(([, a]) => a.type !== 'xstate.assign').map(([name]) => name).sort();
}

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

  test('every action that is not an assign is a declared effect of its machine', () => {
    const lock: LockEffect['type'][] = ['acquired', 'reacquired', 'released', 'acquireFailed', 'releaseFailed', 'releasedByInvalidation', 'deletedByInvalidation'];
    const session: SessionEffect['type'][] = ['handleLocksByBehavior', 'restartTtlTimer'];
    const check: CheckEffect['type'][] = ['report', 'ttlExpired', 'restartTtlTimer', 'deregisterService'];
    expect(effectActionNames(lockMachine)).toEqual(lock.sort());
    expect(effectActionNames(sessionMachine)).toEqual(session.sort());
    expect(effectActionNames(checkMachine)).toEqual(check.sort());
  });
});
