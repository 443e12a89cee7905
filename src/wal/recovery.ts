/**
 * Recovery at open(): first read everything and decide (plan), touching nothing; only a log it has
 * decided to open is then changed on disk (apply): a torn last commit cut, an empty last segment left
 * by a roll a crash interrupted dropped, or the log restarted after a snapshot that holds a damaged last commit, or that holds every
 * entry of a log closed cleanly (clean-close.ts) whose segments are damaged or missing. A log whose end
 * was cut while the agent was stopped (cut-evidence.ts) is damage too. A refusal leaves the data dir byte
 * for byte as it was, and its message says what the operator can do.
 */
import { statSync } from 'node:fs';
import { open, unlink } from 'node:fs/promises';
import { dirname, join } from 'node:path';
import type { Logger } from '../ports/logger.ts';
import { damagedError, isLogDamaged } from '../ports/log-errors.ts';
import { kind, segmentName, syncDir, type SegmentRef } from './files.ts';
import { judgeEnd } from './cut-evidence.ts';
import { zeroFill } from './preallocation.ts';
import { highestIntactIndex, scanSegment, type NamedAttachment, type Scan, type Tail } from './scan.ts';

/** What scanning the segments at open() established. */
export interface Recovered {
  segments: SegmentRef[];
  last: number;
  lastAtMs: number;
  activeBytes: number;
  /**
   * Bytes of the commits holding entries past the snapshot recovery started from: what a start replays, and
   * what counts toward the next snapshot as much as bytes written after the start do.
   */
  bytesPastSnapshot: number;
}

/** What recovery will change on disk once it has decided to open, in this order. */
export interface Plan {
  recovered: Recovered;
  /** A torn last commit (never acknowledged) to cut: bytes [goodBytes, end) zeroed, the zeros after them kept. */
  cut?: { path: string; goodBytes: number; end: number; torn: Torn };
  /** A last segment that holds no entry, to delete. */
  dropEmpty?: string;
  /** The log starts afresh after the snapshot: this segment is created (emptied, if it is there), then `drop` are deleted. */
  restart?: SegmentRef;
  /** Segments the snapshot covers, deleted after `restart` exists. */
  drop?: SegmentRef[];
  /** Said in the log once the plan is applied. */
  warning?: { obj: Record<string, unknown>; msg: string };
  /** Attachments that the entries of the segments kept name (those after the snapshot must be there). */
  attachments?: NamedAttachment[];
}

/**
 * The plan for the segments found, given the snapshot's index and the index of a clean close recorded, if
 * any. Damage the snapshot does not make harmless is refused (LOG_DAMAGED) with what the operator can do.
 */
export function planRecovery(walDir: string, segments: SegmentRef[], snapIndex: number, closedAt?: number): Plan {
  try {
    return planSegments(walDir, segments, snapIndex);
  } catch (err) {
    if (!isLogDamaged(err)) throw err;
    let stale = '';
    if (snapIndex > 0 && closedAt === snapIndex) {
      // The record holds only while nothing contradicts it: a whole commit past its index was appended after
      // the close, which the next open removes the record before it allows (a record left or planted by hand).
      const past = Math.max(0, ...segments.map((s) => highestIntactIndex(s) ?? 0));
      if (past <= closedAt) return planAfterCleanClose(walDir, segments, snapIndex, err.message);
      stale = `; the record of a clean close at ${closedAt} (${join(dirname(walDir), 'snap', 'closed')}) does not hold: `
        + `the segments hold whole commits up to index ${past} past it, so what they lost was acknowledged`;
    }
    const choices = operatorChoices(walDir, snapIndex, (err as { choice?: string }).choice);
    throw damagedError(`${err.message}${stale}. ${choices[0]!.toUpperCase()}${choices.slice(1)}`);
  }
}

/** What an operator can do about a log refused as damaged; `choice`: one that this damage offers besides. */
export function operatorChoices(walDir: string, snapIndex: number, choice?: string): string {
  const also = choice === undefined ? '' : `; or ${choice}`;
  if (snapIndex === 0) return `restore the data dir from a backup${also}; or start on an empty data dir and restore a snapshot file saved earlier (roster snapshot restore)`;
  const empty = join(walDir, segmentName(snapIndex + 1));
  return `restore the data dir from a backup${also}; or start from the snapshot at ${snapIndex}, which holds the state up to that index `
    + `(what was acknowledged after it is lost): move the segments aside and start with an empty one, `
    + `mv ${walDir} ${walDir}.damaged && mkdir ${walDir} && touch ${empty}`;
}

/**
 * The log was closed cleanly at the snapshot's index: the snapshot holds every entry ever acknowledged,
 * whatever became of the segments. The log continues after it; every segment found goes.
 */
function planAfterCleanClose(walDir: string, segments: SegmentRef[], snapIndex: number, reason: string): Plan {
  const restart = { first: snapIndex + 1, path: join(walDir, segmentName(snapIndex + 1)) };
  return {
    recovered: { segments: [restart], last: snapIndex, lastAtMs: 0, activeBytes: 0, bytesPastSnapshot: 0 },
    restart,
    drop: segments.filter((s) => s.path !== restart.path),
    warning: {
      obj: { walDir, snapshot: snapIndex, reason },
      msg: 'WAL: the segments are damaged or missing, but the log was closed cleanly at the snapshot, which holds every acknowledged entry; the log continues after it',
    },
  };
}

function planSegments(walDir: string, segments: SegmentRef[], snapIndex: number): Plan {
  if (segments.length === 0) {
    // A brand-new log, or one whose snapshot is at 0. Segments vanishing behind a snapshot is damage.
    if (snapIndex > 0) throw damagedError(`${kind}: snapshot at ${snapIndex} but no segment in ${walDir}; refusing to open`);
    const first = { first: 1, path: join(walDir, segmentName(1)) };
    return { recovered: { segments: [first], last: 0, lastAtMs: 0, activeBytes: 0, bytesPastSnapshot: 0 }, restart: first };
  }
  const restarted = restartedAfterSnapshot(segments, snapIndex);
  if (restarted !== undefined) return restarted;
  const oldest = segments[0]!;
  if (oldest.first > snapIndex + 1) {
    throw damagedError(`${kind}: entries ${snapIndex + 1}..${oldest.first - 1} are missing: `
      + `the oldest segment ${oldest.path} starts at ${oldest.first}, the snapshot is at ${snapIndex}; refusing to open`);
  }
  let next = oldest.first;
  let lastAtMs = 0;
  const scans: Scan[] = [];
  for (const [k, seg] of segments.entries()) {
    if (seg.first !== next) throw damagedError(`${kind}: index gap at ${seg.path}: expected a segment starting at ${next}; refusing to open`);
    const scan = scanSegment(seg, k === segments.length - 1, snapIndex);
    scans.push(scan);
    next = scan.next;
    lastAtMs = scan.lastAtMs ?? lastAtMs;
  }
  const last = segments.at(-1)!;
  const tail = scans.at(-1)!.tail;
  if (tail?.kind === 'damaged') return planDamagedTail(walDir, segments, last, tail, next, snapIndex);
  if (next - 1 < snapIndex) throw damagedError(`${kind}: the log ends at ${next - 1}, before the snapshot at ${snapIndex}; refusing to open`);
  const end = judgeEnd(segments, scans, snapIndex);
  const bytesPastSnapshot = scans.reduce((sum, s) => sum + s.bytesAfter, 0);
  const plan: Plan = { recovered: { segments: [...segments], last: next - 1, lastAtMs, activeBytes: scans.at(-1)!.goodBytes, bytesPastSnapshot } };
  const attachments = scans.flatMap((s) => s.attachments ?? []);
  if (attachments.length > 0) plan.attachments = attachments;
  if (tail !== undefined) {
    const scan = scans.at(-1)!;
    plan.cut = { path: last.path, goodBytes: tail.offset, end: scan.size - scan.trailingZeros, torn: tail };
  }
  // A last segment that holds no entry beside one that still has its zeros: a crash during a roll, before
  // it sealed the older one. Appending to that one instead keeps the last entry, and with it atMs, in the
  // current segment, which compaction never deletes.
  if (end === 'drop-last') {
    plan.dropEmpty = plan.recovered.segments.pop()!.path;
    plan.recovered.activeBytes = scans.at(-2)!.goodBytes;
  }
  return plan;
}

/**
 * A complete last commit that fails its checksum was written whole, so it was most likely acknowledged:
 * refuse, naming file, offset and entries, unless the snapshot holds every entry still recognisable in
 * it (a shutdown snapshot at the last index). Then the log starts afresh after the snapshot: nothing
 * acknowledged is lost, and the damaged segment goes with the older ones the snapshot covers.
 */
function planDamagedTail(walDir: string, segments: SegmentRef[], last: SegmentRef, tail: Tail, next: number, snapIndex: number): Plan {
  const where = `${last.path} at offset ${tail.offset}`;
  const entries = tail.highest === undefined ? `entries from index ${next}` : `entries ${next}..${tail.highest} at least`;
  const covered = tail.highest !== undefined && tail.highest <= snapIndex;
  if (!covered) {
    const err = damagedError(`${kind}: corrupt commit frame in ${where}: ${tail.reason}; it is the last commit, `
      + `complete on disk, so it was acknowledged (${entries}); refusing to open, acknowledged entries would be lost`);
    throw Object.assign(err, {
      choice: `accept losing ${entries} by cutting ${last.path} to ${tail.offset} bytes with zeros after them: `
        + `truncate -s ${tail.offset} ${last.path} && truncate -s +1M ${last.path}`,
    });
  }
  const restart = { first: snapIndex + 1, path: join(walDir, segmentName(snapIndex + 1)) };
  return {
    recovered: { segments: [restart], last: snapIndex, lastAtMs: 0, activeBytes: 0, bytesPastSnapshot: 0 },
    restart,
    drop: segments,
    warning: {
      obj: { file: last.path, offset: tail.offset, firstIndex: next, lastIndexSeen: tail.highest, snapshot: snapIndex, reason: tail.reason },
      msg: 'WAL: the last commit is damaged but the snapshot holds all of it; the log continues after the snapshot',
    },
  };
}

/**
 * An empty newest segment starting right after the snapshot is where an earlier recovery restarted the
 * log (planDamagedTail) before it could delete the older segments: they are covered by the snapshot.
 */
function restartedAfterSnapshot(segments: SegmentRef[], snapIndex: number): Plan | undefined {
  const newest = segments.at(-1)!;
  if (snapIndex === 0 || segments.length < 2 || newest.first !== snapIndex + 1 || statSync(newest.path).size !== 0) return undefined;
  return { recovered: { segments: [newest], last: snapIndex, lastAtMs: 0, activeBytes: 0, bytesPastSnapshot: 0 }, drop: segments.slice(0, -1) };
}

export async function applyPlan(walDir: string, plan: Plan, logger: Logger): Promise<void> {
  if (plan.cut !== undefined) await cutTornTail(plan.cut, logger);
  if (plan.dropEmpty !== undefined) {
    await unlink(plan.dropEmpty);
    await syncDir(walDir);
  }
  if (plan.restart !== undefined) {
    // Created, or emptied when a segment of that name was left (only a clean close's restart finds one).
    const fh = await open(plan.restart.path, 'w');
    try {
      await fh.sync();
    } finally {
      await fh.close();
    }
    await syncDir(walDir);
  }
  if (plan.drop !== undefined && plan.drop.length > 0) {
    for (const seg of plan.drop) await unlink(seg.path);
    await syncDir(walDir);
  }
  if (plan.warning !== undefined) logger.warn(plan.warning.obj, plan.warning.msg);
}

/**
 * Cuts a torn commit by zeroing its bytes in place: the zeros the WAL keeps after the last commit stay, and
 * with them the evidence recovery reads (cut-evidence.ts), at every step, should a crash come meanwhile.
 */
async function cutTornTail(cut: NonNullable<Plan['cut']>, logger: Logger): Promise<void> {
  const fh = await open(cut.path, 'r+');
  try {
    await zeroFill(fh, cut.goodBytes, cut.end);
  } finally {
    await fh.close();
  }
  logger.warn({
    file: cut.path, offset: cut.goodBytes, droppedBytes: cut.torn.bytes, droppedEntries: cut.torn.entries, reason: cut.torn.reason,
  }, 'WAL: truncated a torn last commit left by a crash (never acknowledged)');
}

/** What the warning about a cut torn commit tells. */
type Torn = Pick<Tail, 'bytes' | 'entries' | 'reason'>;
