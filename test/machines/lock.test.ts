// Goal: each row of the "Lock on a key" table (spec/registry.md), plus the lock-delay guard and the
// holder's invalidation by Behavior, is one transition of machines/lock.ts, checked row by row.
import { describe, expect, test } from 'vitest';
import { stepLock, type LockContext } from '../../machines/index.ts';

const unlocked: LockContext = { holder: null, lockIndex: 3, delayUntilMs: 0 };
const lockedByA: LockContext = { holder: 'A', lockIndex: 4, delayUntilMs: 0 };
const effects = (s: { effects: { type: string; params?: unknown }[] }) => s.effects;

describe('Lock table', () => {
  test('unlocked | acquire with a session | no current holder | locked | LockIndex increases, Session set', () => {
    const next = stepLock(unlocked, { type: 'acquire', session: 'A', atMs: 10 });
    expect(next.value).toBe('locked');
    expect(next.context).toEqual({ holder: 'A', lockIndex: 4, delayUntilMs: 0 });
    expect(effects(next)).toEqual([{ type: 'acquired', params: undefined }]);
  });

  test('locked | acquire with the holding session | same session | locked | Value updated, LockIndex unchanged', () => {
    const next = stepLock(lockedByA, { type: 'acquire', session: 'A', atMs: 10 });
    expect(next.value).toBe('locked');
    expect(next.context).toEqual(lockedByA);
    expect(effects(next)).toEqual([{ type: 'reacquired', params: undefined }]);
  });

  test('locked | acquire with another session | holder exists | locked | fails', () => {
    const next = stepLock(lockedByA, { type: 'acquire', session: 'B', atMs: 10 });
    expect(next.value).toBe('locked');
    expect(next.context).toEqual(lockedByA);
    expect(effects(next)).toEqual([{ type: 'acquireFailed', params: { reason: 'held-by-other' } }]);
  });

  test('locked | release with the holding session | session is valid | unlocked | LockIndex unchanged, Session cleared', () => {
    const next = stepLock(lockedByA, { type: 'release', session: 'A', sessionValid: true });
    expect(next.value).toBe('unlocked');
    expect(next.context).toEqual({ holder: null, lockIndex: 4, delayUntilMs: 0 });
    expect(effects(next)).toEqual([{ type: 'released', params: undefined }]);
  });

  test('locked | release with the holding session that is no longer valid | fails', () => {
    const next = stepLock(lockedByA, { type: 'release', session: 'A', sessionValid: false });
    expect(next.value).toBe('locked');
    expect(effects(next)).toEqual([{ type: 'releaseFailed', params: { reason: 'not-holder' } }]);
  });

  test('locked | release with a session that is not the holder | none | locked | fails', () => {
    const next = stepLock(lockedByA, { type: 'release', session: 'B', sessionValid: true });
    expect(next.value).toBe('locked');
    expect(next.context).toEqual(lockedByA);
    expect(effects(next)).toEqual([{ type: 'releaseFailed', params: { reason: 'not-holder' } }]);
  });

  test('unlocked | release | fails (nothing is held)', () => {
    const next = stepLock(unlocked, { type: 'release', session: 'A', sessionValid: true });
    expect(next.value).toBe('unlocked');
    expect(effects(next)).toEqual([{ type: 'releaseFailed', params: { reason: 'not-locked' } }]);
  });
});

describe('Lock delay', () => {
  const delayed: LockContext = { holder: null, lockIndex: 4, delayUntilMs: 5_000 };

  test('inside the delay any acquire fails, whoever asks', () => {
    for (const session of ['A', 'B']) {
      const next = stepLock(delayed, { type: 'acquire', session, atMs: 4_999 });
      expect(next.value).toBe('unlocked');
      expect(effects(next)).toEqual([{ type: 'acquireFailed', params: { reason: 'lock-delay' } }]);
    }
  });

  test('once the delay has passed the acquire succeeds', () => {
    const next = stepLock(delayed, { type: 'acquire', session: 'B', atMs: 5_000 });
    expect(next.value).toBe('locked');
    expect(next.context.lockIndex).toBe(5);
  });
});

describe('Holder invalidated (Session "Effect of invalidation, by Behavior")', () => {
  test('release: the lock is released and the delay armed', () => {
    const next = stepLock(lockedByA, { type: 'holder.invalidated', behavior: 'release', lockDelayMs: 15_000, atMs: 1_000 });
    expect(next.value).toBe('unlocked');
    expect(next.context).toEqual({ holder: null, lockIndex: 4, delayUntilMs: 16_000 });
    expect(effects(next)).toEqual([{ type: 'releasedByInvalidation', params: undefined }]);
  });

  test('delete: the key is deleted and the delay armed', () => {
    const next = stepLock(lockedByA, { type: 'holder.invalidated', behavior: 'delete', lockDelayMs: 2_000, atMs: 1_000 });
    expect(next.value).toBe('unlocked');
    expect(next.context.delayUntilMs).toBe(3_000);
    expect(effects(next)).toEqual([{ type: 'deletedByInvalidation', params: undefined }]);
  });

  test('a zero LockDelay arms no delay', () => {
    const next = stepLock(lockedByA, { type: 'holder.invalidated', behavior: 'release', lockDelayMs: 0, atMs: 1_000 });
    expect(next.context.delayUntilMs).toBe(0);
  });
});
