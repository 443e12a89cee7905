/**
 * Proposal encoding and the commit payload format (its on-disk framing is in src/wal/record.ts): a
 * proposal is serialised at append time, a batch is stamped with consecutive indexes and one entry
 * time, and a payload parses back into the entries it holds. A cmd that does not survive JSON fails
 * in every log alike; an append too large for one commit is refused by all.
 */
import type { Command } from '../domain/commands.ts';
import type { Clock } from '../ports/clock.ts';
import type { LogEntry, Proposal } from '../ports/log.ts';
import { entryTooLargeError } from '../ports/log-errors.ts';
import { entryFormatVersion, formatVersionOf } from './format-version.ts';
import { commitBytesMax, entryBytesMax } from './limits.ts';

/** A proposal serialised at append time, so a bad one fails its own append, not the whole batch. */
export interface EncodedProposal {
  pid: string;
  /** The command as proposed: what a local consumer applies when it reads back the same (liveCommand). */
  cmd: Command;
  pidJson: string;
  cmdJson: string;
  /** Upper bound of the bytes this entry takes in a commit payload, separator included (bounds a batch). */
  bytes: number;
}

/**
 * Bytes an entry adds around pid and cmd in a commit payload: braces, keys and punctuation (25), the
 * index (at most 16 digits), atMs (at most 24 characters), the format version (at most 4 digits) and
 * the comma before the next entry.
 */
const envelopeBytesMax = 70;

export function encodeProposal(p: Proposal, payloadBytesMax: number): EncodedProposal {
  if (typeof p.pid !== 'string') throw new TypeError('proposal pid must be a string');
  if (p.cmd === null || typeof p.cmd !== 'object') throw new TypeError(`proposal ${p.pid}: cmd must be an object`);
  const pidJson = JSON.stringify(p.pid);
  const cmdJson = JSON.stringify(p.cmd) as string | undefined;
  // A toJSON may turn the object into something else: the log holds only commands that read back as objects.
  if (cmdJson?.charCodeAt(0) !== 123) throw new TypeError(`proposal ${p.pid}: cmd must serialise to a JSON object`);
  const bytes = Buffer.byteLength(pidJson) + Buffer.byteLength(cmdJson) + envelopeBytesMax;
  if (bytes > payloadBytesMax) {
    throw entryTooLargeError(p.pid, bytes, payloadBytesMax);
  }
  return { pid: p.pid, cmd: p.cmd, pidJson, cmdJson, bytes };
}

/** Encodes one append's proposals; throws if one is invalid or all together cannot fit one commit frame. */
export function encodeAppend(proposals: readonly Proposal[]): { items: EncodedProposal[]; bytes: number } {
  const items = proposals.map((p) => encodeProposal(p, entryBytesMax));
  const bytes = items.reduce((sum, p) => sum + p.bytes, 0);
  if (bytes > commitBytesMax) {
    throw new RangeError(`an append of ${items.length} proposals needs ${bytes} bytes, above the `
      + `${commitBytesMax}-byte commit limit (one append is one commit); split it`);
  }
  return { items, bytes };
}

/** The entry time: the clock, but never before the previous entry (the port's promise). */
export function stampMs(lastAtMs: number, nowMs: number): number {
  if (!Number.isFinite(nowMs)) throw new Error(`clock returned ${nowMs}, not a time`);
  return Math.max(lastAtMs, nowMs);
}

/**
 * The time a log stamps on its commits: never before the previous entry, following the wall clock, but
 * never jumping with it. Apply measures lock delays and how long a check has been critical in entry time.
 * Stamped straight from the wall clock, a clock set back by some amount would hold entry time still until
 * it caught up with the last entry (a 15 s lock delay would last that amount too, restarts included: the
 * time comes back from the log), and one set forward would end every lock delay at once. So between two
 * commits of one process entry time advances by the interval clock's time, slewed towards the wall
 * clock: at half that rate while the wall clock is behind, at one and a half times while it is ahead,
 * until the two meet (after twice the step); meanwhile a lock delay lasts from two thirds to twice its
 * length. Within a second of entry time the wall clock is followed as it is, and a process's first commit
 * takes it as it is (the time the process was down went by). A clock without an interval reading gives
 * `stampMs` alone.
 */
/** How far the wall clock may be from entry time and still be followed as it is (its millisecond steps, NTP's small ones). */
export const entryClockSlewFromMs = 1000;

export class EntryClock {
  /** The entry time this process last stamped or last saw in the log, and the interval clock's reading then. */
  private last: { exactMs: number; monotonicMs: number } | undefined;

  constructor(private readonly clock: Pick<Clock, 'nowMs' | 'monotonicMs'>) {}

  /** The time of a commit after one stamped `lastAtMs` (this log's or, in a cluster, another node's). */
  stamp(lastAtMs: number): number {
    const wall = this.clock.nowMs();
    const stamped = stampMs(lastAtMs, wall);
    const mono = this.clock.monotonicMs?.();
    if (mono === undefined) return stamped;
    let exactMs = stamped;
    if (this.last !== undefined) {
      // An entry later than this process's own reckoning (another node's, in a cluster) is taken as the
      // time now: when it was read is not known, and counting the interval since this process's own last
      // commit on top of it would move the log's time on by however long this process stayed idle.
      if (lastAtMs > this.last.exactMs + (mono - this.last.monotonicMs)) this.last = { exactMs: lastAtMs, monotonicMs: mono };
      const base = this.last.exactMs;
      const elapsed = Math.max(0, mono - this.last.monotonicMs);
      const carried = base + elapsed;
      if (carried - wall > entryClockSlewFromMs) exactMs = Math.max(wall, base + elapsed / 2);
      else if (wall - carried > entryClockSlewFromMs) exactMs = Math.min(wall, base + elapsed * 1.5);
    }
    this.last = { exactMs, monotonicMs: mono };
    return Math.max(lastAtMs, Math.floor(exactMs));
  }
}

/**
 * One entry inside a commit payload: `{"i":index,"t":atMs,"p":pid,"c":cmd,"v":format}`. The version
 * comes last, so an entry still begins with `{"i":` and a reader that predates it ignores it.
 */
export function entryPayload(index: number, atMs: number, p: EncodedProposal): string {
  return `{"i":${index},"t":${atMs},"p":${p.pidJson},"c":${p.cmdJson},"v":${entryFormatVersion(p.cmd)}}`;
}

/**
 * Gives a batch consecutive indexes after `last` and one entry time, as one commit payload (the
 * JSON array of record.ts) plus its entries for live delivery. A consumer sees exactly what a replay
 * from disk would: each entry carries its command as proposed when that reads back from its JSON
 * unchanged (liveCommand), else the command parsed back from that JSON.
 */
export function stampBatch(
  batch: readonly { items: readonly EncodedProposal[] }[],
  last: number,
  atMs: number,
): { payload: string; entries: LogEntry[] } {
  let index = last;
  let payload = '[';
  const entries: LogEntry[] = [];
  for (const p of batch) {
    for (const item of p.items) {
      index += 1;
      payload += index === last + 1 ? entryPayload(index, atMs, item) : `,${entryPayload(index, atMs, item)}`;
      entries.push({ index, atMs, pid: item.pid, cmd: liveCommand(item) });
    }
  }
  return { payload: `${payload}]`, entries };
}

/**
 * The command a local consumer applies for `item`: the proposer's own object when JSON gives back the
 * same value (plain objects and arrays of strings, booleans, null and finite numbers: checked without
 * allocating, cheaper than a parse), else its JSON parsed back (a field holding undefined, -0, a class
 * instance ...). Proposed commands are not changed afterwards: apply may keep parts of them.
 */
export function liveCommand(item: EncodedProposal): Command {
  return isJsonStable(item.cmd, 0) ? item.cmd : JSON.parse(item.cmdJson) as Command;
}

/** Deepest nesting checked in place; a deeper command is parsed back instead. */
const stableDepthMax = 16;

/** Whether JSON.parse(JSON.stringify(v)) is a value equal to `v`, same keys in the same order. */
function isJsonStable(v: unknown, depth: number): boolean {
  switch (typeof v) {
    case 'string': case 'boolean': return true;
    case 'number': return Number.isFinite(v) && !Object.is(v, -0);
    case 'object': break;
    default: return false;
  }
  if (v === null) return true;
  if (depth >= stableDepthMax) return false;
  if (Array.isArray(v)) {
    for (let k = 0; k < v.length; k++) if (!isJsonStable(v[k], depth + 1)) return false;
    return Object.getPrototypeOf(v) === Array.prototype;
  }
  if (Object.getPrototypeOf(v) !== Object.prototype) return false;
  for (const key in v) {
    if (!Object.hasOwn(v, key) || !isJsonStable((v as Record<string, unknown>)[key], depth + 1)) return false;
  }
  return true;
}

/**
 * Parses a commit payload whose first entry must be `first`, or returns why it is not one; throws
 * FormatVersionError for an entry of a newer format than this code reads.
 */
export function parseCommit(payload: string, first: number): LogEntry[] | string {
  let v: unknown;
  try {
    v = JSON.parse(payload);
  } catch {
    return 'bad JSON';
  }
  if (!Array.isArray(v)) return 'payload is not an array of entries';
  if (v.length === 0) return 'commit without entries';
  const entries: LogEntry[] = [];
  for (const [k, item] of v.entries()) {
    const entry = toEntry(item);
    if (typeof entry === 'string') return `entry ${k} of the commit: ${entry}`;
    if (entry.index !== first + k) return `index ${entry.index}, expected ${first + k}`;
    entries.push(entry);
  }
  return entries;
}

/** Checks one parsed entry, or returns why it is not one. */
function toEntry(v: unknown): LogEntry | string {
  if (!isObject(v)) return 'not an object';
  const { i, t, p, c } = v;
  const version = formatVersionOf(`log entry ${typeof i === 'number' ? i : '?'}`, v.v);
  if (typeof version === 'string') return version;
  if (typeof i !== 'number' || !Number.isSafeInteger(i) || i < 1) return 'bad index';
  if (typeof t !== 'number' || !Number.isFinite(t)) return 'bad atMs';
  if (typeof p !== 'string') return 'bad pid';
  if (!isObject(c)) return 'bad cmd';
  // The log does not judge commands: an unknown tag is the applier's to refuse (wire format rule).
  return { index: i, atMs: t, pid: p, cmd: c as unknown as Command };
}

/** A JSON object (not an array, not null). */
export function isObject(v: unknown): v is Record<string, unknown> {
  return typeof v === 'object' && v !== null && !Array.isArray(v);
}
