// Goal: each row of the Session table (spec/registry.md "States and transitions › Session") is one
// transition of machines/session.ts, checked here row by row with the machine stepped purely.
import { describe, expect, test } from 'vitest';
import { stepSession, type SessionContext } from '../../machines/index.ts';

const withTtl: SessionContext = { behavior: 'release', ttlMs: 10_000, renewIndex: 7, renewedAtMs: 1_000 };
const noTtl: SessionContext = { ...withTtl, ttlMs: 0 };
const effects = (s: { effects: { type: string }[] }) => s.effects.map((e) => e.type);

describe('Session table', () => {
  test('valid | node destroyed | none | invalidated | locks handled by Behavior', () => {
    const next = stepSession(withTtl, { type: 'node.destroyed' });
    expect(next.value).toBe('invalidated');
    expect(effects(next)).toEqual(['handleLocksByBehavior']);
  });

  test('valid | any bound health check deregistered | none | invalidated | same', () => {
    const next = stepSession(noTtl, { type: 'check.deregistered', checkId: 'c1' });
    expect(next.value).toBe('invalidated');
    expect(effects(next)).toEqual(['handleLocksByBehavior']);
  });

  test('valid | any bound health check enters critical | none | invalidated | same', () => {
    const next = stepSession(noTtl, { type: 'check.critical', checkId: 'c1' });
    expect(next.value).toBe('invalidated');
    expect(effects(next)).toEqual(['handleLocksByBehavior']);
  });

  test('valid | destroy operation | none | invalidated | same', () => {
    const next = stepSession(withTtl, { type: 'destroy' });
    expect(next.value).toBe('invalidated');
    expect(effects(next)).toEqual(['handleLocksByBehavior']);
  });

  describe('valid | TTL expires | TTL set and not renewed (never earlier than the TTL) | invalidated | same', () => {
    test('expires when the TTL has passed since the renew the timer saw', () => {
      const next = stepSession(withTtl, { type: 'ttl.expired', renewIndex: 7, atMs: 11_000 });
      expect(next.value).toBe('invalidated');
      expect(effects(next)).toEqual(['handleLocksByBehavior']);
    });
    test('a timer from before the last renew is a no-op', () => {
      const next = stepSession(withTtl, { type: 'ttl.expired', renewIndex: 6, atMs: 50_000 });
      expect(next.value).toBe('valid');
      expect(next.effects).toEqual([]);
    });
    test('never earlier than the TTL', () => {
      const next = stepSession(withTtl, { type: 'ttl.expired', renewIndex: 7, atMs: 10_999 });
      expect(next.value).toBe('valid');
    });
    test('a session without TTL does not expire', () => {
      expect(stepSession(noTtl, { type: 'ttl.expired', renewIndex: 7, atMs: 1e12 }).value).toBe('valid');
    });
  });

  describe('valid | create, renew, leader failover | TTL set | valid | the TTL timer is restarted', () => {
    test('create restarts the timer from the create entry', () => {
      const next = stepSession(withTtl, { type: 'create', index: 7, atMs: 1_000 });
      expect(next.value).toBe('valid');
      expect(effects(next)).toEqual(['restartTtlTimer']);
    });
    test('renew restarts the timer and records the renew', () => {
      const next = stepSession(withTtl, { type: 'renew', index: 9, atMs: 5_000 });
      expect(next.value).toBe('valid');
      expect(next.context).toMatchObject({ renewIndex: 9, renewedAtMs: 5_000 });
      expect(effects(next)).toEqual(['restartTtlTimer']);
    });
    test('leader failover restarts the timer', () => {
      const next = stepSession(withTtl, { type: 'leader.failover' });
      expect(next.value).toBe('valid');
      expect(effects(next)).toEqual(['restartTtlTimer']);
    });
    test('without a TTL there is no timer to restart', () => {
      for (const event of [{ type: 'create', index: 1, atMs: 0 }, { type: 'renew', index: 2, atMs: 0 }, { type: 'leader.failover' }] as const) {
        const next = stepSession(noTtl, event);
        expect(next.value).toBe('valid');
        expect(next.effects).toEqual([]);
      }
    });
  });
});
