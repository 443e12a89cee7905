/**
 * What the session suites share: the session and KV shapes, acquire helpers, node checks to bind sessions to,
 * and the polling that measures a TTL expiry.
 */
import { expect } from 'vitest';
import { client, sleep, type HttpResult } from './agent.ts';

export type Client = ReturnType<typeof client>;

export interface SessionJson {
  ID: string; Name: string; Node: string; LockDelay: number; Behavior: string; TTL: string;
  NodeChecks: string[]; ServiceChecks: unknown; Checks?: string[]; CreateIndex: number; ModifyIndex: number;
}
export interface KvEntry {
  LockIndex: number; Key: string; Flags: number; Value: string | null; Session?: string; CreateIndex: number; ModifyIndex: number;
}

export const sessionFieldOrder = ['ID', 'Name', 'Node', 'LockDelay', 'Behavior', 'TTL', 'NodeChecks', 'ServiceChecks', 'CreateIndex', 'ModifyIndex'];
export const uuidPattern = /^[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}$/;
/** TTL used by the timing tests; the TTL agent runs with `--session-ttl-min 1s`. */
export const ttlMs = 1000;
/** The spec allows expiry later than TTL; the server promises 2×TTL. Allow 1.5 s of slack on top. */
export const expiryBoundMs = 2 * ttlMs + 1500;
export const pollMs = 50;

export let seq = 0;
/** Unique names per test, so concurrent tests on one agent never meet. */
export const uniq = (p: string) => `${p}-${Date.now().toString(36)}-${(seq++).toString(36)}`;
export const b64 = (s: string) => Buffer.from(s).toString('base64');

export async function info(c: Client, id: string): Promise<SessionJson[]> {
  const r = await c.get(`/v1/session/info/${id}`);
  expect(r.status, r.text).toBe(200);
  return r.json<SessionJson[]>();
}

/** The KV entry, or null on 404. */
export async function entry(c: Client, key: string): Promise<KvEntry | null> {
  const r = await c.get(`/v1/kv/${key}`);
  if (r.status === 404) return null;
  expect(r.status, r.text).toBe(200);
  return r.json<KvEntry[]>()[0]!;
}

export async function acquire(c: Client, key: string, id: string, value = 'v', flags?: number): Promise<HttpResult> {
  return c.put(`/v1/kv/${key}?acquire=${id}${flags === undefined ? '' : `&flags=${flags}`}`, value);
}

export async function mustAcquire(c: Client, key: string, id: string, value = 'v', flags?: number): Promise<KvEntry> {
  const r = await acquire(c, key, id, value, flags);
  expect(r.status, r.text).toBe(200);
  expect(r.text).toBe('true');
  const e = await entry(c, key);
  expect(e?.Session).toBe(id);
  return e!;
}

/** Registers a node with node-level checks (catalog register; Status given explicitly). */
export async function registerNode(c: Client, node: string, checks: { CheckID: string; Status: string }[]): Promise<void> {
  const r = await c.put('/v1/catalog/register', {
    Node: node, Address: '10.1.2.3',
    Checks: checks.map((k) => ({ CheckID: k.CheckID, Name: `${k.CheckID} check`, Status: k.Status })),
  });
  expect(r.status, r.text).toBe(200);
}

export async function setCheck(c: Client, node: string, checkId: string, status: string): Promise<void> {
  const r = await c.put('/v1/catalog/register', { Node: node, Address: '10.1.2.3', Check: { CheckID: checkId, Name: `${checkId} check`, Status: status } });
  expect(r.status, r.text).toBe(200);
}


/** Polls `probe` until it returns true or `timeoutMs` passes; returns the elapsed ms from `since` when it did, or null. */
export async function pollUntil(probe: () => Promise<boolean>, since: number, timeoutMs: number): Promise<number | null> {
  while (performance.now() - since <= timeoutMs) {
    if (await probe()) return performance.now() - since;
    await sleep(pollMs);
  }
  return null;
}

/**
 * Watches a TTL session from a reference time (the send time of its create or last renew) and checks the
 * TTL row: it exists at ~0.8×TTL, is never seen gone before TTL, and is gone by `expiryBoundMs`.
 * Returns the elapsed ms at which it was first seen gone.
 */
export async function expectTtlExpiry(c: Client, id: string, sentAt: number): Promise<number> {
  let seenAliveLate = false;
  let goneAt: number | null = null;
  while (performance.now() - sentAt <= expiryBoundMs) {
    const alive = (await info(c, id)).length === 1;
    const elapsed = performance.now() - sentAt; // response time: the server decided no later than this
    if (alive) {
      if (elapsed >= 0.8 * ttlMs) seenAliveLate = true;
    } else {
      goneAt = elapsed;
      break;
    }
    await sleep(pollMs);
  }
  expect(goneAt, `session ${id} still present ${expiryBoundMs} ms after create/renew`).not.toBeNull();
  expect(goneAt!, 'session expired before its TTL').toBeGreaterThanOrEqual(ttlMs);
  expect(seenAliveLate, 'session was never seen alive at ~0.8×TTL').toBe(true);
  return goneAt!;
}
