/**
 * `roster kv export [prefix]` and `roster kv import [data]`, in `consul kv export/import`'s format: a JSON
 * array of `{"key", "flags", "value"}` with the value base64-encoded, tab-indented as Consul writes it, so
 * either tool reads what the other wrote. Flags are uint64 and kept exact. Import checks the whole input
 * before writing anything: a malformed document exits 2 and changes nothing; then each key is written in
 * the document's order (as Consul's import does, one write per key: not one transaction).
 */
import { readFileSync } from 'node:fs';
import { failureOf, keyPath, type Answer } from './client.ts';
import type { CliContext } from './context.ts';
import { CliError, usageError } from './errors.ts';
import type { KvEntry } from './kv.ts';
import { parseExactJson, shown, stringifyExact } from './output.ts';

/** One exported key, field names and order as Consul's. */
export interface ExportedKey {
  key: string;
  flags: bigint | number;
  value: string;
}

const uint64Max = 18446744073709551615n;
/** Strict base64 with padding, as Go's StdEncoding reads it. */
const base64Pattern = /^(?:[A-Za-z0-9+/]{4})*(?:[A-Za-z0-9+/]{2}==|[A-Za-z0-9+/]{3}=)?$/;

export async function kvExport(ctx: CliContext, prefix: string): Promise<void> {
  const a = await ctx.client.get(`/v1/kv/${keyPath(prefix)}`, { query: { recurse: true } });
  const entries = a.status === 404 ? [] : okList(a);
  const exported: ExportedKey[] = entries.map((e) => ({ key: e.Key, flags: e.Flags, value: e.Value ?? '' }));
  ctx.out(`${stringifyExact(exported, '\t')}\n`);
}

function okList(a: Answer): KvEntry[] {
  if (a.status !== 200) throw failureOf(a);
  return a.json<KvEntry[]>();
}

export interface KvImportOptions {
  /** Prepended to every key (joined with `/`). */
  prefix?: string;
}

export async function kvImport(ctx: CliContext, data: string | undefined, o: KvImportOptions): Promise<void> {
  const text = await importText(ctx, data);
  const keys = parseExport(text);
  const prefix = o.prefix === undefined || o.prefix === '' ? '' : `${o.prefix.replace(/\/+$/, '')}/`;
  let done = 0;
  for (const k of keys) {
    const key = prefix + k.key;
    const a = await ctx.client.put(`/v1/kv/${keyPath(key)}`, { body: Buffer.from(k.value, 'base64'), query: { flags: k.flags.toString() } });
    if (a.status !== 200 || a.text.trim() !== 'true') {
      const why = a.status === 200 ? 'the agent did not apply the write' : failureOf(a).message;
      throw new CliError(`imported ${done} of ${keys.length} keys; "${key}" failed: ${why}`);
    }
    done += 1;
    if (!ctx.json) ctx.out(`Imported: ${shown(key)}\n`);
  }
  if (ctx.json) ctx.outJson({ ok: true, imported: done });
}

/** The document: `-` or nothing reads stdin, `@path` or a path a file, text starting with `[` is the document itself. */
async function importText(ctx: CliContext, data: string | undefined): Promise<string> {
  if (data === undefined || data === '-') {
    const chunks: Buffer[] = [];
    for await (const chunk of ctx.stdin) chunks.push(Buffer.from(chunk as Buffer));
    return Buffer.concat(chunks).toString('utf8');
  }
  if (data.trimStart().startsWith('[')) return data;
  const path = data.startsWith('@') ? data.slice(1) : data;
  try {
    return readFileSync(path, 'utf8');
  } catch (err) {
    throw usageError(`cannot read ${path}: ${(err as NodeJS.ErrnoException).code ?? String(err)}`);
  }
}

/** Checks a whole export document; any fault is a usage error naming the entry, before anything is written. */
export function parseExport(text: string): ExportedKey[] {
  let doc: unknown;
  try {
    doc = parseExactJson(text);
  } catch (err) {
    throw usageError(`the data is not JSON: ${err instanceof Error ? err.message : String(err)}`);
  }
  if (!Array.isArray(doc)) throw usageError('the data must be a JSON array of {"key","flags","value"} (as consul kv export writes)');
  return doc.map((item, i) => exportedKey(item, i));
}

function exportedKey(item: unknown, i: number): ExportedKey {
  const at = `entry ${i}`;
  if (item === null || typeof item !== 'object' || Array.isArray(item)) throw usageError(`${at}: not an object`);
  // Field names are matched in any case, as Consul's decoder does ("Key" reads as "key").
  const field = (name: string) => Object.entries(item).find(([k]) => k.toLowerCase() === name)?.[1];
  const key = field('key');
  if (typeof key !== 'string' || key === '') throw usageError(`${at}: "key" must be a non-empty string`);
  const flags = field('flags') ?? 0;
  const exact = typeof flags === 'bigint' ? flags : typeof flags === 'number' && Number.isInteger(flags) ? BigInt(flags) : undefined;
  if (exact === undefined || exact < 0n || exact > uint64Max) throw usageError(`${at} ("${key}"): "flags" must be an unsigned 64-bit integer`);
  const given = field('value') ?? '';
  // Line breaks in the text are skipped, as Go's StdEncoding (Consul's import) skips them.
  const value = typeof given === 'string' ? given.replace(/[\r\n]/g, '') : given;
  if (typeof value !== 'string' || !base64Pattern.test(value)) throw usageError(`${at} ("${key}"): "value" must be base64 text`);
  return { key, flags: exact, value };
}
