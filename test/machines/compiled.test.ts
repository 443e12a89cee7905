// Goal: the flat stepper (machines/compiled.ts) answers exactly as xstate's own interpreter for the
// lock and session machines — same next state, context and effects in the same order — on random
// states, contexts and events, and refuses machines it cannot step faithfully (the check machine).
import fc from 'fast-check';
import { describe, expect, test } from 'vitest';
import { checkMachine } from '../../machines/check.ts';
import { compileFlat } from '../../machines/compiled.ts';
import { lockMachine, type LockContext, type LockEvent } from '../../machines/lock.ts';
import { sessionMachine, type SessionContext, type SessionEvent } from '../../machines/session.ts';
import { step } from '../../machines/step.ts';

const runs = 5_000;
const session = fc.constantFrom('s1', 's2', 's3');
const time = fc.integer({ min: 0, max: 300 });

const lockContext: fc.Arbitrary<LockContext> = fc.record({
  holder: fc.oneof(fc.constant(null), session),
  lockIndex: fc.nat(5),
  delayUntilMs: fc.constantFrom(0, 100, 200),
});
const lockEvent: fc.Arbitrary<LockEvent> = fc.oneof(
  fc.record({ type: fc.constant('acquire' as const), session, atMs: time }),
  fc.record({ type: fc.constant('release' as const), session, sessionValid: fc.boolean() }),
  fc.record({ type: fc.constant('holder.invalidated' as const), behavior: fc.constantFrom('release' as const, 'delete' as const), lockDelayMs: fc.constantFrom(0, 15_000), atMs: time }),
);

const sessionContext: fc.Arbitrary<SessionContext> = fc.record({
  behavior: fc.constantFrom('release' as const, 'delete' as const),
  ttlMs: fc.constantFrom(0, 100, 10_000),
  renewIndex: fc.nat(5),
  renewedAtMs: time,
});
const sessionEvent: fc.Arbitrary<SessionEvent> = fc.oneof(
  fc.constantFrom<SessionEvent>({ type: 'node.destroyed' }, { type: 'destroy' }, { type: 'leader.failover' }),
  fc.record({ type: fc.constantFrom('check.deregistered' as const, 'check.critical' as const), checkId: fc.constantFrom('c1', 'serfHealth') }),
  fc.record({ type: fc.constant('ttl.expired' as const), renewIndex: fc.nat(5), atMs: fc.integer({ min: 0, max: 20_000 }) }),
  fc.record({ type: fc.constantFrom('create' as const, 'renew' as const), index: fc.nat(9), atMs: time }),
);

describe('compileFlat', () => {
  test('the lock machine: same state, context and effects as xstate for any state, context and event', () => {
    const fast = compileFlat(lockMachine);
    fc.assert(fc.property(fc.constantFrom('unlocked', 'locked'), lockContext, lockEvent, (value, context, event) => {
      expect(fast(value, context, event)).toEqual(step(lockMachine, value, context, event));
    }), { numRuns: runs });
  });

  test('the session machine: same answers as xstate from `valid` and from the final `invalidated`', () => {
    const fast = compileFlat(sessionMachine);
    fc.assert(fc.property(fc.constantFrom('valid', 'invalidated'), sessionContext, sessionEvent, (value, context, event) => {
      expect(fast(value, context, event)).toEqual(step(sessionMachine, value, context, event));
    }), { numRuns: runs });
  });

  test('a machine beyond flat states (root transitions, guard combinators) is refused, not stepped differently', () => {
    expect(() => compileFlat(checkMachine)).toThrow(/compileFlat\(check\): root-level transitions/);
  });
});
