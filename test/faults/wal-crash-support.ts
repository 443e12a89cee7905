/**
 * Helpers for the crash-safety fault tests of the embedded log (test/faults/wal-crash.test.ts):
 * the seeded PRNG every fault is drawn from, the env knobs (seed, rounds), a reader of the on-disk
 * frames (record.ts's format, read independently of src/wal so the test does not trust the code it
 * checks), and small HTTP probes of a running agent.
 */
import { readdirSync, readFileSync } from 'node:fs';
import { createHash, randomInt } from 'node:crypto';
import { join } from 'node:path';
import { crc32 } from 'node:zlib';
import type { client as clientOf } from '../support/agent.ts';

export type Client = ReturnType<typeof clientOf>;

// ---- seed and knobs -------------------------------------------------------------------------

import { mulberry32 } from '../../src/util/prng.ts';

export { mulberry32 };

/** FNV-1a of a label, to derive independent streams from one seed. */
function hash32(text: string): number {
  let h = 0x811c9dc5;
  for (let k = 0; k < text.length; k++) h = Math.imul(h ^ text.charCodeAt(k), 0x01000193);
  return h >>> 0;
}

export class Rng {
  private readonly next: () => number;

  constructor(readonly seed: number) {
    this.next = mulberry32(seed);
  }

  /** A float in [0, 1). */
  float(): number {
    return this.next();
  }

  /** An integer in [lo, hi] (both included). */
  int(lo: number, hi: number): number {
    return lo + Math.floor(this.next() * (hi - lo + 1));
  }

  pick<T>(items: readonly T[]): T {
    return items[this.int(0, items.length - 1)]!;
  }

  /**
   * An independent stream for `label`: each test, round and writer draws from its own, so adding a
   * draw in one place does not shift every later fault of the run.
   */
  child(label: string): Rng {
    return new Rng((this.seed ^ hash32(label)) >>> 0);
  }
}

/** ROSTER_FAULT_SEED (decimal or 0x hex) replays a run; without it a fresh seed is drawn and printed. */
export function faultSeed(): number {
  const raw = process.env.ROSTER_FAULT_SEED;
  if (raw === undefined || raw === '') return randomInt(0, 2 ** 32);
  const seed = Number(raw);
  if (!Number.isSafeInteger(seed) || seed < 0 || seed >= 2 ** 32) {
    throw new Error(`ROSTER_FAULT_SEED must be an integer in 0..2^32-1, got "${raw}"`);
  }
  return seed;
}

/** Rounds per fault test: ROSTER_FAULT_ROUNDS (a long soak sets it high), `ciDefault` otherwise. */
export function faultRounds(ciDefault = 8): number {
  const raw = process.env.ROSTER_FAULT_ROUNDS;
  if (raw === undefined || raw === '') return ciDefault;
  const n = Number(raw);
  if (!Number.isSafeInteger(n) || n < 1 || n > 100_000) throw new Error(`ROSTER_FAULT_ROUNDS must be a positive integer, got "${raw}"`);
  return n;
}

/** One line in the CI log per fact worth keeping (counts, seeds). */
export function report(test: string, facts: Record<string, unknown>): void {
  const text = Object.entries(facts).map(([k, v]) => `${k}=${typeof v === 'object' ? JSON.stringify(v) : String(v)}`).join(' ');
  console.log(`[wal-crash] ${test}: ${text}`);
}

// ---- on-disk frames (record.ts) -------------------------------------------------------------

export interface DiskEntry {
  i: number;
  t: number;
  p: string;
  c: { t: string; key?: string; value?: string | null; [k: string]: unknown };
}

export interface DiskFrame {
  /** Offset of the frame header in its file. */
  start: number;
  /** Offset just past the payload. */
  end: number;
  entries: DiskEntry[];
}

/**
 * The whole, crc-checked commit frames at the start of a segment, up to the first that is not one
 * (the preallocated zeros, or damage). Independent of src/wal on purpose.
 */
export function readFrames(path: string): DiskFrame[] {
  const buf = readFileSync(path);
  const frames: DiskFrame[] = [];
  for (let at = 0; at + 8 <= buf.length;) {
    const len = buf.readUInt32LE(at);
    if (len === 0 || at + 8 + len > buf.length) break;
    const payload = buf.subarray(at + 8, at + 8 + len);
    if (crc32(payload) !== buf.readUInt32LE(at + 4)) break;
    frames.push({ start: at, end: at + 8 + len, entries: JSON.parse(payload.toString('utf8')) as DiskEntry[] });
    at += 8 + len;
  }
  return frames;
}

/** One frame as record.ts lays it out: `[u32 LE length][u32 LE crc32(payload)][payload]`. */
export function encodeFrame(payload: string | Buffer): Buffer {
  const body = typeof payload === 'string' ? Buffer.from(payload, 'utf8') : payload;
  const head = Buffer.alloc(8);
  head.writeUInt32LE(body.length, 0);
  head.writeUInt32LE(crc32(body), 4);
  return Buffer.concat([head, body]);
}

/** Whether a snapshot file is exactly one whole frame with a matching crc. */
export function snapshotIsWhole(path: string): boolean {
  const buf = readFileSync(path);
  if (buf.length < 8 || buf.readUInt32LE(0) !== buf.length - 8) return false;
  return crc32(buf.subarray(8)) === buf.readUInt32LE(4);
}

export function segmentPaths(dataDir: string): string[] {
  return readdirSync(join(dataDir, 'wal')).filter((n) => n.endsWith('.seg')).sort().map((n) => join(dataDir, 'wal', n));
}

export function snapNames(dataDir: string): string[] {
  try {
    return readdirSync(join(dataDir, 'snap')).sort();
  } catch {
    return [];
  }
}

/** XORs `count` distinct bytes of [from, to) with a non-zero mask each; returns the offsets. */
export function flipBytes(buf: Buffer, from: number, to: number, count: number, rng: Rng): number[] {
  const offsets = new Set<number>();
  while (offsets.size < Math.min(count, to - from)) offsets.add(rng.int(from, to - 1));
  for (const at of offsets) buf[at]! ^= rng.int(1, 255);
  return [...offsets].sort((a, b) => a - b);
}

// ---- the agent's log lines ------------------------------------------------------------------

export interface LogLine {
  msg?: string;
  [k: string]: unknown;
}

/** The agent's pino lines (JSON), other lines skipped. */
export function logLines(output: string): LogLine[] {
  const out: LogLine[] = [];
  for (const line of output.split('\n')) {
    if (!line.startsWith('{')) continue;
    try {
      out.push(JSON.parse(line) as LogLine);
    } catch {
      // a line cut by SIGKILL
    }
  }
  return out;
}

/** The exit code in startAgent's "agent exited (N) before ready" rejection, or undefined. */
export function exitCodeOf(err: unknown): number | undefined {
  const m = /agent exited \((-?\d+|null)\) before ready/.exec(err instanceof Error ? err.message : String(err));
  return m === null || m[1] === 'null' ? undefined : Number(m[1]);
}

// ---- HTTP probes ----------------------------------------------------------------------------

export interface StoredKv {
  value: string;
  session: string | undefined;
  modifyIndex: number;
}

/** Every KV entry under `prefix` (values decoded as UTF-8), and the X-Consul-Index of the read. */
export async function readKv(c: Client, prefix: string): Promise<{ entries: Map<string, StoredKv>; index: number }> {
  const r = await c.get(`/v1/kv/${prefix}?recurse`);
  const index = Number(r.headers.get('x-consul-index') ?? NaN);
  if (r.status === 404) return { entries: new Map(), index };
  if (r.status !== 200) throw new Error(`GET /v1/kv/${prefix}?recurse: ${r.status} ${r.text}`);
  const rows = r.json<{ Key: string; Value: string | null; Session?: string; ModifyIndex: number }[]>();
  const entries = new Map(rows.map((e) => [e.Key, {
    value: e.Value === null ? '' : Buffer.from(e.Value, 'base64').toString('utf8'),
    session: e.Session,
    modifyIndex: e.ModifyIndex,
  }]));
  return { entries, index };
}

/** The index of the last entry the agent applied (Consul's Stats.raft.applied_index). */
export async function appliedIndex(c: Client): Promise<number> {
  const r = await c.get('/v1/agent/self');
  if (r.status !== 200) throw new Error(`GET /v1/agent/self: ${r.status} ${r.text}`);
  return Number(r.json<{ Stats: { raft: { applied_index: string } } }>().Stats.raft.applied_index);
}

/** Sessions the agent lists: name → ids. */
export async function sessionsByName(c: Client): Promise<Map<string, string[]>> {
  const r = await c.get('/v1/session/list');
  if (r.status !== 200) throw new Error(`GET /v1/session/list: ${r.status} ${r.text}`);
  const out = new Map<string, string[]>();
  for (const s of r.json<{ ID: string; Name: string }[]>()) out.set(s.Name, [...(out.get(s.Name) ?? []), s.ID]);
  return out;
}

// ---- the write load and what it may leave behind --------------------------------------------

/**
 * How a value is remembered: short ones as they are, long ones (the snapshot test's 24 KiB values)
 * by length and digest, so the ledger stays small over a long soak.
 */
export function fingerprint(value: string): string {
  return value.length <= 256 ? value : `${value.length}:${createHash('sha1').update(value).digest('hex')}`;
}

/** A write to a key no other write touches: after a crash it is there whole, or (if unacknowledged) absent. */
interface UniqueWrite {
  value: string;
  acked: boolean;
  /** What the last restart showed: once settled, every later restart must show the same. */
  present?: boolean;
}

/** One attempt of a sequential client on its own key: the value it wrote and who holds the key after it. */
interface Attempt {
  value: string;
  holder: string | undefined;
}

/**
 * A key written only by one sequential client, attempt after attempt. After a crash it must hold the
 * value of an attempt at or after the last acknowledged one (at most the one in flight at the kill),
 * and never go back before what an earlier restart showed.
 */
interface SeqKey {
  attempts: Attempt[];
  /** Highest acknowledged attempt, -1 for none. */
  acked: number;
  /** Attempt the last restart showed, -1 for absent. */
  settled: number;
  /** Attempts made before the last restart: their outcome is judged. */
  judged: number;
}

interface SessionCreate {
  acked: boolean;
  id?: string;
  present?: boolean;
}

export interface Verified {
  violations: string[];
  /** Acknowledged writes found intact (unique KV, sequential keys, sessions). */
  verified: number;
  /** Writes in flight at a kill that this restart shows applied, and not applied. */
  inflightApplied: number;
  inflightAbsent: number;
}

/** Everything clients did, acknowledged or not, and what each restart must show for it. */
export class Ledger {
  private readonly unique = new Map<string, UniqueWrite>();
  private readonly seq = new Map<string, SeqKey>();
  private readonly sessions = new Map<string, SessionCreate>();
  /** Responses that were neither an acknowledgement nor a dead connection. */
  readonly anomalies: string[] = [];
  /** Highest index a client saw (applied index, X-Consul-Index of reads) before the last kill. */
  indexSeen = 0;
  /** Highest X-Consul-Index a restart showed for the whole prefix (nothing in it is ever deleted). */
  prefixIndexSeen = 0;
  acked = 0;
  attempted = 0;

  constructor(readonly prefix: string) {}

  sawIndex(index: number): void {
    if (Number.isFinite(index) && index > this.indexSeen) this.indexSeen = index;
  }

  /** PUTs a value to a key nothing else writes. Throws when the connection dies (the write is in flight). */
  async putUnique(c: Client, key: string, value: string): Promise<void> {
    const w: UniqueWrite = { value: fingerprint(value), acked: false };
    this.unique.set(key, w);
    this.attempted += 1;
    const r = await c.put(`/v1/kv/${key}`, value);
    if (r.status === 200 && r.text === 'true') this.ack(w);
    else this.anomalies.push(`PUT ${key}: ${r.status} ${r.text.slice(0, 200)}`);
  }

  /** One attempt on a sequential key: `path` is the PUT path (with ?cas= / ?acquire= / ?release=). */
  async putSeq(c: Client, key: string, path: string, value: string, holder: string | undefined): Promise<boolean> {
    const s = this.seqKey(key);
    s.attempts.push({ value: fingerprint(value), holder });
    this.attempted += 1;
    const r = await c.put(path, value);
    if (r.status === 200 && r.text === 'true') {
      s.acked = s.attempts.length - 1;
      this.acked += 1;
      return true;
    }
    this.anomalies.push(`PUT ${path}: ${r.status} ${r.text.slice(0, 200)}`);
    return false;
  }

  /** Creates a session named `name` (unique); returns its id once acknowledged. */
  async createSession(c: Client, name: string): Promise<string | undefined> {
    const s: SessionCreate = { acked: false };
    this.sessions.set(name, s);
    this.attempted += 1;
    const r = await c.put('/v1/session/create', { Name: name });
    if (r.status !== 200) {
      this.anomalies.push(`session create ${name}: ${r.status} ${r.text.slice(0, 200)}`);
      return undefined;
    }
    s.id = r.json<{ ID: string }>().ID;
    this.ack(s);
    return s.id;
  }

  /** The latest acknowledged write to a sequential key is known (a CAS needs its ModifyIndex). */
  lastAckedValue(key: string): string | undefined {
    const s = this.seq.get(key);
    return s === undefined || s.acked < 0 ? undefined : s.attempts[s.acked]!.value;
  }

  /** Checks what a restarted agent serves against everything ever attempted; settles in-flight outcomes. */
  async verify(c: Client): Promise<Verified> {
    const out: Verified = { violations: [], verified: 0, inflightApplied: 0, inflightAbsent: 0 };
    const applied = await appliedIndex(c);
    if (applied < this.indexSeen) out.violations.push(`applied index went back: ${applied} after a restart, clients saw ${this.indexSeen}`);
    const { entries, index } = await readKv(c, this.prefix);
    if (entries.size > 0 && index < this.prefixIndexSeen) {
      out.violations.push(`X-Consul-Index of ${this.prefix} went back: ${index}, an earlier restart showed ${this.prefixIndexSeen}`);
    }
    this.prefixIndexSeen = Math.max(this.prefixIndexSeen, index);
    this.verifyUnique(entries, out);
    this.verifySeq(entries, out);
    for (const key of entries.keys()) {
      if (!this.unique.has(key) && !this.seq.has(key)) out.violations.push(`${key}: present, but no client ever wrote it`);
    }
    this.verifySessions(await sessionsByName(c), out);
    this.indexSeen = Math.max(this.indexSeen, applied);
    return out;
  }

  private ack(w: { acked: boolean }): void {
    w.acked = true;
    this.acked += 1;
  }

  private seqKey(key: string): SeqKey {
    let s = this.seq.get(key);
    if (s === undefined) {
      s = { attempts: [], acked: -1, settled: -1, judged: 0 };
      this.seq.set(key, s);
    }
    return s;
  }

  private verifyUnique(stored: Map<string, StoredKv>, out: Verified): void {
    for (const [key, w] of this.unique) {
      const got = stored.get(key);
      const present = got !== undefined;
      if (present && fingerprint(got.value) !== w.value) {
        out.violations.push(`${key}: holds ${JSON.stringify(got.value.slice(0, 80))}, not the value written`);
      }
      if (!present && (w.acked || w.present === true)) {
        out.violations.push(`${key}: ${w.acked ? 'acknowledged' : 'shown by an earlier restart'}, now missing`);
      }
      if (present && w.present === false) out.violations.push(`${key}: absent after an earlier restart, now present`);
      if (w.acked) out.verified += present ? 1 : 0;
      else if (w.present === undefined) present ? out.inflightApplied++ : out.inflightAbsent++;
      w.present = present;
    }
  }

  private verifySeq(stored: Map<string, StoredKv>, out: Verified): void {
    for (const [key, s] of this.seq) {
      const got = stored.get(key);
      const k = got === undefined ? -1 : s.attempts.findIndex((a) => a.value === fingerprint(got.value));
      const floor = Math.max(s.acked, s.settled);
      if (got !== undefined && k < 0) out.violations.push(`${key}: holds ${JSON.stringify(got.value.slice(0, 80))}, which no attempt wrote`);
      else if (k < floor) out.violations.push(`${key}: shows attempt ${k}, but attempt ${floor} was ${s.acked >= s.settled ? 'acknowledged' : 'shown before'}`);
      else if (k >= 0 && got!.session !== s.attempts[k]!.holder) {
        out.violations.push(`${key}: attempt ${k} left holder ${s.attempts[k]!.holder}, the agent shows ${got!.session}`);
      } else {
        if (s.acked >= 0) out.verified += 1;
      }
      // An attempt past the acknowledged one, not judged yet, was in flight at the kill (one per key at most).
      const last = s.attempts.length - 1;
      if (last > s.acked && last >= s.judged) k === last ? out.inflightApplied++ : out.inflightAbsent++;
      s.settled = Math.max(k, s.settled);
      s.judged = s.attempts.length;
    }
  }

  private verifySessions(listed: Map<string, string[]>, out: Verified): void {
    for (const [name, s] of this.sessions) {
      const ids = listed.get(name) ?? [];
      if (ids.length > 1) out.violations.push(`session ${name}: created once, listed ${ids.length} times`);
      const present = ids.length > 0;
      if (!present && (s.acked || s.present === true)) out.violations.push(`session ${name} (${s.id ?? 'unacknowledged'}): missing`);
      if (present && s.acked && ids[0] !== s.id) out.violations.push(`session ${name}: id ${ids[0]}, acknowledged as ${s.id}`);
      if (present && s.present === false) out.violations.push(`session ${name}: absent after an earlier restart, now listed`);
      if (s.acked) out.verified += present ? 1 : 0;
      else if (s.present === undefined) present ? out.inflightApplied++ : out.inflightAbsent++;
      s.present = present;
      if (present) s.id = ids[0];
    }
    for (const name of listed.keys()) {
      if (name.startsWith(this.prefix.replace(/\/$/, '')) && !this.sessions.has(name)) out.violations.push(`session ${name}: listed, never created`);
    }
  }
}
