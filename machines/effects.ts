/**
 * What a pure step of a machine hands back, typed per machine: the next state value, the next context
 * and the effects its actions named. Each machine declares its effects as a union (`LockEffect`, ...)
 * and its effect actions with `EffectActions` of that union, so the action names and the effect type
 * cannot drift apart; the state layer then asks for effects by their type (`hasEffect`, `effectOf`).
 */

/** An effect an action names: its type, and its params when the action has them. */
export interface NamedEffect {
  type: string;
  params?: unknown;
}

export interface Step<C, E extends NamedEffect = NamedEffect> {
  value: string;
  context: C;
  effects: E[];
}

type ParamsOf<E extends NamedEffect, K extends E['type']> = Extract<E, { type: K }> extends { params: infer P } ? P : undefined;

/**
 * One no-op implementation per effect type, exactly the union's types (an action missing or extra is a
 * compile error): machines spread these into their `setup({ actions })` beside their `assign`s.
 */
export type EffectActions<E extends NamedEffect> = { [K in E['type']]: (args: never, params: ParamsOf<E, K>) => void };

export function hasEffect<E extends NamedEffect>(step: Step<unknown, E>, type: E['type']): boolean {
  return step.effects.some((e) => e.type === type);
}

/** The first effect of `type` the step named, with its params typed. */
export function effectOf<E extends NamedEffect, K extends E['type']>(step: Step<unknown, E>, type: K): Extract<E, { type: K }> | undefined {
  return step.effects.find((e): e is Extract<E, { type: K }> => e.type === type);
}
