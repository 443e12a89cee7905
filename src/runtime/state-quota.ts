/**
 * The state quota (limits.state_bytes_max), as etcd's space quota: once the state's estimated size
 * (src/state/size.ts) is at or past the limit, a write that would grow it is refused before it is
 * proposed, and everything else goes through: deletes, releases, session renewals and destroys, check
 * results, and registrations of what is already there (an agent re-registering its node and definitions
 * at start). So the operator frees space with the API itself, and health keeps being reported.
 *
 * The check runs on the node that proposes, against what that node has applied: writes already in flight
 * when the limit is reached still land, so the state can pass it by about that much.
 */
import type { Command } from '../domain/commands.ts';
import { RegistryError } from '../domain/errors.ts';
import { stateBytes, type RegistryState } from '../state/index.ts';

export class StateQuota {
  private bytesMax = Number.POSITIVE_INFINITY;

  /** The limit, in estimated bytes (a reload changes it for the next writes). */
  get max(): number {
    return this.bytesMax;
  }

  /** Sets the limit. */
  setMax(bytes: number): void {
    this.bytesMax = bytes;
  }

  /**
   * The refusal of an append of `cmds` to `state`, or undefined when it may be proposed; `bytesMax` judges
   * against another limit (a reloaded file's, before it is in force).
   */
  refusal(cmds: readonly Command[], state: RegistryState, bytesMax = this.bytesMax): RegistryError<'stateQuotaExceeded'> | undefined {
    if (bytesMax === Number.POSITIVE_INFINITY) return undefined;
    const bytes = stateBytes(state);
    if (bytes < bytesMax || !cmds.some((cmd) => grows(cmd, state))) return undefined;
    return new RegistryError('stateQuotaExceeded', { stateBytes: bytes, stateBytesMax: bytesMax });
  }
}

/** Whether `cmd` can add to the state: a new item, or a KV value longer than the one it replaces. */
function grows(cmd: Command, state: RegistryState): boolean {
  switch (cmd.t) {
    case 'session.create': return true;
    case 'kv.set': case 'kv.cas': case 'kv.acquire': return longerValue(state, cmd.key, cmd.value);
    case 'txn.kv': return cmd.ops.some((op) => (op.verb === 'set' || op.verb === 'cas' || op.verb === 'lock') && longerValue(state, op.key, op.value));
    case 'catalog.register': return !state.nodes.has(cmd.node) || cmd.checks.some((c) => !state.checks.has(`${cmd.node}\0${c.checkId}`));
    case 'check.register': return !state.checks.has(`${cmd.node}\0${cmd.check.checkId}`);
    case 'service.register':
      return !state.services.has(`${cmd.node}\0${cmd.service.id}`) || cmd.checks.some((c) => !state.checks.has(`${cmd.node}\0${c.checkId}`));
    default: return false;
  }
}

function longerValue(state: RegistryState, key: string, value: string | null): boolean {
  const previous = state.kv.get(key);
  return previous === undefined || (value?.length ?? 0) > (previous.value?.length ?? 0);
}
