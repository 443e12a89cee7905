import type { SessionEvent } from '../../machines/index.ts';
import type { Effect } from './apply.ts';
import type { RegistryState } from './registry-state.ts';

/** What one entry's apply works with: the state, the entry's index and time, and the effects it yields. */
export interface Ctx {
  state: RegistryState;
  index: number;
  atMs: number;
  effects: Effect[];
  /** Invalidates the sessions of `node` bound to `checkId` (their locks handled by Behavior). */
  invalidateBoundTo(node: string, checkId: string, event: SessionEvent): void;
}
