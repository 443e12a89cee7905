/**
 * Whether the end of the log was cut while the agent was stopped, judged at open() from what the WAL always
 * leaves on disk (preallocation.ts, segments.ts): the current segment holds at least `reserveBytesMin` zeros,
 * written and synced, past its last commit and past a commit being written; a roll makes the next segment,
 * zeros and name durable, before it seals the old one (cuts its zeros), and a segment takes a commit only
 * once the one before it is sealed. So a last segment with fewer zeros after its commits (a file cut at or
 * inside a commit), a sealed segment that is last (the one after it removed), or an empty last segment after
 * a sealed one (emptied), lost acknowledged commits. A commit torn by a crash lies inside the zeros and keeps
 * them after it. Whole commits overwritten with zeros in place read as unused space and are not told apart.
 */
import { damagedError } from '../ports/log-errors.ts';
import { kind, type SegmentRef } from './files.ts';
import { reserveBytesMin } from './preallocation.ts';
import type { Scan } from './scan.ts';

/** What the end of the log allows: the last segment kept, or dropped (a roll that a crash interrupted). */
export type End = 'keep' | 'drop-last';

/** How an operator gives a segment the zeros the WAL keeps (1 MiB, more than `reserveBytesMin`). */
const zerosCommand = (path: string): string => `truncate -s +1M ${path}`;

/**
 * Judges the segments' ends (`scans` in the order of `segments`); throws LOG_DAMAGED, with what the evidence is
 * and a `choice` for the operator, when they show the log cut short.
 */
export function judgeEnd(segments: SegmentRef[], scans: Scan[], snapIndex: number): End {
  const n = segments.length;
  const last = segments[n - 1]!;
  const scan = scans[n - 1]!;
  const empty = scan.goodBytes === 0 && scan.tail === undefined;
  for (let k = 0; k < n - 1; k++) {
    // Only the segment before an empty last one may still hold its zeros: a roll a crash cut short.
    if (scans[k]!.trailingZeros > 0 && !(k === n - 2 && empty)) throw unsealed(segments[k]!, scans[k]!, segments[k + 1]!);
  }
  if (empty) {
    if (n >= 2 && scans[n - 2]!.trailingZeros > 0) return 'drop-last';
    // A log restarted after the snapshot (by recovery, or by hand as a refusal says) starts with an empty segment.
    if (reserved(scan) || last.first === snapIndex + 1) return 'keep';
    throw emptied(last, scan, segments[n - 2]!);
  }
  if (!reserved(scan)) throw cutShort(last, scan);
  return 'keep';
}

/** Whether the last segment ends in the zeros the WAL keeps there, past a torn commit's whole frame too. */
function reserved(scan: Scan): boolean {
  const frameEnd = scan.tail?.frameEnd;
  return scan.trailingZeros >= reserveBytesMin && (frameEnd === undefined || scan.size - frameEnd >= reserveBytesMin);
}

const reserve = `${reserveBytesMin / 1024} KiB`;
const howItEnds = `the WAL writes and syncs at least ${reserve} of zeros past the end of a commit before it writes the commit, `
  + 'and seals a segment (cuts its zeros) only once the next one is on disk';

function cutShort(seg: SegmentRef, scan: Scan): Error {
  const tail = scan.tail;
  let where: string;
  if (tail !== undefined) {
    const frameEnd = tail.frameEnd;
    const after = frameEnd === undefined ? `with ${scan.trailingZeros} bytes of zeros after its bytes`
      : scan.size < frameEnd ? `before the end its header gives (offset ${frameEnd})` : `${scan.size - frameEnd} bytes after the end its header gives`;
    where = `ends inside a commit at offset ${tail.offset} (entries from index ${scan.next}), ${after}`;
  } else {
    where = scan.trailingZeros === 0
      ? `ends at offset ${scan.goodBytes}, right after its last commit (index ${scan.next - 1}), with no zeros after it`
      : `ends ${scan.trailingZeros} bytes of zeros after its last commit, which ends at offset ${scan.goodBytes} (index ${scan.next - 1})`;
  }
  const err = damagedError(`${kind}: the last segment ${seg.path} ${where}; ${howItEnds}: ${seg.path} was cut short, or a segment `
    + `after it removed, while the agent was stopped, and entries acknowledged after index ${scan.next - 1} may be lost; refusing to open`);
  return Object.assign(err, {
    choice: `accept losing them by cutting ${seg.path} back to its last whole commit with zeros after it: truncate -s ${scan.goodBytes} ${seg.path} && ${zerosCommand(seg.path)}`,
  });
}

function emptied(seg: SegmentRef, scan: Scan, before: SegmentRef): Error {
  const err = damagedError(`${kind}: the last segment ${seg.path} holds no commit and ${scan.size} bytes, fewer than the ${reserve} of zeros `
    + `a new segment is given, and synced, before the one before it is sealed; ${before.path} is sealed (it ends at its last commit), `
    + `so ${seg.path} was emptied or cut short while the agent was stopped, and the entries acknowledged in it, from index ${seg.first} on, `
    + 'are lost; refusing to open');
  return Object.assign(err, { choice: `accept losing them by giving ${seg.path} its zeros: ${zerosCommand(seg.path)}` });
}

function unsealed(seg: SegmentRef, scan: Scan, next: SegmentRef): Error {
  return damagedError(`${kind}: the segment ${seg.path} ends in ${scan.trailingZeros} bytes of zeros after its last commit `
    + `(offset ${scan.goodBytes}), though ${next.path} after it holds commits; a segment is sealed (its zeros cut) before the next one `
    + 'takes a commit, so the files were changed while the agent was stopped; refusing to open');
}
