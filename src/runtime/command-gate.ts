/**
 * The command-level gate of a rolling upgrade: a command is proposed only when every member of the cluster
 * that has not left runs a release that applies it (src/domain/command-level.ts); a node reading a command
 * it does not know would stop on it, and stop again at every restart until upgraded. Members are those this
 * node has heard of since it started (alive or failed), as gossip knows them; the own node always applies
 * its own commands. A cluster node still in its start's gossip grace first waits (at most until the grace
 * ends) to hear from every Roster node of the catalog, so a node just upgraded does not take such a command
 * before it has heard that an older one runs.
 */
import { commandLevelOf, commandWhat } from '../domain/command-level.ts';
import type { Command } from '../domain/commands.ts';
import { RegistryError } from '../domain/errors.ts';
import type { Member } from '../ports/membership.ts';
import type { Result } from '../state/index.ts';

/**
 * The refusal of an append of `cmds`, or undefined when every member that has not left applies them all.
 * `members` is called only for a command above level 1 (not on the path of every write).
 */
export function commandRefusal(cmds: readonly Command[], members: () => readonly Member[], selfName: string): RegistryError<'clusterBehind'> | undefined {
  const first = firstAboveLevel1(cmds);
  if (first === undefined) return undefined;
  const needs = Math.max(...cmds.map(commandLevelOf));
  const behind = members()
    .filter((m) => m.name !== selfName && m.status !== 'left' && (m.commandLevel ?? 1) < needs)
    .map((m) => ({ node: m.name, level: m.commandLevel ?? 1, status: m.status }));
  return behind.length === 0 ? undefined : new RegistryError('clusterBehind', { what: commandWhat(first), needs, behind });
}

function firstAboveLevel1(cmds: readonly Command[]): Command | undefined {
  for (const cmd of cmds) if (commandLevelOf(cmd) > 1) return cmd;
  return undefined;
}

/** What the gate needs from the runtime. */
export interface GateHost {
  /** The state quota's refusal of `cmds` (state-quota.ts), checked first for every append. */
  overQuota(cmds: readonly Command[]): RegistryError | undefined;
  selfName: string;
  members(): readonly Member[];
  /** Resolves once gossip has heard every Roster node of the catalog, or the start's grace is over. */
  heardOrGraceOver(): Promise<void>;
  submit(cmds: readonly Command[]): Promise<Result>[];
}

/**
 * Refuses `cmds` past the state quota; else submits them through the gate when one of them is above level 1
 * (after `heardOrGraceOver`, refused if a member is behind); undefined for an append of level-1 commands
 * only, which the caller submits itself.
 */
export function gatedSubmit(cmds: readonly Command[], host: GateHost): Promise<Result>[] | undefined {
  const overQuota = host.overQuota(cmds);
  if (overQuota !== undefined) return cmds.map(() => Promise.reject(overQuota));
  if (firstAboveLevel1(cmds) === undefined) return undefined;
  const submitted = host.heardOrGraceOver().then(() => {
    const refused = commandRefusal(cmds, () => host.members(), host.selfName);
    if (refused !== undefined) throw refused;
    return host.submit(cmds);
  });
  return cmds.map((_, i) => submitted.then((results) => results[i]!));
}
