export { sessionMachine } from './session.ts';
export type { SessionContext, SessionEvent, SessionEffect } from './session.ts';
export { lockMachine } from './lock.ts';
export type { AcquireFailure, LockContext, LockEvent, LockEffect, LockFailure, ReleaseFailure } from './lock.ts';
export { checkMachine } from './check.ts';
export type { CheckContext, CheckEvent, CheckEffect } from './check.ts';
export { step, stepSession, stepLock, stepCheck } from './step.ts';
export { effectOf, hasEffect } from './effects.ts';
export type { EffectActions, NamedEffect, Step } from './effects.ts';
