/**
 * A fast stepper for flat machines, read from the XState machine itself: its states' `on` tables,
 * its guard and action implementations. The machine stays the single definition; this only avoids
 * xstate's general interpreter (snapshot resolution, microsteps, state-node sets) on the lock hot
 * path, where each acquire and release steps the lock machine once.
 *
 * It takes only what a flat machine uses — top-level states with `on` transitions (or final), named guards,
 * named actions (effects or `assign`), plain sibling targets — and refuses anything else when it
 * compiles (nested states, entry/exit actions, root `on`, guard combinators, delayed or eventless
 * transitions), so a machine that outgrows it fails loudly instead of stepping differently.
 * test/machines/compiled.test.ts checks it against xstate's own `transition` on random inputs.
 */
import type { AnyStateMachine } from 'xstate';
import type { NamedEffect, Step } from './effects.ts';

type Args = { context: any; event: { type: string } };
type GuardFn = (args: Args, params?: unknown) => boolean;

interface CompiledAction {
  type: string;
  params: unknown;
  /** Set for an `assign`: the object or function given to `assign()`. */
  assignment?: unknown;
}

interface CompiledTransition {
  guard: GuardFn | undefined;
  target: string | undefined;
  /** The `assign` actions, in order. */
  assignments: CompiledAction[];
  /**
   * The effects the other actions name, in order: fixed by the machine (an action's params are a
   * value, never computed from the event), so made once here and shared, frozen, by every step.
   */
  effects: readonly NamedEffect[];
}

/** The effects of a step that names none. */
const noEffects: readonly NamedEffect[] = Object.freeze([]);

/** Steps one machine: its context `C`, events `Ev` and effects `E` as the machine file declares them. */
export type FlatStepper<C, Ev extends { type: string }, E extends NamedEffect> = (value: string, context: C, event: Ev) => Step<C, E>;

export function compileFlat<C = unknown, Ev extends { type: string } = { type: string }, E extends NamedEffect = NamedEffect>(
  machine: AnyStateMachine,
): FlatStepper<C, Ev, E> {
  const config = machine.config as { on?: unknown; states?: Record<string, Record<string, unknown>>; always?: unknown; after?: unknown };
  const impl = machine.implementations as { guards: Record<string, GuardFn>; actions: Record<string, unknown> };
  const refuse = (why: string): never => { throw new Error(`compileFlat(${machine.id}): ${why}`); };
  if (config.on !== undefined || config.always !== undefined || config.after !== undefined) refuse('root-level transitions');
  const table = new Map<string, Map<string, CompiledTransition[]>>();
  for (const [name, state] of Object.entries(config.states ?? {})) {
    // A final state only ends the machine (no effects), which a step does not report anyway.
    for (const k of Object.keys(state)) if (k !== 'on' && !(k === 'type' && state.type === 'final')) refuse(`state ${name} has "${k}"`);
    const events = new Map<string, CompiledTransition[]>();
    for (const [eventType, spec] of Object.entries((state.on ?? {}) as Record<string, unknown>)) {
      const list = (Array.isArray(spec) ? spec : [spec]) as Record<string, unknown>[];
      events.set(eventType, list.map((t) => compileTransition(t, impl, config.states ?? {}, refuse)));
    }
    table.set(name, events);
  }
  // The guards' argument, filled in before each call (guards are pure and keep nothing).
  const args: Args = { context: undefined, event: { type: '' } };
  return (value: string, context: C, event: Ev): Step<C, E> => {
    const candidates = table.get(value)?.get(event.type);
    if (candidates === undefined) return { value, context, effects: noEffects as E[] };
    for (const t of candidates) {
      if (t.guard !== undefined) {
        args.context = context;
        args.event = event;
        if (!t.guard(args)) continue;
      }
      let next: any = context;
      for (const a of t.assignments) next = applyAssignment(a.assignment, next, event, a.params);
      // The machine's effect actions are declared as `EffectActions<E>`, so the names it names are E's.
      return { value: t.target ?? value, context: next as C, effects: t.effects as E[] };
    }
    return { value, context, effects: noEffects as E[] };
  };
}

function compileTransition(
  t: Record<string, unknown>, impl: { guards: Record<string, GuardFn>; actions: Record<string, unknown> },
  states: Record<string, unknown>, refuse: (why: string) => never,
): CompiledTransition {
  for (const k of Object.keys(t)) if (!['guard', 'target', 'actions'].includes(k)) refuse(`transition key "${k}"`);
  let guard: GuardFn | undefined;
  if (t.guard !== undefined) {
    if (typeof t.guard !== 'string' || impl.guards[t.guard] === undefined) refuse(`guard ${JSON.stringify(t.guard)} is not a named guard`);
    guard = impl.guards[t.guard as string];
  }
  if (t.target !== undefined && (typeof t.target !== 'string' || !(t.target in states))) refuse(`target ${JSON.stringify(t.target)} is not a sibling state`);
  const actions = (t.actions === undefined ? [] : Array.isArray(t.actions) ? t.actions : [t.actions]).map((a: unknown): CompiledAction => {
    const { type, params } = typeof a === 'string' ? { type: a, params: undefined } : (a as { type: string; params?: unknown });
    const fn = impl.actions[type] as { type?: string; assignment?: unknown } | undefined;
    if (fn === undefined) refuse(`action ${JSON.stringify(type)} has no implementation`);
    if (fn!.type === 'xstate.assign') return { type, params, assignment: fn!.assignment };
    if (typeof fn!.type === 'string' && fn!.type.startsWith('xstate.')) refuse(`built-in action ${fn!.type}`);
    return { type, params };
  });
  const effects = actions.filter((a) => a.assignment === undefined).map((a) => Object.freeze({ type: a.type, params: a.params }));
  return {
    guard, target: t.target as string | undefined,
    assignments: actions.filter((a) => a.assignment !== undefined),
    effects: effects.length === 0 ? noEffects : Object.freeze(effects),
  };
}

/** What xstate's assign does: a function returns the changed fields; an object maps fields to values or functions. */
function applyAssignment(assignment: unknown, context: any, event: { type: string }, params: unknown): unknown {
  const args = { context, event };
  if (typeof assignment === 'function') return { ...context, ...(assignment as (a: Args, p: unknown) => object)(args, params) };
  const next = { ...context };
  for (const k in assignment as Record<string, unknown>) {
    if (!Object.hasOwn(assignment as object, k)) continue;
    const v = (assignment as Record<string, unknown>)[k];
    next[k] = typeof v === 'function' ? (v as (a: Args, p: unknown) => unknown)(args, params) : v;
  }
  return next;
}
