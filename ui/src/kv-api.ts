/**
 * The KV browser's HTTP calls. A key goes into the address `/v1/kv/<key>`, except a key with a `.` or
 * `..` segment: the browser would resolve those segments in the URL and reach another key, so such a key
 * travels in the body of a one-operation `PUT /v1/txn` that asks the same (a `get`, a `cas` with the same
 * index and flags, a `delete`, a `delete-tree`). Either way a failed condition is refused, never applied,
 * and refusals.ts says what a refusal was whichever way the call went.
 */
import { hasDotSegment } from './addresses.ts';
import { apiText, encodePath, send } from './api.ts';
import { bytesToBase64, exactFlags, type KvItem } from './kv-model.ts';

const kvPath = (key: string) => `/v1/kv/${encodePath(key)}`;

interface TxnOp { Verb: 'get' | 'cas' | 'delete' | 'delete-tree'; Key: string; Value?: string; Index?: number }

/** One KV operation as a transaction; `flags` are uint64 digits, written into the JSON as they are. */
function txn(op: TxnOp, flags?: string): Promise<string> {
  const kv = JSON.stringify(op);
  const body = flags === undefined ? kv : `${kv.slice(0, -1)},"Flags":${flags}}`;
  return send('PUT', '/v1/txn', `[{"KV":${body}}]`, 'application/json');
}

/** A key's entry as it is now, with its exact Flags (JSON.parse would round a uint64 past 2^53). */
export async function readKey(key: string): Promise<{ entry: KvItem; flags: string }> {
  const text = hasDotSegment(key) ? await txn({ Verb: 'get', Key: key }) : await apiText(kvPath(key));
  const parsed = JSON.parse(text) as KvItem[] | { Results: { KV: KvItem }[] };
  const entry = Array.isArray(parsed) ? parsed[0]! : parsed.Results[0]!.KV;
  return { entry, flags: exactFlags(text) ?? String(entry.Flags) };
}

/** Writes `value` only if the key is at ModifyIndex `cas` (0: only if it does not exist). */
export function writeKey(key: string, value: Uint8Array<ArrayBuffer>, cas: number, flags?: string): Promise<string> {
  if (hasDotSegment(key)) return txn({ Verb: 'cas', Key: key, Value: bytesToBase64(value), Index: cas }, flags);
  return send('PUT', `${kvPath(key)}?cas=${cas}${flags === undefined ? '' : `&flags=${flags}`}`, value);
}

export function deleteKey(key: string): Promise<string> {
  return hasDotSegment(key) ? txn({ Verb: 'delete', Key: key }) : send('DELETE', kvPath(key));
}

/** Deletes every key under `prefix`. */
export function deleteTree(prefix: string): Promise<string> {
  return hasDotSegment(prefix) ? txn({ Verb: 'delete-tree', Key: prefix }) : send('DELETE', `${kvPath(prefix)}?recurse`);
}
