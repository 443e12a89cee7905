/**
 * A health check's status (spec/registry.md "Health check status" and its threshold fields;
 * consul-compat.md §4 Thresholds, TTL, Reaper). The status is the state: passing, warning, critical.
 * Probe results pass through the thresholds; TTL and alias updates set the status directly; a TTL
 * that lapses makes the check critical; a check critical for longer than DeregisterCriticalServiceAfter
 * asks for its service to be deregistered. Actions name effects; the state layer carries them out.
 */
import { and, assign, setup } from 'xstate';
import type { CheckStatus } from '../src/domain/types.ts';
import type { EffectActions } from './effects.ts';

export interface CheckContext {
  successBeforePassing: number;
  failuresBeforeWarning: number;
  failuresBeforeCritical: number;
  /** Counters start at their thresholds (the first result after registration applies at once). */
  successCounter: number;
  failuresCounter: number;
  ttlMs: number;
  ttlUpdateIndex: number;
  deregisterAfterMs: number;
  criticalSinceMs: number;
}

export type CheckEvent =
  /** A probe's result (script, HTTP, TCP, gRPC, container exec): thresholds apply. */
  | { type: 'result'; status: CheckStatus; atMs: number }
  /** A TTL update (pass, warn, fail, update) or an alias check's mirrored state: set directly. */
  | { type: 'set'; status: CheckStatus; index: number; atMs: number; restartsTtl: boolean }
  /** The TTL owner's timer fired for the update it saw. */
  | { type: 'ttl.lapse'; ttlUpdateIndex: number; atMs: number }
  /** The reaper found the check critical since `criticalSinceMs`. */
  | { type: 'reap'; criticalSinceMs: number; atMs: number };

/** Effects: `report` writes the status and the event's output; the others name what apply does next. */
export type CheckEffect =
  | { type: 'report'; params: { status: CheckStatus } }
  | { type: 'ttlExpired' }
  | { type: 'restartTtlTimer' }
  | { type: 'deregisterService' };

const effectActions = {
  report: (_: unknown, _params: { status: CheckStatus }) => {},
  ttlExpired: () => {},
  restartTtlTimer: () => {},
  deregisterService: () => {},
} satisfies EffectActions<CheckEffect>;

/** Threshold arithmetic on the counter after this result, so guards and counters agree. */
const nextSuccess = (c: CheckContext) => Math.min(c.successCounter + 1, c.successBeforePassing);
const nextFailures = (c: CheckContext) => Math.min(c.failuresCounter + 1, Math.max(c.failuresBeforeCritical, c.failuresBeforeWarning));

/** Reports `status` and keeps the time the check became critical (unchanged while it stays critical). */
const report = (status: CheckStatus) => [
  { type: 'noteCriticalSince', params: { status } },
  { type: 'report', params: { status } },
] as const;

export const checkMachine = setup({
  types: { context: {} as CheckContext, events: {} as CheckEvent, input: {} as CheckContext },
  guards: {
    resultPassing: ({ event }) => event.type === 'result' && event.status === 'passing',
    resultWarning: ({ event }) => event.type === 'result' && event.status === 'warning',
    resultSucceeded: ({ event }) => event.type === 'result' && event.status !== 'critical',
    successReached: ({ context }) => nextSuccess(context) >= context.successBeforePassing,
    criticalReached: ({ context }) => nextFailures(context) >= context.failuresBeforeCritical,
    warningReached: ({ context }) => nextFailures(context) >= context.failuresBeforeWarning,
    setPassing: ({ event }) => event.type === 'set' && event.status === 'passing',
    setWarning: ({ event }) => event.type === 'set' && event.status === 'warning',
    ttlLapsed: ({ context, event }) =>
      event.type === 'ttl.lapse' && context.ttlMs > 0 && event.ttlUpdateIndex === context.ttlUpdateIndex,
    reapDue: ({ context, event }) =>
      event.type === 'reap' && context.deregisterAfterMs > 0 && event.criticalSinceMs === context.criticalSinceMs &&
      event.atMs - context.criticalSinceMs >= context.deregisterAfterMs,
  },
  actions: {
    ...effectActions,
    bumpSuccess: assign(({ context }) => ({ successCounter: nextSuccess(context), failuresCounter: 0 })),
    bumpFailure: assign(({ context }) => ({ successCounter: 0, failuresCounter: nextFailures(context) })),
    noteTtlUpdate: assign(({ context, event }) => (event.type === 'set' && event.restartsTtl ? { ttlUpdateIndex: event.index } : context)),
    noteCriticalSince: assign(({ context, event }, params: { status: CheckStatus }) => ({
      criticalSinceMs: params.status !== 'critical' ? 0 : context.criticalSinceMs !== 0 ? context.criticalSinceMs : event.atMs,
    })),
  },
}).createMachine({
  id: 'check',
  initial: 'critical',
  context: ({ input }) => input,
  on: {
    // Probe results: passing and warning count as successes; the status moves only at a threshold.
    result: [
      { guard: and(['resultPassing', 'successReached']), target: '.passing', actions: ['bumpSuccess', ...report('passing')] },
      { guard: and(['resultWarning', 'successReached']), target: '.warning', actions: ['bumpSuccess', ...report('warning')] },
      { guard: 'resultSucceeded', actions: 'bumpSuccess' },
      { guard: 'criticalReached', target: '.critical', actions: ['bumpFailure', ...report('critical')] },
      { guard: 'warningReached', target: '.warning', actions: ['bumpFailure', ...report('warning')] },
      { actions: 'bumpFailure' },
    ],
    // TTL updates and alias results set the status directly; a TTL update restarts the TTL timer.
    set: [
      { guard: 'setPassing', target: '.passing', actions: ['noteTtlUpdate', ...report('passing'), 'restartTtlTimer'] },
      { guard: 'setWarning', target: '.warning', actions: ['noteTtlUpdate', ...report('warning'), 'restartTtlTimer'] },
      { target: '.critical', actions: ['noteTtlUpdate', ...report('critical'), 'restartTtlTimer'] },
    ],
    // No update within the TTL: critical ("TTL expired").
    'ttl.lapse': { guard: 'ttlLapsed', target: '.critical', actions: ['ttlExpired', ...report('critical')] },
    // Critical longer than DeregisterCriticalServiceAfter: the service is deregistered.
    reap: { guard: 'reapDue', actions: 'deregisterService' },
  },
  states: {
    passing: {},
    warning: {},
    critical: {},
  },
});
