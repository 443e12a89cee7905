/**
 * KV endpoints (consul-compat.md §1.2, §3.2): GET with recurse/keys/separator/raw, PUT with flags,
 * cas, acquire and release, DELETE with recurse and cas. Values are opaque bytes; flags are uint64
 * kept as decimal text so 3304740253564472344 round-trips exactly. The key is the rest of the path.
 */
import type { Command } from '../../domain/commands.ts';
import { RegistryError } from '../../domain/errors.ts';
import type { KvEntry } from '../../domain/types.ts';
import type { Result } from '../../state/index.ts';
import type { ApiContext } from '../api.ts';
import { entityTag } from '../conditional.ts';
import { conditionalWrite, moved, preconditionsOf, type Preconditions, type Version } from '../preconditions.ts';
import { awaitQuery, checkDatacenter, parseQueryOptions, parseUint64, queryOptionParameters, waits, type QueryOptions } from '../query.ts';
import type { Reply } from '../reply.ts';
import { flag, nothingReadable, param, readableUnder, type Request } from '../request.ts';
import { requireSessionUse } from '../session-access.ts';
import type { Route } from '../router.ts';
import { blockingWaitMsMax } from '../../domain/limits.ts';
import { goDurationRule, parseGoDurationMs } from '../../util/duration.ts';

/** Renders entries by hand: Flags must print as exact uint64 digits, which JSON.stringify cannot do. */
export function renderEntries(entries: readonly KvEntry[]): string {
  return `[${entries.map(renderEntry).join(',')}]`;
}

/** An entry as a JSON-ready value: field order as Consul's, Flags a BigInt so uint64 stays exact. */
export function entryValue(e: KvEntry): Record<string, unknown> {
  return {
    LockIndex: e.lockIndex, Key: e.key, Flags: BigInt(e.flags), Value: e.value,
    ...(e.session === undefined ? {} : { Session: e.session }),
    CreateIndex: e.createIndex, ModifyIndex: e.modifyIndex,
  };
}

export function renderEntry(e: KvEntry): string {
  const session = e.session === undefined ? '' : `,"Session":${JSON.stringify(e.session)}`;
  const value = e.value === null ? 'null' : `"${e.value}"`;
  return `{"LockIndex":${e.lockIndex},"Key":${JSON.stringify(e.key)},"Flags":${e.flags},"Value":${value}${session},"CreateIndex":${e.createIndex},"ModifyIndex":${e.modifyIndex}}`;
}

/** A single key's GET body and its ETag, as last rendered, with the fields of the entry it was rendered from. */
interface Rendered {
  modifyIndex: number;
  createIndex: number;
  lockIndex: number;
  session: string | undefined;
  body: string;
  tag: string;
}

/**
 * Rendered single-key answers, per entry: a GET of a key that has not changed since renders nothing and
 * hashes nothing. Every change of an entry moves its ModifyIndex (the state sets it on each write), and a
 * lock step its LockIndex and Session too; an entry that leaves the state takes its rendering with it.
 */
const renderedEntries = new WeakMap<KvEntry, Rendered>();

function renderedEntry(e: KvEntry): Rendered {
  const kept = renderedEntries.get(e);
  if (kept !== undefined && kept.modifyIndex === e.modifyIndex && kept.createIndex === e.createIndex && kept.lockIndex === e.lockIndex && kept.session === e.session) {
    return kept;
  }
  const body = `[${renderEntry(e)}]`;
  const rendered = { modifyIndex: e.modifyIndex, createIndex: e.createIndex, lockIndex: e.lockIndex, session: e.session, body, tag: entityTag(body) };
  renderedEntries.set(e, rendered);
  return rendered;
}

/** The `?raw` answer's bytes. */
function rawValue(e: KvEntry): Buffer {
  return e.value === null ? Buffer.alloc(0) : Buffer.from(e.value, 'base64');
}

/** The `?raw` answers' ETags, per entry and its ModifyIndex (every change of the value moves it): hashed once per version. */
const rawTags = new WeakMap<KvEntry, { modifyIndex: number; tag: string }>();

function rawTag(e: KvEntry, bytes?: Buffer): string {
  const kept = rawTags.get(e);
  if (kept !== undefined && kept.modifyIndex === e.modifyIndex) return kept.tag;
  const tag = entityTag(bytes ?? rawValue(e));
  rawTags.set(e, { modifyIndex: e.modifyIndex, tag });
  return tag;
}

/**
 * The key's version a conditional write replaces: its ModifyIndex, and its two representations' ETags (the
 * JSON answer's and `?raw`'s). A caller that may not read the key matches no tag of it.
 */
function keyVersion(req: Request, api: ApiContext, key: string): Version | undefined {
  const e = api.runtime.state.kvGet(key);
  if (e === undefined) return undefined;
  const readable = readableUnder(req, 'key', key);
  const may = readable === undefined || readable(key);
  return { index: e.modifyIndex, has: (tag) => may && (tag === renderedEntry(e).tag || tag === rawTag(e)) };
}

function keyNotFound(key: string): RegistryError {
  return new RegistryError('kvKeyNotFound', { key });
}

// ---------------------------------------------------------------- GET

/** The filter of a subtree the caller may read whole: it counts every key, and not the table index. */
const anyKey = () => true;

/** A single key's GET answers synchronously unless it waits (a blocking query, `?consistent`). */
function get(req: Request, api: ApiContext): Reply | Promise<Reply> {
  const q = parseQueryOptions(req, api);
  if (flag(req, 'keys') || flag(req, 'recurse')) return getList(req, api, q);
  const key = req.rest;
  if (key === '') throw new RegistryError('kvKeyMissing');
  // The gate let the caller read this key; a missing key's index then counts only what it may read too.
  const readableKeys = readableUnder(req, 'key', '');
  if (!waits(q)) return keyReply(req, api, key, api.runtime.state.kvKeyIndex(key, readableKeys));
  const keyIndex = () => api.runtime.state.kvKeyIndex(key, readableKeys);
  return awaitQuery(req, api, q, { kind: 'key', key }, keyIndex).then(() => keyReply(req, api, key, keyIndex()));
}

function keyReply(req: Request, api: ApiContext, key: string, keyIndex: number): Reply {
  const entry = api.runtime.state.kvGet(key);
  const index = { index: keyIndex };
  if (entry === undefined) return { t: 'missing', index, failure: keyNotFound(key) };
  if (flag(req, 'raw')) {
    const body = rawValue(entry);
    return { t: 'raw', body, tag: rawTag(entry, body), index };
  }
  const rendered = renderedEntry(entry);
  return { t: 'json', json: rendered.body, tag: rendered.tag, index };
}

/** `?keys` and `?recurse`. */
async function getList(req: Request, api: ApiContext, q: QueryOptions): Promise<Reply> {
  const key = req.rest;
  const state = () => api.runtime.state;
  // With authentication, a caller that may not read every key sees lists of, and an index counting, only
  // the keys it may read (undefined: no filter). Its index never falls back to the KV table's.
  const readableKeys = readableUnder(req, 'key', '');
  const readable = readableKeys !== undefined ? readableUnder(req, 'key', key) : undefined;
  const counted = readableKeys === undefined ? undefined : readable ?? anyKey;
  // A prefix no rule of the caller's opens is not walked: it lists nothing, its index is the floor.
  const hidden = readable === nothingReadable;
  const prefixIndex = () => (hidden ? state().kvHiddenIndex() : state().kvPrefixIndex(key, counted));
  if (flag(req, 'keys')) {
    const separator = param(req, 'separator') ?? param(req, 'seperator') ?? '';
    await awaitQuery(req, api, q, { kind: 'prefix', prefix: key }, prefixIndex);
    // Filtered before the cut: a cut name shows only when a readable key lies under it.
    const keys = hidden ? [] : state().kvKeys(key, separator, readable);
    const index = { index: prefixIndex() };
    if (keys.length === 0 && key !== '') return { t: 'missing', index, failure: keyNotFound(key) };
    // Rendered here, where JSON.stringify needs no replacer (no uint64 in a key list), and sent as is unless
    // list parameters page or sort it (list-rules.ts renders it again from `value` then).
    return { t: 'json', value: keys, json: JSON.stringify(keys), index };
  }
  await awaitQuery(req, api, q, { kind: 'prefix', prefix: key }, prefixIndex);
  // Only the entries the caller may read, as Consul filters lists by ACL.
  const entries = readable === undefined ? state().kvList(key) : hidden ? [] : state().kvList(key).filter((e) => readable(e.key));
  const index = { index: prefixIndex() };
  if (entries.length === 0) return { t: 'missing', index, failure: keyNotFound(key) };
  // As values (Flags as BigInt, printed exactly) so list parameters can page and sort them.
  return { t: 'json', value: entries.map(entryValue), index, bytesHint: renderedBytesAbout(entries) };
}

/** About the length of the entries as JSON: their keys and values, and each entry's other fields. */
function renderedBytesAbout(entries: readonly KvEntry[]): number {
  let bytes = 2;
  for (const e of entries) bytes += e.key.length + (e.value?.length ?? 4) + (e.session === undefined ? 100 : 150);
  return bytes;
}

// ---------------------------------------------------------------- PUT

function uint64Param(req: Request, name: string): string | undefined {
  if (!flag(req, name)) return undefined;
  const text = param(req, name) ?? '';
  const parsed = parseUint64(text);
  if (parsed === undefined) {
    throw new RegistryError('kvUint64Invalid', { name, text });
  }
  return parsed;
}

function sessionParam(req: Request, name: 'acquire' | 'release'): string | undefined {
  if (!flag(req, name)) return undefined;
  const id = param(req, name) ?? '';
  if (id === '') {
    throw new RegistryError('kvSessionMissing', { name });
  }
  return id;
}

/** The exclusive modes of a PUT and of a DELETE. */
const putModes: readonly string[] = ['cas', 'acquire', 'release'];
const deleteModes: readonly string[] = ['recurse', 'cas'];

/** More than one of the exclusive modes is a client error (Consul: "Conflicting flags"). */
function checkExclusive(req: Request, names: readonly string[]): void {
  let count = 0;
  for (const n of names) if (flag(req, n)) count += 1;
  if (count > 1) {
    const given = names.filter((n) => flag(req, n));
    const sortedQuery = [...req.query.keys()].sort().map((k) => `${encodeURIComponent(k)}=${encodeURIComponent(req.query.get(k) ?? '')}`).join('&');
    throw new RegistryError('kvFlagsConflict', { given, exclusive: [...names], query: sortedQuery });
  }
}

function failure(r: Extract<Result, { ok: false }>, op: 'acquire' | 'release' | 'cas'): RegistryError {
  if (r.reason === 'invalid-session') {
    return new RegistryError('kvSessionInvalid', { session: r.detail });
  }
  const failed = { cas: 'casMismatch', acquire: 'lockNotAcquired', release: 'lockNotReleased' } as const;
  return new RegistryError(failed[op], { reason: r.reason });
}

/** The acquire's `wait`: a Go duration, at most the blocking-query maximum (10 min). */
function acquireWaitMs(req: Request): number {
  const text = param(req, 'wait') ?? '';
  const ms = parseGoDurationMs(text);
  if (ms === undefined || ms < 0) throw new RegistryError('waitInvalid', { rule: goDurationRule });
  return Math.min(ms, blockingWaitMsMax);
}

/**
 * Not an async function: a write's answer is its commit's promise, taken one step further, with no
 * promise of the handler's own in between (this is the lock path every client loop runs).
 */
function put(req: Request, api: ApiContext): Promise<Reply> {
  checkDatacenter(req, api);
  const key = req.rest;
  if (key === '') throw new RegistryError('kvKeyMissing');
  checkExclusive(req, putModes);
  const flags = uint64Param(req, 'flags') ?? '0';
  const cas = uint64Param(req, 'cas');
  const acquire = sessionParam(req, 'acquire');
  const release = sessionParam(req, 'release');
  const value = req.body.length === 0 ? null : req.body.toString('base64');
  let cmd: Command;
  let op: PutOp;
  if (acquire !== undefined) { cmd = { t: 'kv.acquire', key, value, flags, session: acquire }; op = 'acquire'; }
  else if (release !== undefined) { cmd = { t: 'kv.release', key, value, flags, session: release }; op = 'release'; }
  else if (cas !== undefined) { cmd = { t: 'kv.cas', key, value, flags, cas }; op = 'cas'; }
  else { cmd = { t: 'kv.set', key, value, flags }; op = 'set'; }
  const pre = preconditionsOf(req, api.dialect);
  if (pre !== undefined) return putUnder(req, api, pre, { key, value, flags }, cas, acquire !== undefined ? 'acquire' : release !== undefined ? 'release' : undefined);
  // `?wait=` on an acquire: queue behind this node's earlier waiters until the lock is free (Roster's extension).
  const waitMs = op === 'acquire' && flag(req, 'wait') ? acquireWaitMs(req) : undefined;
  // Locking with a session is its owner's (or an operator's) right; the key's own rule was checked by the gate.
  if (req.identity !== undefined && (cmd.t === 'kv.acquire' || cmd.t === 'kv.release')) {
    const locking = cmd;
    return requireSessionUse(req, api, locking.session).then(() => putCommitted(req, api, locking, op, waitMs));
  }
  return putCommitted(req, api, cmd, op, waitMs);
}

type PutOp = 'acquire' | 'release' | 'cas' | 'set';

function putCommitted(req: Request, api: ApiContext, cmd: Command, op: PutOp, waitMs: number | undefined): Promise<Reply> {
  // A release goes through the queues too: a waiter parked on the key gets the lock in the same commit.
  const result = waitMs !== undefined && cmd.t === 'kv.acquire'
    ? api.runtime.lockQueues.acquire(cmd, waitMs, req.signal, req)
    : cmd.t === 'kv.release' ? api.runtime.lockQueues.release(cmd) : api.runtime.propose(cmd);
  return result.then((r) => putAnswer(r, op));
}

function putAnswer(result: Result, op: PutOp): Reply {
  if (result.ok) return { t: 'outcome', ok: true, index: result.index };
  if (op === 'set') throw new RegistryError('kvWriteFailed', { reason: result.reason });
  const err = failure(result, op);
  if (err.kind !== 'conflict') throw err;
  return { t: 'outcome', ok: false, failure: err };
}

/**
 * A PUT under If-Match / If-None-Match (preconditions.ts): a compare-and-set on the version the headers
 * were judged on. With `?cas=` as well, both must hold: the headers are judged first (412), then `cas` must
 * name that same version (else the compare-and-set's own refusal, as without the headers).
 */
function putUnder(
  req: Request, api: ApiContext, pre: Preconditions, write: { key: string; value: string | null; flags: string }, cas: string | undefined,
  locking: 'acquire' | 'release' | undefined,
): Promise<Reply> {
  if (locking !== undefined) throw new RegistryError('preconditionUnsupported', { given: locking });
  return conditionalWrite<Reply>(pre, () => keyVersion(req, api, write.key), (index) => {
    if (cas !== undefined && cas !== String(index)) return Promise.resolve(casRefused());
    return api.runtime.propose({ t: 'kv.cas', ...write, cas: String(index) }).then((r) => (r.ok || r.reason !== 'cas-mismatch' ? putAnswer(r, 'cas') : moved));
  });
}

function casRefused(): Reply {
  return { t: 'outcome', ok: false, failure: new RegistryError('casMismatch', { reason: 'cas-mismatch' }) };
}

/**
 * A DELETE under If-Match / If-None-Match: the key is deleted only while it is the version the headers
 * were judged on (a transaction's check-index then delete, one entry); a key that is not there has nothing
 * to delete (`true`, as every DELETE of a missing key). `?cas=` as with a PUT.
 */
function deleteUnder(req: Request, api: ApiContext, pre: Preconditions, key: string, cas: string | undefined): Promise<Reply> {
  return conditionalWrite<Reply>(pre, () => keyVersion(req, api, key), async (index) => {
    if (index === 0) return { t: 'outcome', ok: true };
    if (cas !== undefined && cas !== String(index)) return casRefused();
    const op = { key, value: null, flags: '0', index: String(index), session: '' };
    const r = await api.runtime.propose({ t: 'txn.kv', ops: [{ ...op, verb: 'check-index' }, { ...op, verb: 'delete' }] });
    return r.ok ? { t: 'outcome', ok: true } : moved;
  });
}

// ---------------------------------------------------------------- DELETE

async function del(req: Request, api: ApiContext): Promise<Reply> {
  checkDatacenter(req, api);
  const key = req.rest;
  checkExclusive(req, deleteModes);
  const pre = preconditionsOf(req, api.dialect);
  if (pre !== undefined && flag(req, 'recurse')) throw new RegistryError('preconditionUnsupported', { given: 'recurse' });
  if (flag(req, 'recurse')) {
    await api.runtime.propose({ t: 'kv.deleteTree', prefix: key });
    return { t: 'outcome', ok: true };
  }
  if (key === '') throw new RegistryError('kvKeyMissing');
  const cas = uint64Param(req, 'cas');
  if (pre !== undefined) return deleteUnder(req, api, pre, key, cas);
  if (cas === undefined) {
    await api.runtime.propose({ t: 'kv.delete', key });
    return { t: 'outcome', ok: true };
  }
  const result = await api.runtime.propose({ t: 'kv.deleteCas', key, cas });
  if (result.ok) return { t: 'outcome', ok: true };
  return { t: 'outcome', ok: false, failure: failure(result, 'cas') };
}

export const kvRoutes: Route<ApiContext>[] = [
  {
    path: '/v1/kv/', prefix: true, rest: 'path', methods: { GET: get, PUT: put, DELETE: del }, produces: { GET: ['application/json', 'text/plain'] }, preconditions: true,
    query: [...queryOptionParameters, 'recurse', 'keys', 'separator', 'seperator', 'raw', 'flags', 'cas', 'acquire', 'release'],
  },
];
