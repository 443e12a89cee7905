/**
 * `roster kv get|put|delete`, as `consul kv` does them: values are bytes (`-` reads stdin, `@file` a
 * file, `-base64` decodes: kv-value.ts), `-cas` applies only at a modify index, `-acquire`/`-release` take or give
 * back a lock for `-session`, `-recurse` works on a prefix. A refused write exits 1 with the agent's
 * message ("did not acquire lock"); a bad command line exits 2 and sends nothing.
 */
import { failureOf, keyPath, type Answer } from './client.ts';
import type { CliContext } from './context.ts';
import { CliError, usageError } from './errors.ts';
import { putValue } from './kv-value.ts';
import { fields, shown } from './output.ts';

export interface KvEntry {
  LockIndex: number;
  Key: string;
  Flags: number | bigint;
  Value: string | null;
  Session?: string;
  CreateIndex: number;
  ModifyIndex: number;
}

const uint64Max = 18446744073709551615n;

/** A uint64 in decimal (KV flags, CAS indexes), checked here so a bad one sends nothing. */
export function parseUint64(flag: string, text: string): string {
  if (!/^\d{1,20}$/.test(text) || BigInt(text) > uint64Max) throw usageError(`${flag}: "${text}" is not an unsigned 64-bit integer`);
  return BigInt(text).toString();
}

function valueBytes(e: KvEntry): Buffer {
  return e.Value === null ? Buffer.alloc(0) : Buffer.from(e.Value, 'base64');
}

function detailed(e: KvEntry, base64: boolean): string {
  const value = base64 ? valueBytes(e).toString('base64') : valueBytes(e).toString('utf8');
  return fields([
    ['CreateIndex', String(e.CreateIndex)], ['Flags', String(e.Flags)], ['Key', e.Key], ['LockIndex', String(e.LockIndex)],
    ['ModifyIndex', String(e.ModifyIndex)], ['Session', e.Session ?? '-'], ['Value', value],
  ]);
}

export interface KvGetOptions {
  recurse?: boolean;
  keys?: boolean;
  separator?: string;
  detailed?: boolean;
  base64?: boolean;
}

export async function kvGet(ctx: CliContext, key: string, o: KvGetOptions): Promise<void> {
  if (o.recurse && o.keys) throw usageError('--recurse and --keys cannot be combined');
  if (key === '' && !o.recurse && !o.keys) throw usageError('a key is required (or --recurse / --keys for a prefix)');
  if (o.keys) {
    const a = await ctx.client.get(`/v1/kv/${keyPath(key)}`, { query: { keys: true, separator: o.separator ?? '/' } });
    const keys = listOrEmpty<string>(a);
    if (ctx.json) ctx.outJson(keys);
    else ctx.out(keys.map((k) => `${shown(k)}\n`).join(''));
    return;
  }
  if (o.recurse) {
    const entries = listOrEmpty<KvEntry>(await ctx.client.get(`/v1/kv/${keyPath(key)}`, { query: { recurse: true } }));
    if (ctx.json) ctx.outJson(entries);
    else if (o.detailed) ctx.out(entries.map((e) => detailed(e, o.base64 === true)).join('\n'));
    else ctx.out(entries.map((e) => `${shown(e.Key)}:${o.base64 ? valueBytes(e).toString('base64') : shown(valueBytes(e).toString('utf8'))}\n`).join(''));
    return;
  }
  const a = await ctx.client.get(`/v1/kv/${keyPath(key)}`);
  if (a.status === 404) throw new CliError(a.text.trim() === '' ? `key "${key}" not found` : failureOf(a).message);
  if (a.status !== 200) throw failureOf(a);
  const entry = a.json<KvEntry[]>()[0]!;
  if (ctx.json) ctx.outJson(entry);
  else if (o.detailed) ctx.out(detailed(entry, o.base64 === true));
  else if (o.base64) ctx.out(`${valueBytes(entry).toString('base64')}\n`);
  else ctx.out(Buffer.concat([valueOut(ctx, valueBytes(entry)), Buffer.from('\n')]));
}

/**
 * One key's value as printed: its bytes as stored to a file or a pipe (`kv get k > file` keeps it exact);
 * on a terminal its text with control characters escaped but lines and tabs kept (see shown).
 */
function valueOut(ctx: CliContext, bytes: Buffer): Buffer {
  return ctx.stdout.isTTY === true ? Buffer.from(shown(bytes.toString('utf8'), true)) : bytes;
}

/** A list answer; 404 is an empty list (nothing under the prefix), as `consul kv get -recurse` prints nothing. */
function listOrEmpty<T>(a: Answer): T[] {
  if (a.status === 404) return [];
  if (a.status !== 200) throw failureOf(a);
  return a.json<T[]>();
}

export interface KvPutOptions {
  cas?: string;
  acquire?: boolean;
  release?: boolean;
  session?: string;
  flags?: string;
  base64?: boolean;
}

/** `true`, or a refusal: seed answers 409 with the message, Consul `200 false` (then `fallback` is the message). */
async function outcome(a: Answer, fallback: string): Promise<void> {
  if (a.status === 200 && a.text.trim() === 'true') return;
  if (a.status === 200 && a.text.trim() === 'false') throw new CliError(fallback);
  throw failureOf(a);
}

export async function kvPut(ctx: CliContext, key: string, data: string | undefined, o: KvPutOptions): Promise<void> {
  if (key === '') throw usageError('a key is required');
  const modes = [o.cas !== undefined && '--cas', o.acquire && '--acquire', o.release && '--release'].filter(Boolean);
  if (modes.length > 1) throw usageError(`${modes.join(' and ')} cannot be combined`);
  if ((o.acquire || o.release) && !o.session) throw usageError(`${o.acquire ? '--acquire' : '--release'} needs --session <id>`);
  if (o.session !== undefined && !o.acquire && !o.release) throw usageError('--session is only used with --acquire or --release');
  const cas = o.cas === undefined ? undefined : parseUint64('--cas', o.cas);
  const flags = o.flags === undefined ? undefined : parseUint64('--flags', o.flags);
  const body = await putValue(ctx.stdin, data, o.base64 === true);
  const a = await ctx.client.put(`/v1/kv/${keyPath(key)}`, {
    body, query: { cas, flags, acquire: o.acquire ? o.session : undefined, release: o.release ? o.session : undefined },
  });
  const op = o.acquire ? 'acquire' : o.release ? 'release' : cas !== undefined ? 'cas' : 'set';
  await outcome(a, op === 'acquire' ? 'did not acquire lock' : op === 'release' ? 'did not release lock' : 'did not apply: the check-and-set index did not match');
  if (ctx.json) { ctx.outJson({ ok: true, key, ...(a.index !== undefined ? { index: a.index } : {}) }); return; }
  const done = op === 'acquire' ? 'Lock acquired on' : op === 'release' ? 'Lock released on' : 'Data written to';
  ctx.out(`${ctx.colors.green('Success!')} ${done}: ${shown(key)}\n`);
}

export interface KvDeleteOptions {
  recurse?: boolean;
  cas?: string;
}

export async function kvDelete(ctx: CliContext, key: string, o: KvDeleteOptions): Promise<void> {
  if (o.recurse && o.cas !== undefined) throw usageError('--recurse and --cas cannot be combined');
  if (key === '' && !o.recurse) throw usageError('a key is required (or --recurse for a prefix)');
  const cas = o.cas === undefined ? undefined : parseUint64('--cas', o.cas);
  const a = await ctx.client.del(`/v1/kv/${keyPath(key)}`, { query: { recurse: o.recurse === true, cas } });
  await outcome(a, 'did not apply: the check-and-set index did not match');
  if (ctx.json) { ctx.outJson({ ok: true, key, ...(o.recurse ? { recurse: true } : {}) }); return; }
  ctx.out(`${ctx.colors.green('Success!')} ${o.recurse ? 'Deleted keys with prefix' : 'Deleted key'}: ${shown(key)}\n`);
}
