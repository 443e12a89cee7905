/**
 * The snapshot payload every log stores: `{"index":n,"data":...,"v":format}`, written whole or in
 * pieces (so a large state is never one string) and parsed back; data must survive JSON. A payload
 * without `v` is format version 1 (format-version.ts).
 */
import type { Snapshot } from '../ports/log.ts';
import { isObject } from './commit-payload.ts';
import { formatVersionOf, writtenFormatVersion } from './format-version.ts';

/** The snapshot payload: `{"index":n,"data":...,"v":format}`; data must survive JSON. */
export function snapshotPayload(s: Snapshot): string {
  return JSON.stringify({ index: s.index, data: s.data, v: writtenFormatVersion });
}

/**
 * The same text as snapshotPayload, in pieces of about `chunkChars` characters: the arrays of the
 * data object (a million KV entries, say) are written element by element, so no single string of the
 * whole state is ever built (at 1M keys that would be a 256 MB string plus a buffer of it).
 */
export function* snapshotPayloadChunks(s: Snapshot, chunkChars = 1 << 20): Generator<string> {
  let pending = `{"index":${JSON.stringify(s.index)},"data":`;
  const out = function* (text: string): Generator<string> {
    pending += text;
    if (pending.length >= chunkChars) {
      yield pending;
      pending = '';
    }
  };
  const data = s.data;
  if (data === null || typeof data !== 'object' || Array.isArray(data)) {
    yield* out(JSON.stringify(data) ?? 'null');
  } else {
    yield* out('{');
    let first = true;
    for (const [k, v] of Object.entries(data as Record<string, unknown>)) {
      // JSON.stringify leaves out undefined, function and symbol members; so does this.
      if (v === undefined || typeof v === 'function' || typeof v === 'symbol') continue;
      yield* out(`${first ? '' : ','}${JSON.stringify(k)}:`);
      first = false;
      if (!Array.isArray(v)) {
        yield* out(JSON.stringify(v));
        continue;
      }
      yield* out('[');
      for (let i = 0; i < v.length; i++) yield* out(`${i === 0 ? '' : ','}${JSON.stringify(v[i]) ?? 'null'}`);
      yield* out(']');
    }
    yield* out('}');
  }
  pending += `,"v":${writtenFormatVersion}}`;
  yield pending;
}

/** Parses a snapshot payload, or returns why it is not one; throws FormatVersionError for a newer format. */
export function parseSnapshot(payload: string): Snapshot | string {
  let v: unknown;
  try {
    v = JSON.parse(payload);
  } catch {
    return 'bad JSON';
  }
  if (!isObject(v) || typeof v.index !== 'number' || !Number.isSafeInteger(v.index)) return 'bad snapshot index';
  const version = formatVersionOf(`snapshot at index ${v.index}`, v.v);
  if (typeof version === 'string') return version;
  return { index: v.index, data: v.data };
}
