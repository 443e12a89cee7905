/**
 * The timeline: health transitions and lock hand-offs, derived in the browser from successive stream
 * views (the stream carries states, not transitions). A check whose Status differs from its last view
 * is a transition (with the output it had then); a held lock whose holder changes is a hand-off, one
 * that appears is an acquire and one that disappears a release. The first view of each is the starting
 * point, not a change. Kept for the last `keptMs`, at most `keptMax` entries, in this tab only. A token
 * refused the all-checks view still gets the transitions of the service whose page is open, from that
 * page's own view.
 */
import type { Check, KvEntry } from './model.ts';

export interface Transition {
  /** Milliseconds since the epoch, when this page saw the change. */
  at: number;
  kind: 'health' | 'lock';
  /** `node/checkID` for a check, the key for a lock. */
  subject: string;
  from: string;
  to: string;
  /** The check's output after the change; the new holder's LockIndex for a lock. */
  detail: string;
  node: string;
  service: string;
  /** Sessions involved (a lock's holders before and after). */
  sessions: string[];
}

export const keptMs = 15 * 60_000;
const keptMax = 1000;

const seen: {
  checks?: ReadonlyMap<string, Check>; locks?: ReadonlyMap<string, KvEntry>;
  service?: { name: string; checks: ReadonlyMap<string, Check> }; lock?: { key: string; held: ReadonlyMap<string, KvEntry> };
} = {};
export const transitions: Transition[] = [];

function push(t: Omit<Transition, 'at'>, now: number): void {
  transitions.push({ at: now, ...t });
  while (transitions.length > keptMax || (transitions.length > 0 && transitions[0]!.at < now - keptMs)) transitions.shift();
}

function checkChanges(before: ReadonlyMap<string, Check>, after: ReadonlyMap<string, Check>, now: number): void {
  for (const [key, c] of after) {
    const was = before.get(key);
    if (was !== undefined && was.Status === c.Status) continue;
    push({ kind: 'health', subject: key, from: was?.Status ?? 'registered', to: c.Status, detail: c.Output, node: c.Node, service: c.ServiceName, sessions: [] }, now);
  }
  for (const [key, c] of before) {
    if (!after.has(key)) push({ kind: 'health', subject: key, from: c.Status, to: 'deregistered', detail: '', node: c.Node, service: c.ServiceName, sessions: [] }, now);
  }
}

function lockChanges(before: ReadonlyMap<string, KvEntry>, after: ReadonlyMap<string, KvEntry>, now: number): void {
  const lock = (key: string, from: string, to: string, e: KvEntry, sessions: string[]) =>
    push({ kind: 'lock', subject: key, from, to, detail: `LockIndex ${e.LockIndex}`, node: '', service: '', sessions }, now);
  for (const [key, e] of after) {
    const was = before.get(key);
    if (was === undefined) lock(key, 'free', `held by ${e.Session ?? ''}`, e, [e.Session ?? '']);
    else if (was.Session !== e.Session || was.LockIndex !== e.LockIndex) lock(key, `held by ${was.Session ?? ''}`, `handed to ${e.Session ?? ''}`, e, [was.Session ?? '', e.Session ?? '']);
  }
  for (const [key, e] of before) {
    if (!after.has(key)) lock(key, `held by ${e.Session ?? ''}`, 'released', e, [e.Session ?? '']);
  }
}

/** Compares a new stream view with the last one of its kind and keeps what changed. */
export function record(field: string, items: ReadonlyMap<string, unknown>, now = Date.now()): void {
  if (field === 'checks') {
    const after = items as ReadonlyMap<string, Check>;
    if (seen.checks !== undefined) checkChanges(seen.checks, after, now);
    // The stream client updates its view in place: keep a copy to compare the next one with.
    seen.checks = new Map(after);
  } else if (field === 'locks') {
    const after = items as ReadonlyMap<string, KvEntry>;
    if (seen.locks !== undefined) lockChanges(seen.locks, after, now);
    seen.locks = new Map(after);
  }
}

/**
 * A service page's own view of its checks (instances' and their nodes'). Its changes are kept as the
 * all-checks view's are when that view is not there to give them (`alone`: the stream refused it);
 * otherwise only the point of comparison moves. The first view of a service is its starting point.
 */
export function recordService(name: string, checks: ReadonlyMap<string, Check>, alone: boolean, now = Date.now()): void {
  const before = seen.service?.name === name ? seen.service.checks : undefined;
  if (before !== undefined && alone) checkChanges(before, checks, now);
  seen.service = { name, checks: new Map(checks) };
}

/**
 * A lock page's own view of its key (`kv_prefix` with the key). Its hand-offs are kept as the held-locks
 * view's are when that view is not there to give them (`alone`: the stream refused it). Only the key
 * itself counts (the prefix also matches longer keys), and only while a session holds it.
 */
export function recordLock(key: string, items: ReadonlyMap<string, unknown>, alone: boolean, now = Date.now()): void {
  const e = items.get(key) as KvEntry | undefined;
  const held = new Map<string, KvEntry>(e?.Session === undefined ? [] : [[key, e]]);
  const before = seen.lock?.key === key ? seen.lock.held : undefined;
  if (before !== undefined && alone) lockChanges(before, held, now);
  seen.lock = { key, held };
}
