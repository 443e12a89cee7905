/**
 * Pure apply: one committed entry changes the state and yields a result and effects. Time and ids come
 * from the entry, never from a clock or a random source, so every node that applies the same log holds
 * the same state. Decisions about sessions, locks and checks are taken by the machines (machines/); the
 * table files (sessions, kv, checks, catalog) carry out what they decide. This file routes each command
 * to its handler through a map typed over the command union: a tag without a handler does not compile.
 * Expected failures are results; an unknown command tag throws (a node must stop rather than apply a
 * log it does not understand).
 */
import type { CommandTag } from '../../domain/commands.ts';
import type { LogEntry } from '../../ports/log.ts';
import type { RegistryState } from '../registry-state.ts';
import { catalogHandlers } from './catalog.ts';
import { checkHandlers } from './checks.ts';
import { kvHandlers, sweepLockDelays } from './kv.ts';
import { restoreHandlers } from './restore.ts';
import { sessionHandlers } from './sessions.ts';
import { txnHandlers } from './txn.ts';
import { ok, type Applied, type CommandMap, type Ctx, type Handlers, type Result } from './types.ts';

const handlers: Handlers = {
  ...sessionHandlers,
  ...kvHandlers,
  ...txnHandlers,
  ...checkHandlers,
  ...catalogHandlers,
  ...restoreHandlers,
  // A no-op entry: once it applies, everything committed before it has applied (?consistent).
  barrier: () => ok,
};

export function apply(state: RegistryState, entry: LogEntry): Applied {
  if (entry.index !== state.index + 1) {
    throw new Error(`apply: entry ${entry.index} does not follow applied index ${state.index}`);
  }
  state.index = entry.index;
  state.atMs = Math.max(state.atMs, entry.atMs);
  const ctx: Ctx = { state, index: entry.index, atMs: state.atMs, effects: [] };
  const tag: unknown = entry.cmd.t;
  if (typeof tag !== 'string' || !Object.hasOwn(handlers, tag)) {
    throw new Error(`apply: unknown command tag ${JSON.stringify(tag)} at index ${ctx.index}; this node cannot apply this log`);
  }
  const result = run(ctx, entry.cmd.t, entry.cmd);
  sweepLockDelays(state);
  return { result, effects: ctx.effects };
}

/** Calls the handler of tag `T` with its command (the map's key and the command's type correlate). */
function run<T extends CommandTag>(c: Ctx, t: T, cmd: CommandMap[T]): Result {
  return handlers[t](c, cmd);
}
