export { sessionMachine } from './session.ts';
export type { SessionContext, SessionEvent, SessionEffect } from './session.ts';
export { lockMachine } from './lock.ts';
export type { LockContext, LockEvent, LockEffect, LockFailure } from './lock.ts';
export { step, stepSession, stepLock } from './step.ts';
export type { Step } from './step.ts';
