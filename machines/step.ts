/**
 * Stepping a machine purely: rebuild its snapshot from stored data, apply one event with xstate's
 * `transition` (no actor, no clock), and hand back the next state, context and the named effects.
 */
import { transition, type AnyStateMachine } from 'xstate';
import type { CheckStatus } from '../src/domain/types.ts';
import { checkMachine, type CheckContext, type CheckEvent } from './check.ts';
import { lockMachine, type LockContext, type LockEvent } from './lock.ts';
import { sessionMachine, type SessionContext, type SessionEvent } from './session.ts';

export interface Step<C> {
  value: string;
  context: C;
  effects: { type: string; params?: unknown }[];
}

export function step<C, E extends { type: string }>(machine: AnyStateMachine, value: string, context: C, event: E): Step<C> {
  const snapshot = machine.resolveState({ value, context });
  const [next, actions] = transition(machine, snapshot, event);
  return {
    value: next.value as string,
    context: next.context as C,
    effects: actions
      .filter((a) => !a.type.startsWith('xstate.'))
      .map((a) => ({ type: a.type, params: a.params })),
  };
}

/** A session in state is always `valid` (invalidated sessions are removed), so that is where it steps from. */
export function stepSession(context: SessionContext, event: SessionEvent): Step<SessionContext> {
  return step(sessionMachine, 'valid', context, event);
}

export function stepLock(context: LockContext, event: LockEvent): Step<LockContext> {
  return step(lockMachine, context.holder === null ? 'unlocked' : 'locked', context, event);
}

export function stepCheck(status: CheckStatus, context: CheckContext, event: CheckEvent): Step<CheckContext> {
  return step(checkMachine, status, context, event);
}
