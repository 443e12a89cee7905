/**
 * The "Lock on a key" table of spec/registry.md, one transition per row in the table's order, plus
 * the two rules stated beside it: the lock-delay guard ("after invalidation, the keys that the
 * session held cannot be acquired again for the LockDelay duration") and the invalidation of the
 * holder (its effect by Behavior). Failures are values (an action naming the reason), never throws.
 */
import { assign, setup } from 'xstate';
import type { Behavior } from '../src/domain/types.ts';
import type { EffectActions } from './effects.ts';

export interface LockContext {
  /** Holding session id, or null when unlocked. */
  holder: string | null;
  /** Number of times the lock was acquired. */
  lockIndex: number;
  /** Entry time before which no acquire succeeds (0 when no delay is armed). */
  delayUntilMs: number;
}

export type LockEvent =
  | { type: 'acquire'; session: string; atMs: number }
  | { type: 'release'; session: string; sessionValid: boolean }
  | { type: 'holder.invalidated'; behavior: Behavior; lockDelayMs: number; atMs: number };

/** Why an acquire fails: inside the lock delay, or another session holds the lock. */
export type AcquireFailure = 'lock-delay' | 'held-by-other';
/** Why a release fails: the session is not the (valid) holder, or nobody holds the lock. */
export type ReleaseFailure = 'not-holder' | 'not-locked';
export type LockFailure = AcquireFailure | ReleaseFailure;

export type LockEffect =
  | { type: 'acquired' }
  | { type: 'reacquired' }
  | { type: 'released' }
  | { type: 'acquireFailed'; params: { reason: AcquireFailure } }
  | { type: 'releaseFailed'; params: { reason: ReleaseFailure } }
  | { type: 'releasedByInvalidation' }
  | { type: 'deletedByInvalidation' };

/** Effects: named here, carried out by src/state. */
const effectActions = {
  acquired: () => {},
  reacquired: () => {},
  released: () => {},
  acquireFailed: (_: unknown, _params: { reason: AcquireFailure }) => {},
  releaseFailed: (_: unknown, _params: { reason: ReleaseFailure }) => {},
  releasedByInvalidation: () => {},
  deletedByInvalidation: () => {},
} satisfies EffectActions<LockEffect>;

export const lockMachine = setup({
  types: {
    context: {} as LockContext,
    events: {} as LockEvent,
    input: {} as LockContext,
  },
  guards: {
    lockDelayActive: ({ context, event }) => event.type === 'acquire' && event.atMs < context.delayUntilMs,
    noCurrentHolder: ({ context }) => context.holder === null,
    sameSession: ({ context, event }) => event.type === 'acquire' && event.session === context.holder,
    holderAndValid: ({ context, event }) =>
      event.type === 'release' && event.session === context.holder && event.sessionValid,
    behaviorDelete: ({ event }) => event.type === 'holder.invalidated' && event.behavior === 'delete',
  },
  actions: {
    ...effectActions,
    takeLock: assign(({ context, event }) =>
      event.type === 'acquire' ? { holder: event.session, lockIndex: context.lockIndex + 1 } : context,
    ),
    clearHolder: assign({ holder: null }),
    armLockDelay: assign(({ context, event }) =>
      event.type === 'holder.invalidated' && event.lockDelayMs > 0
        ? { holder: null, delayUntilMs: event.atMs + event.lockDelayMs }
        : { ...context, holder: null },
    ),
  },
}).createMachine({
  id: 'lock',
  initial: 'unlocked',
  context: ({ input }) => input,
  states: {
    unlocked: {
      on: {
        acquire: [
          // lock-delay guard: inside the delay every acquire fails, whoever asks
          { guard: 'lockDelayActive', actions: { type: 'acquireFailed', params: { reason: 'lock-delay' } } },
          // unlocked | acquire with a session | no current holder | locked | LockIndex increases, Session set
          { guard: 'noCurrentHolder', target: 'locked', actions: ['takeLock', 'acquired'] },
        ],
        // Release of a lock nobody holds fails (Consul answers false).
        release: { actions: { type: 'releaseFailed', params: { reason: 'not-locked' } } },
      },
    },
    locked: {
      on: {
        acquire: [
          // locked | acquire with the holding session | same session | locked | Value updated, LockIndex unchanged
          { guard: 'sameSession', actions: 'reacquired' },
          // locked | acquire with another session | holder exists | locked | fails
          { actions: { type: 'acquireFailed', params: { reason: 'held-by-other' } } },
        ],
        release: [
          // locked | release with the holding session | session is valid | unlocked | LockIndex unchanged, Session cleared, ModifyIndex increases
          { guard: 'holderAndValid', target: 'unlocked', actions: ['clearHolder', 'released'] },
          // locked | release with a session that is not the holder | none | locked | fails
          { actions: { type: 'releaseFailed', params: { reason: 'not-holder' } } },
        ],
        // Session "Effect of invalidation, by Behavior", with the lock delay armed in both cases.
        'holder.invalidated': [
          { guard: 'behaviorDelete', target: 'unlocked', actions: ['armLockDelay', 'deletedByInvalidation'] },
          { target: 'unlocked', actions: ['armLockDelay', 'releasedByInvalidation'] },
        ],
      },
    },
  },
});
