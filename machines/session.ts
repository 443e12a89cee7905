/**
 * The Session table of spec/registry.md ("States and transitions › Session"), one transition per row,
 * in the table's order and words. The machine decides; actions only name effects that the state
 * layer carries out after the entry is applied (handle the session's locks by Behavior, restart the
 * TTL timer). It never reads a clock: times and indexes arrive in the events.
 */
import { assign, setup } from 'xstate';
import type { Behavior } from '../src/domain/types.ts';
import type { EffectActions } from './effects.ts';

export interface SessionContext {
  behavior: Behavior;
  /** Parsed TTL in ms; 0 when the session has no TTL. */
  ttlMs: number;
  /** Index and time of the entry that last (re)started the TTL. */
  renewIndex: number;
  renewedAtMs: number;
}

export type SessionEvent =
  | { type: 'node.destroyed' }
  | { type: 'check.deregistered'; checkId: string }
  | { type: 'check.critical'; checkId: string }
  | { type: 'destroy' }
  /** The TTL owner's timer fired for the renew it saw; stale when the session was renewed since. */
  | { type: 'ttl.expired'; renewIndex: number; atMs: number }
  | { type: 'create'; index: number; atMs: number }
  | { type: 'renew'; index: number; atMs: number }
  | { type: 'leader.failover' };

/** Effects the state layer acts on. */
export type SessionEffect = { type: 'handleLocksByBehavior' } | { type: 'restartTtlTimer' };

/** Effects: named here, carried out by src/state after the entry applies. */
const effectActions = {
  handleLocksByBehavior: () => {},
  restartTtlTimer: () => {},
} satisfies EffectActions<SessionEffect>;

export const sessionMachine = setup({
  types: {
    context: {} as SessionContext,
    events: {} as SessionEvent,
    input: {} as SessionContext,
  },
  guards: {
    ttlSet: ({ context }) => context.ttlMs > 0,
    /** "TTL set and not renewed; expiry is never earlier than the TTL but may come later". */
    ttlSetAndNotRenewed: ({ context, event }) =>
      event.type === 'ttl.expired' &&
      context.ttlMs > 0 &&
      event.renewIndex === context.renewIndex &&
      event.atMs >= context.renewedAtMs + context.ttlMs,
  },
  actions: {
    ...effectActions,
    noteRenew: assign(({ context, event }) =>
      event.type === 'renew' || event.type === 'create'
        ? { renewIndex: event.index, renewedAtMs: event.atMs }
        : context,
    ),
  },
}).createMachine({
  id: 'session',
  initial: 'valid',
  context: ({ input }) => input,
  states: {
    valid: {
      on: {
        // valid | node destroyed | none | invalidated | locks handled by Behavior
        'node.destroyed': { target: 'invalidated', actions: 'handleLocksByBehavior' },
        // valid | any bound health check deregistered | none | invalidated | same
        'check.deregistered': { target: 'invalidated', actions: 'handleLocksByBehavior' },
        // valid | any bound health check enters critical | none | invalidated | same
        'check.critical': { target: 'invalidated', actions: 'handleLocksByBehavior' },
        // valid | destroy operation | none | invalidated | same
        destroy: { target: 'invalidated', actions: 'handleLocksByBehavior' },
        // valid | TTL expires | TTL set and not renewed | invalidated | same
        'ttl.expired': { guard: 'ttlSetAndNotRenewed', target: 'invalidated', actions: 'handleLocksByBehavior' },
        // valid | create, renew, leader failover | TTL set | valid | the TTL timer is restarted
        create: { guard: 'ttlSet', actions: ['noteRenew', 'restartTtlTimer'] },
        renew: { guard: 'ttlSet', actions: ['noteRenew', 'restartTtlTimer'] },
        'leader.failover': { guard: 'ttlSet', actions: 'restartTtlTimer' },
      },
    },
    // "an invalidated (destroyed) session cannot be used again"
    invalidated: { type: 'final' },
  },
});
