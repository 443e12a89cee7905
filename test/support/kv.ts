/**
 * What the KV suites share: the entry shape and its field orders, unique keys, and read/write assertions.
 */
import { expect } from 'vitest';
import { client, type HttpResult } from './agent.ts';

export type Client = ReturnType<typeof client>;

export interface Entry {
  LockIndex: number;
  Key: string;
  Flags: number;
  Value: string | null;
  Session?: string;
  CreateIndex: number;
  ModifyIndex: number;
}

export const entryKeys = ['LockIndex', 'Key', 'Flags', 'Value', 'CreateIndex', 'ModifyIndex'];
export const lockedEntryKeys = ['LockIndex', 'Key', 'Flags', 'Value', 'Session', 'CreateIndex', 'ModifyIndex'];

let seq = 0;
/** A key no other test uses. */
export const uniq = (name: string) => `kvt/${name}-${++seq}`;

export async function read(c: Client, key: string): Promise<Entry> {
  const r = await c.get(`/v1/kv/${key}`);
  expect(r.status, r.text).toBe(200);
  const list = r.json<Entry[]>();
  expect(list).toHaveLength(1);
  return list[0]!;
}

export async function ok(p: Promise<HttpResult>): Promise<HttpResult> {
  const r = await p;
  expect(r.status, r.text).toBe(200);
  expect(r.text).toBe('true');
  return r;
}

export const b64 = (s: string | Buffer) => Buffer.from(s).toString('base64');
