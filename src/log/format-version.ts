/**
 * The format version every log record carries: each entry of a commit (WAL frames and JetStream commit
 * messages, field `v`), the snapshot payload (`v`) and the JetStream snapshot record (`v`). A record
 * without the field is version 1, the form written before the field existed (the same layout).
 *
 * A reader accepts every version up to `logFormatVersion` and throws `FormatVersionError` on a newer
 * one: a node stops rather than misread a log written by a newer release (as an unknown command tag
 * stops it in src/state/apply/dispatch.ts). Damage (a version that is not a positive integer) is
 * reported as damage, not as a newer format.
 */

import { commandLevelOf } from '../domain/command-level.ts';
import type { Command } from '../domain/commands.ts';

/** The newest log and snapshot format this code reads. */
export const logFormatVersion = 2;

/** The format of every record this code writes but the entries `entryFormatVersion` raises: every release reads it. */
export const writtenFormatVersion = 1;

/**
 * The format version an entry of the log is written in. Version 2 marks an entry whose command a release
 * reading only version 1 would apply wrongly without noticing, where no unknown command tag stops it: a
 * `catalog.register` with `replaces` or `taggedAddresses`, whose fields such a release drops. A node rolled
 * back to one of those releases stops at the entry (FormatVersionError) rather than lose what it carried;
 * every other entry stays version 1, so a rollback works as long as none of these was written. (In a
 * cluster these commands are refused until every node runs command level 5, which reads version 2.)
 */
export function entryFormatVersion(cmd: Command): number {
  return commandLevelOf(cmd) >= 5 ? 2 : writtenFormatVersion;
}

/** A record written in a newer format than this node reads: the node must be upgraded, not go on. */
export class FormatVersionError extends Error {
  override readonly name = 'FormatVersionError';

  constructor(readonly what: string, readonly found: number, readonly known = logFormatVersion) {
    super(`${what} is in format version ${found}, newer than this node reads (versions up to ${known}): `
      + `a node of a newer release wrote it; upgrade this node to that release (it stops rather than misread the log)`);
  }
}

/**
 * The format version of a record's `v` field (absent: 1), or why it is not one. Throws
 * FormatVersionError for a version newer than `known`.
 */
export function formatVersionOf(what: string, v: unknown, known = logFormatVersion): number | string {
  if (v === undefined) return 1;
  if (typeof v !== 'number' || !Number.isSafeInteger(v) || v < 1) return `bad format version ${JSON.stringify(v)}`;
  if (v > known) throw new FormatVersionError(what, v, known);
  return v;
}
