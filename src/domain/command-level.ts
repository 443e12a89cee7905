/**
 * Command levels: which commands a release applies. A node that reads a command it does not know stops
 * (docs/cluster.md, "Rolling upgrade"), so a write whose command a node of the cluster does not know yet is
 * refused before it is proposed: each node announces its release's level in its gossip heartbeat, and the
 * runtime refuses a command above the level of any member that has not left.
 *
 * Level 1: every command of the first release. Level 2 adds `txn.kv` (PUT /v1/txn) and `state.restore`
 * (PUT /v1/snapshot). Level 3 adds `catalog.register` with `replaces` (a rename by node ID: an older node
 * would keep the renamed node). Level 4 adds `catalog.register` with `taggedAddresses` (an older node would
 * drop them). Level 5 writes those two in log format version 2 (src/log/format-version.ts), at which a release
 * reading only version 1 stops instead of dropping their fields: so they need every node at level 5, as a
 * level-4 node would stop at them. A release that adds commands raises `commandLevel` and lists them below.
 */
import type { Command } from './commands.ts';

/** The level of this release: it applies every command of this level and below. */
export const commandLevel = 5;

/** The lowest level whose releases apply `cmd`. */
export function commandLevelOf(cmd: Command): number {
  if (cmd.t === 'catalog.register' && (cmd.taggedAddresses !== undefined || cmd.replaces !== undefined)) return 5;
  return cmd.t === 'txn.kv' || cmd.t === 'state.restore' ? 2 : 1;
}

/** What one API path calls the command, for the refusal's message. */
export function commandWhat(cmd: Command): string {
  if (cmd.t === 'txn.kv') return 'a transaction (PUT /v1/txn)';
  if (cmd.t === 'state.restore') return 'a snapshot restore (PUT /v1/snapshot)';
  if (cmd.t === 'catalog.register' && cmd.taggedAddresses !== undefined) return 'a node registration with TaggedAddresses (PUT /v1/catalog/register)';
  if (cmd.t === 'catalog.register' && cmd.replaces !== undefined) return 'a node rename by its ID (PUT /v1/catalog/register)';
  return `the command ${cmd.t}`;
}
