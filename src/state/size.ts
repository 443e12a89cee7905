/**
 * An estimate of the state's size, in about the bytes it takes in a snapshot. Kept for the state quota
 * (limits.state_bytes_max): past it, writes that would grow the state are refused. A snapshot is read back
 * as one string, so a state whose snapshot passes V8's longest string (about 512 MiB) could no longer be
 * snapshotted, and one past the heap would crash the agent; the quota stops a client from getting there.
 *
 * KV entries are counted by their key, value (as stored: base64) and session id plus the fields around
 * them; sessions, checks, services, nodes and tombstones by what each holds (sized-map.ts).
 */
import type { KvEntry } from '../domain/types.ts';
import type { RegistryState } from './registry-state.ts';

/** A KV entry's fields around its key, value and session in a snapshot: names, indexes, flags, punctuation. */
const kvEntryFieldsBytes = 120;

/** What one KV entry adds to the estimate. */
export function kvEntryBytes(e: KvEntry): number {
  return e.key.length + (e.value?.length ?? 0) + (e.session?.length ?? 0) + kvEntryFieldsBytes;
}

/** The state's estimated size in bytes. */
export function stateBytes(s: RegistryState): number {
  return s.kvBytes + s.sessions.bytes + s.checks.bytes + s.services.bytes + s.nodes.bytes + s.tombstones.bytes;
}
