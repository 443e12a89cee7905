/**
 * The KV browser's pure parts: a folder's listing from the entries under its prefix (folders by `/`, as
 * Consul's UI shows them), and a value's three views (text, JSON, base64) with the way back from each
 * to bytes. Values travel as base64, as the HTTP API and the stream carry them.
 */

export interface KvItem {
  Key: string;
  /** Base64, or null for an entry written without a value. */
  Value: string | null;
  Flags: number | string;
  Session?: string;
  LockIndex: number;
  CreateIndex: number;
  ModifyIndex: number;
}

export interface FolderRow {
  /** The name below the folder: `db` for a folder (`app/db/`), `config` for a key (`app/config`). */
  name: string;
  /** The full key, or the full folder prefix ending in `/`. */
  path: string;
  folder: boolean;
  /** Keys under a folder row; 1 for a key. */
  keys: number;
  entry: KvItem | undefined;
  /** Locks held under a folder, or on the key. */
  locks: number;
}

/** The direct children of `prefix`: sub-folders first, then keys, each by name. An entry named exactly `prefix` is the folder's own. */
export function folderRows(entries: Iterable<KvItem>, prefix: string): FolderRow[] {
  const rows = new Map<string, FolderRow>();
  for (const e of entries) {
    if (!e.Key.startsWith(prefix) || e.Key === prefix) continue;
    const rest = e.Key.slice(prefix.length);
    const cut = rest.indexOf('/');
    const folder = cut >= 0;
    const name = folder ? rest.slice(0, cut) : rest;
    const path = folder ? `${prefix}${name}/` : e.Key;
    let row = rows.get(path);
    if (row === undefined) {
      row = { name, path, folder, keys: 0, entry: undefined, locks: 0 };
      rows.set(path, row);
    }
    row.keys += 1;
    if (e.Session !== undefined) row.locks += 1;
    if (!folder) row.entry = e;
  }
  return [...rows.values()].sort((a, b) => Number(b.folder) - Number(a.folder) || (a.name < b.name ? -1 : a.name > b.name ? 1 : 0));
}

/** The folders above a key or folder, root first: [['(root)', ''], ['app', 'app/'], ...]. */
export function crumbs(path: string): [string, string][] {
  const parts = path.split('/');
  parts.pop();
  const out: [string, string][] = [['(root)', '']];
  let at = '';
  for (const p of parts) {
    at += `${p}/`;
    out.push([p, at]);
  }
  return out;
}

export type ValueMode = 'text' | 'json' | 'base64';

/** The number of bytes a base64 text holds. */
export function byteSize(b64: string | null): number {
  if (b64 === null || b64 === '') return 0;
  const pad = b64.endsWith('==') ? 2 : b64.endsWith('=') ? 1 : 0;
  return (b64.length / 4) * 3 - pad;
}

export function base64ToBytes(b64: string): Uint8Array<ArrayBuffer> {
  const bin = atob(b64);
  const out = new Uint8Array(bin.length);
  for (let i = 0; i < bin.length; i += 1) out[i] = bin.charCodeAt(i);
  return out;
}

export function bytesToBase64(bytes: Uint8Array): string {
  let bin = '';
  for (const b of bytes) bin += String.fromCharCode(b);
  return btoa(bin);
}

/** The value's UTF-8 text, or undefined when its bytes are not UTF-8. */
export function utf8(bytes: Uint8Array): string | undefined {
  try {
    return new TextDecoder('utf-8', { fatal: true }).decode(bytes);
  } catch {
    return undefined;
  }
}

/**
 * The value shown in `mode`: `text` (undefined when not UTF-8), `json` (pretty-printed; undefined
 * when not JSON), `base64` (always).
 */
export function showValue(b64: string | null, mode: ValueMode): string | undefined {
  const bytes = base64ToBytes(b64 ?? '');
  if (mode === 'base64') return b64 ?? '';
  const text = utf8(bytes);
  if (mode === 'text' || text === undefined) return text;
  try {
    return JSON.stringify(JSON.parse(text), null, 2);
  } catch {
    return undefined;
  }
}

/** The mode a value opens in: JSON when it parses as an object or array, text when UTF-8, base64 else. */
export function naturalMode(b64: string | null): ValueMode {
  const text = utf8(base64ToBytes(b64 ?? ''));
  if (text === undefined) return 'base64';
  const t = text.trim();
  if ((t.startsWith('{') || t.startsWith('[')) && showValue(b64, 'json') !== undefined) return 'json';
  return 'text';
}

/** The bytes to store for what was typed in `mode`; an Error says why the input is not valid. */
export function parseValue(input: string, mode: ValueMode): Uint8Array<ArrayBuffer> | Error {
  if (mode === 'text') return new TextEncoder().encode(input);
  if (mode === 'json') {
    try {
      JSON.parse(input);
    } catch (err) {
      return new Error(`Not valid JSON: ${err instanceof Error ? err.message : String(err)}`);
    }
    return new TextEncoder().encode(input);
  }
  const compact = input.replace(/\s+/g, '');
  if (!/^[A-Za-z0-9+/]*={0,2}$/.test(compact) || compact.length % 4 === 1) return new Error('Not valid base64.');
  try {
    return base64ToBytes(compact);
  } catch {
    return new Error('Not valid base64.');
  }
}

const uint64Max = 18446744073709551615n;

/** Flags as the API takes them: decimal digits of a uint64. */
export function parseFlags(input: string): string | Error {
  const t = input.trim();
  if (t === '') return '0';
  if (!/^\d+$/.test(t) || BigInt(t) > uint64Max) return new Error(`Flags must be a whole number from 0 to ${uint64Max}.`);
  return BigInt(t).toString();
}

/** A key's exact Flags from the HTTP answer's text (JSON.parse would round a uint64 past 2^53). */
export function exactFlags(body: string): string | undefined {
  return /"Flags":(\d+)/.exec(body)?.[1];
}
