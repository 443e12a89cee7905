/**
 * Stepping a machine purely: rebuild its snapshot from stored data, apply one event with xstate's
 * `transition` (no actor, no clock), and hand back the next state, context and the named effects.
 */
import { createActor, type AnyActorScope, type AnyStateMachine } from 'xstate';
import type { CheckStatus } from '../src/domain/types.ts';
import { checkMachine, type CheckContext, type CheckEffect, type CheckEvent } from './check.ts';
import { compileFlat } from './compiled.ts';
import type { NamedEffect, Step } from './effects.ts';
import { lockMachine, type LockContext, type LockEffect, type LockEvent } from './lock.ts';
import { sessionMachine, type SessionContext, type SessionEffect, type SessionEvent } from './session.ts';

interface Executable { type: string; params?: unknown }

/**
 * One inert actor scope per machine, reused by every step. xstate's `transition()` builds a fresh
 * scope (a whole actor and system) on each call, which cost two thirds of a lock step; these machines
 * invoke, spawn and send nothing, so the scope's only job is to collect the actions a step names.
 */
const scopes = new WeakMap<AnyStateMachine, { scope: AnyActorScope; collected: Executable[] }>();

function scopeOf(machine: AnyStateMachine, context: unknown): { scope: AnyActorScope; collected: Executable[] } {
  let entry = scopes.get(machine);
  if (entry === undefined) {
    const self = createActor(machine, { input: context });
    const collected: Executable[] = [];
    const scope = {
      self, system: self.system, id: '', sessionId: '',
      defer: () => {}, logger: () => {}, stopChild: () => {}, emit: () => {},
      actionExecutor: (action: Executable) => { collected.push(action); },
    } as unknown as AnyActorScope;
    entry = { scope, collected };
    scopes.set(machine, entry);
  }
  return entry;
}

/** Steps `machine` with xstate's interpreter; `E` is the machine's effect union (its actions are `EffectActions<E>`). */
export function step<C, Ev extends { type: string }, E extends NamedEffect = NamedEffect>(
  machine: AnyStateMachine, value: string, context: C, event: Ev,
): Step<C, E> {
  const snapshot = machine.resolveState({ value, context });
  const { scope, collected } = scopeOf(machine, context);
  collected.length = 0;
  const next = machine.transition(snapshot, event, scope);
  const effects: NamedEffect[] = [];
  for (const a of collected) if (!a.type.startsWith('xstate.')) effects.push({ type: a.type, params: a.params });
  collected.length = 0;
  return { value: next.value as string, context: next.context as C, effects: effects as E[] };
}

// The lock and session machines are flat: they step through compileFlat (about a tenth of the time
// of xstate's interpreter; test/machines/compiled.test.ts holds the two to the same answers).
const lockStep = compileFlat<LockContext, LockEvent, LockEffect>(lockMachine);
const sessionStep = compileFlat<SessionContext, SessionEvent, SessionEffect>(sessionMachine);

/** A session in state is always `valid` (invalidated sessions are removed), so that is where it steps from. */
export function stepSession(context: SessionContext, event: SessionEvent): Step<SessionContext, SessionEffect> {
  return sessionStep('valid', context, event);
}

export function stepLock(context: LockContext, event: LockEvent): Step<LockContext, LockEffect> {
  return lockStep(context.holder === null ? 'unlocked' : 'locked', context, event);
}

export function stepCheck(status: CheckStatus, context: CheckContext, event: CheckEvent): Step<CheckContext, CheckEffect> {
  return step<CheckContext, CheckEvent, CheckEffect>(checkMachine, status, context, event);
}
